//! The 15-body humanoid (`sim_host::humanoid`, `models/humanoid15.urdf`): the URDF read as
//! Cartwheel's Bip (15 bodies, 14 joints, 70.4 kg, the table's inertias as Rapier holds them);
//! collapsing without torques (a non-foot body touches, the events say so); standing on a
//! parent-space PD with the feet carrying m·g; a push in zero gravity against impulse/mass; the
//! torque check's refusals; frames that encode and decode; bitwise determinism; bad scenes and
//! bad URDFs refused by field and element; the real `sim-host` binary in lockstep.
#![allow(missing_docs)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use control_core::frames::{
    BodyId, Event, FrameGuard, MAX_FRAME_LEN, STATE_FRAME_LEN, StateFlags, StateFrame,
    TORQUE_FRAME_LEN, TorqueFrame, UNIT_QUATERNION_TOLERANCE,
};
use rapier3d::parry::glamx::glam::{DQuat, DVec3};
use sim_host::HostedPlant as _;
use sim_host::PlantScene;
use sim_host::Push;
use sim_host::humanoid::{
    BodyPose, HumanoidModel, HumanoidPlant, HumanoidScene, JointKind, per_axis_angles_rad,
};
use sim_host::scene::BallSpawn;
use sim_host::scene::SceneFile as _;
use transport::{FrameTransport, SeqPacket, TransportError};

const URDF: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/humanoid15.urdf");
const G: [f64; 3] = [0.0, -9.81, 0.0];
const MASS_KG: f64 = 70.4;

fn model() -> HumanoidModel {
    HumanoidModel::load(Path::new(URDF)).unwrap()
}

fn quat(q: [f64; 4]) -> DQuat {
    DQuat::from_xyzw(q[1], q[2], q[3], q[0])
}

fn v(a: [f64; 3]) -> DVec3 {
    DVec3::from_array(a)
}

/// The forward lean at the ankles, rad, that puts the standing body's centre of mass above its
/// ankles: the model's zero pose has it 1.6 cm behind them (Cartwheel's anchors).
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
        .map(|(b, p)| v(p.com_m) * b.mass_kg)
        .sum::<DVec3>()
        / model.total_mass_kg();
    let j = &model.joints[model.joint_index("left_ankle").unwrap()];
    let ankle = v(poses[j.parent].com_m) + v(j.anchor_in_parent_m);
    (ankle.x - com.x).atan2(com.y - ankle.y)
}

#[path = "support/stand_gains.rs"]
mod stand_gains;
use stand_gains::gains;

/// A parent-space PD towards the standing pose (every joint at zero, the ankles leaning the body
/// forward by `lean_rad`): for each joint, from the two bodies' quaternions and angular
/// velocities in the frame, τ = R_parent · (−kp ⊙ e − kd ⊙ ω_rel) with e the child's rotation
/// relative to the parent (axis-angle, parent axes); a hinge's torque projected on its axis, a
/// two-axis joint's on its two axes; clamped to the effort. No root torque.
fn stand(model: &HumanoidModel, lean_rad: f64, f: &StateFrame) -> Vec<f64> {
    let mut tau = vec![0.0; model.torque_len()];
    for (j, joint) in model.joints.iter().enumerate() {
        let (p, c) = (&f.bodies[joint.parent], &f.bodies[joint.child]);
        let qp = quat(p.orientation);
        let mut rel = qp.inverse() * quat(c.orientation);
        if rel.w < 0.0 {
            rel = -rel;
        }
        let mut e = rel.to_scaled_axis();
        if joint.name.ends_with("ankle") {
            e.z -= lean_rad;
        }
        let w = qp.inverse() * (v(c.angular_velocity_rad_s) - v(p.angular_velocity_rad_s));
        let (kp, kd) = gains(&joint.name);
        let mut local = -v(kp) * e - v(kd) * w;
        match joint.kind {
            JointKind::Hinge { axis, .. } => local = v(axis) * v(axis).dot(local),
            JointKind::TwoAxis { axes, .. } => {
                local = axes.iter().map(|&a| v(a) * v(a).dot(local)).sum();
            }
            JointKind::Ball { .. } => {}
        }
        let mut t = qp * local;
        if t.length() > joint.effort_nm {
            t *= joint.effort_nm * (1.0 - 1e-9) / t.length();
        }
        tau[3 * j..3 * j + 3].copy_from_slice(&t.to_array());
    }
    tau
}

fn whole_com(model: &HumanoidModel, f: &StateFrame) -> (DVec3, DVec3) {
    let m = model.total_mass_kg();
    let (mut x, mut p) = (DVec3::ZERO, DVec3::ZERO);
    for (b, body) in model.bodies.iter().zip(&f.bodies) {
        x += v(body.com_m) * b.mass_kg;
        p += v(body.velocity_m_s) * b.mass_kg;
    }
    (x / m, p / m)
}

fn normal_on_feet(f: &StateFrame) -> f64 {
    f.contacts
        .iter()
        .filter(|c| c.point == 0)
        .map(|c| c.force_n[1])
        .sum()
}

#[test]
fn the_urdf_reads_as_cartwheels_bip() {
    let m = model();
    assert_eq!((m.bodies.len(), m.joints.len()), (15, 14));
    assert_eq!(m.torque_len(), 45);
    assert!(
        (m.total_mass_kg() - MASS_KG).abs() < 1e-9,
        "{}",
        m.total_mass_kg()
    );
    let names: Vec<&str> = m.bodies.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "pelvis",
            "torso",
            "head",
            "left_upper_arm",
            "left_lower_arm",
            "right_upper_arm",
            "right_lower_arm",
            "left_upper_leg",
            "left_lower_leg",
            "left_foot",
            "left_toes",
            "right_upper_leg",
            "right_lower_leg",
            "right_foot",
            "right_toes"
        ]
    );
    assert_eq!(m.ground_contact_bodies, [9, 13, 10, 14]);
    // Joint i moves body i + 1; kinds as Cartwheel's.
    for (i, j) in m.joints.iter().enumerate() {
        assert_eq!(j.child, i + 1, "{}", j.name);
        let kind = match j.kind {
            JointKind::Ball { .. } => "ball",
            JointKind::Hinge { .. } => "hinge",
            JointKind::TwoAxis { .. } => "two-axis",
        };
        let want = match j.name.as_str() {
            n if n.ends_with("elbow") || n.ends_with("knee") || n.ends_with("toe") => "hinge",
            n if n.ends_with("ankle") => "two-axis",
            _ => "ball",
        };
        assert_eq!(kind, want, "{}", j.name);
    }
    let hip = &m.joints[m.joint_index("left_hip").unwrap()];
    assert_eq!(
        hip.kind,
        JointKind::Ball {
            limits_rad: [[-1.0, 1.0], [-0.25, 1.0], [-1.9, 1.3]]
        }
    );
    assert_eq!((hip.parent, hip.effort_nm), (0, 400.0));
    assert_eq!(hip.anchor_in_parent_m, [0.0, -0.05, -0.1]);
    assert_eq!(hip.anchor_in_child_m, [0.0, 0.21, 0.0]);
    let ankle = &m.joints[m.joint_index("right_ankle").unwrap()];
    assert_eq!(
        ankle.kind,
        JointKind::TwoAxis {
            axes: [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]],
            limits_rad: [[-0.75, 0.75], [-0.75, 0.75]]
        }
    );
    let knee = &m.joints[m.joint_index("left_knee").unwrap()];
    assert_eq!(
        knee.kind,
        JointKind::Hinge {
            axis: [0.0, 0.0, 1.0],
            limits_rad: [-2.5, 0.0]
        }
    );

    // Cartwheel's moments (its x, y, z: left, up, forward) are (z, y, x) here; Rapier holds
    // them (and the masses) as f32 inverses.
    let table: [(f64, [f64; 3]); 9] = [
        (12.9, [0.0705, 0.11, 0.13]),
        (22.5, [0.34, 0.21, 0.46]),
        (5.2, [0.04, 0.02, 0.042]),
        (2.2, [0.005, 0.02, 0.02]),
        (1.7, [0.0024, 0.025, 0.025]),
        (6.6, [0.15, 0.022, 0.15]),
        (3.2, [0.055, 0.007, 0.055]),
        (1.0, [0.007, 0.008, 0.002]),
        (0.2, [0.002, 0.002, 0.0005]),
    ];
    let row = [0, 1, 2, 3, 4, 3, 4, 5, 6, 7, 8, 5, 6, 7, 8];
    let plant = HumanoidPlant::new(&HumanoidScene::new(URDF, 1.0, G)).unwrap();
    let held = plant.mass_properties();
    let mut total = 0.0;
    for (b, (mass, inertia)) in held.iter().enumerate() {
        let (want_m, [ix, iy, iz]) = table[row[b]];
        let want_i = [iz, iy, ix];
        assert_eq!(m.bodies[b].mass_kg, want_m);
        assert_eq!(m.bodies[b].inertia_kg_m2, want_i);
        assert!((mass / want_m - 1.0).abs() < 1e-6, "{b}: {mass}");
        for k in 0..3 {
            assert!(
                (inertia[k] / want_i[k] - 1.0).abs() < 1e-6,
                "{b}: {inertia:?}"
            );
        }
        total += mass;
    }
    assert!((total - MASS_KG).abs() < 1e-4, "{total}");

    // Standing: the soles on the ground, the pelvis's centre of mass at 1.033 m, every
    // orientation the identity, the joints' two anchors at the same world point.
    let f = plant.state_frame();
    assert!(
        (f.bodies[0].com_m[1] - 1.033).abs() < 1e-6,
        "{:?}",
        f.bodies[0]
    );
    let up = BodyPose {
        com_m: f.bodies[0].com_m,
        orientation: [1.0, 0.0, 0.0, 0.0],
    };
    assert!(m.lowest_point_m(&m.pose(up, &[])).abs() < 1e-7);
    for b in &f.bodies {
        assert_eq!(b.orientation, [1.0, 0.0, 0.0, 0.0]);
    }
    for j in &m.joints {
        let (p, c) = (&f.bodies[j.parent], &f.bodies[j.child]);
        let gap = (v(p.com_m) + v(j.anchor_in_parent_m)) - (v(c.com_m) + v(j.anchor_in_child_m));
        assert!(gap.length() < 1e-6, "{}: {gap}", j.name);
    }
}

/// Without torques the body collapses: a body other than the feet and toes touches the ground
/// within 1.5 s, and the events follow every non-foot body's contact with the ground exactly
/// (the frame's events replayed give the plant's touching set).
#[test]
fn with_zero_torques_it_collapses_and_the_events_say_so() {
    let mut plant = HumanoidPlant::new(&HumanoidScene::new(URDF, 3.0, G)).unwrap();
    let m = plant.model().clone();
    let mut touching = [false; 15];
    let mut first_fall = None;
    for _ in 0..600 {
        let f = plant.step(&[]).unwrap();
        assert!(f.events.len() <= 8);
        for e in &f.events {
            let (body, now) = match *e {
                Event::ContactBegan { body } => (body, true),
                Event::ContactEnded { body } => (body, false),
                other => panic!("{other:?}"),
            };
            let b = usize::from(body.0);
            assert!(!m.ground_contact_bodies.contains(&b), "{e:?}");
            assert_ne!(touching[b], now, "{e:?} at step {}", f.step);
            touching[b] = now;
            if now && first_fall.is_none() {
                first_fall = Some((f.sim_time_s, m.bodies[b].name.clone()));
            }
        }
        if f.events.len() < 8 {
            for (b, t) in touching.iter().enumerate() {
                if !m.ground_contact_bodies.contains(&b) {
                    assert_eq!(*t, plant.ground_forces_n()[b][1] > 0.0, "body {b}");
                }
            }
        }
    }
    let (t, body) = first_fall.expect("a non-foot body touched the ground");
    println!("first non-foot contact: {body} at {t} s");
    assert!(t < 1.5, "{t}");
    assert_eq!(plant.quarantined_bodies(), 0);
    assert_eq!(plant.events_left_out(), 0);
}

/// On the parent-space PD (`stand`) the humanoid stays up 4 s at dt 5 ms: no event, the pelvis
/// above 1 m and within 5 cm of where it started; after the first 1.5 s (the body settling onto
/// its joints and swaying onto the lean, ±6 % at 0.2 s) the ground's normal force on the feet
/// and toes is m·g within 2 % at every step.
#[test]
fn it_stands_on_a_parent_space_pd_with_the_feet_carrying_its_weight() {
    let mut plant = HumanoidPlant::new(&HumanoidScene::new(URDF, 4.0, G)).unwrap();
    let m = plant.model().clone();
    let lean = ankle_lean_rad(&m);
    println!("ankle lean {lean:.4} rad");
    let weight = MASS_KG * 9.81;
    let mut f = plant.state_frame();
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    let mut costs = Vec::new();
    while !plant.clock().is_finished() {
        f = plant.step(&stand(&m, lean, &f)).unwrap();
        costs.push(plant.clock().last_step_cost_ns());
        assert!(f.events.is_empty(), "t {}: {:?}", f.sim_time_s, f.events);
        assert!(
            f.bodies[0].com_m[1] > 1.0,
            "t {}: {:?}",
            f.sim_time_s,
            f.bodies[0]
        );
        assert!(f.bodies[0].com_m[0].abs() < 0.05, "{:?}", f.bodies[0]);
        if f.sim_time_s >= 1.5 {
            let ratio = normal_on_feet(&f) / weight;
            lo = lo.min(ratio);
            hi = hi.max(ratio);
        }
    }
    costs.sort_unstable();
    println!(
        "feet carry {lo:.4}..{hi:.4} m·g; step cost median {} ns, p99 {} ns",
        costs[costs.len() / 2],
        costs[costs.len() * 99 / 100]
    );
    assert!(lo > 0.98 && hi < 1.02, "{lo}..{hi}");
    assert_eq!(f.step, 800);
    assert_eq!(plant.quarantined_bodies(), 0);
}

/// In zero gravity a push on the torso of F for T changes the whole body's momentum by F·T
/// (none of it reaches the ground: the push lifts the body off it).
#[test]
fn a_push_moves_the_com_by_impulse_over_mass_in_zero_gravity() {
    let force = [150.0, 700.0, -100.0];
    let mut scene = HumanoidScene::new(URDF, 1.0, [0.0; 3]);
    scene.pushes.push(Push {
        body: String::from("torso"),
        force_n: force,
        start_s: 0.05,
        duration_s: 0.1,
    });
    let mut plant = HumanoidPlant::new(&scene).unwrap();
    let m = plant.model().clone();
    let mut frames = vec![plant.state_frame()];
    while !plant.clock().is_finished() {
        let f = plant.step(&[]).unwrap();
        assert!(f.contacts.iter().all(|c| c.force_n == [0.0; 3]), "{f:?}");
        frames.push(f);
    }
    let (_, v0) = whole_com(&m, &frames[10]);
    assert!(v0.length() < 1e-9, "{v0}");
    let want = v(force) * 0.1 / MASS_KG;
    let (x1, v1) = whole_com(&m, &frames[100]);
    let (x2, v2) = whole_com(&m, &frames[200]);
    println!("COM velocity {v1} (impulse/mass {want})");
    assert!(
        (v1 - want).length() < 1e-3 * want.length(),
        "{v1} vs {want}"
    );
    assert!((v2 - v1).length() < 1e-3 * want.length(), "{v2} vs {v1}");
    // Moving at that velocity: 0.5 s later it has moved by 0.5·v.
    assert!(
        ((x2 - x1) - want * 0.5).length() < 2e-3 * want.length(),
        "{}",
        x2 - x1
    );
}

/// A ball thrown at the torso in zero gravity: its touch is an event with its id (never a
/// ground contact), and the humanoid takes the ball's momentum, all of it or more (no
/// restitution: about m v M / (M + m)); ids that name a body or repeat are refused.
#[test]
fn a_ball_thrown_at_the_torso_is_an_event_and_gives_its_momentum() {
    let mut scene = HumanoidScene::new(URDF, 1.0, [0.0; 3]);
    let plant = HumanoidPlant::new(&scene).unwrap();
    let torso = plant.model().body_index("torso").unwrap();
    let at = plant.state_frame().bodies[torso].com_m;
    let (m, speed) = (1.0, 5.0);
    scene.balls.push(BallSpawn {
        id: 100,
        spawn_time_s: 0.05,
        position_m: [at[0] - 1.0, at[1], at[2]],
        velocity_m_s: [speed, 0.0, 0.0],
        radius_m: 0.06,
        mass_kg: m,
    });
    let mut plant = HumanoidPlant::new(&scene).unwrap();
    let model = plant.model().clone();
    let (mut began, mut frames) = (None, vec![plant.state_frame()]);
    while !plant.clock().is_finished() {
        let f = plant.step(&[]).unwrap();
        for e in &f.events {
            if let Event::ContactBegan { body } = e {
                assert_eq!(body.0, 100, "only the ball touches: {e:?}");
                began.get_or_insert(f.sim_time_s);
            }
        }
        frames.push(f);
    }
    let began = began.expect("the ball touched the humanoid");
    // It flies 1 m less the torso's and its own radius at 5 m/s.
    assert!((0.15..0.3).contains(&began), "touched at {began} s");
    let (_, v1) = whole_com(&model, frames.last().unwrap());
    let p = v1.x * MASS_KG;
    println!("momentum taken {p} of {}", m * speed);
    assert!(
        p > 0.9 * m * speed && p <= 2.0 * m * speed,
        "{p} of {}",
        m * speed
    );
    // Refused: an id that names a body, an id twice.
    let mut bad = scene.clone();
    bad.balls[0].id = 3;
    assert_eq!(bad.validate().unwrap_err().0, "balls[0].id");
    let mut twice = scene.clone();
    twice.balls.push(twice.balls[0]);
    assert_eq!(twice.validate().unwrap_err().0, "balls[1].id");
}

#[test]
fn the_torque_check_refuses_each_bad_case() {
    let mut scene = HumanoidScene::new(URDF, 1.0, G);
    scene.root_torque_limit_nm = 500.0;
    let mut plant = HumanoidPlant::new(&scene).unwrap();
    let with = |i: usize, value: f64| {
        let mut t = vec![0.0; 45];
        t[i] = value;
        t
    };
    let ok = |t: &[f64]| plant.check_torque_slice(t);
    // Accepted: nothing, fewer values, zeros up to the frame's capacity, a norm of exactly the
    // effort, a root torque of exactly the limit in the horizontal plane, a vertical part within
    // the tolerance.
    assert_eq!(ok(&[]), Ok(()));
    assert_eq!(ok(&[100.0, -50.0, 30.0]), Ok(()));
    assert_eq!(ok(&[0.0; 48]), Ok(()));
    assert_eq!(ok(&with(0, 400.0)), Ok(()));
    assert_eq!(ok(&[0.0, 240.0, 320.0]), Ok(())); // norm 400
    let mut root = vec![0.0; 45];
    root[42..45].copy_from_slice(&[300.0, 0.0, -400.0]); // norm 500
    assert_eq!(ok(&root), Ok(()));
    root[43] = 4e-7; // within 1e-9·500
    assert_eq!(ok(&root), Ok(()));

    // Refused, naming the value.
    let nan = ok(&with(7, f64::NAN)).unwrap_err();
    assert!(nan.0 == 7 && nan.1.is_nan());
    assert_eq!(ok(&with(44, f64::INFINITY)), Err((44, f64::INFINITY)));
    assert_eq!(
        ok(&[0.0, 0.0, 0.0, 0.0, 0.0, f64::NEG_INFINITY]),
        Err((5, f64::NEG_INFINITY))
    );
    // The waist's norm 403 > 400, each part within it: refused at its largest part.
    assert_eq!(ok(&[200.0, -350.0, 0.0]), Err((1, -350.0)));
    assert_eq!(ok(&with(0, 400.0 + 1e-9)), Err((0, 400.0 + 1e-9)));
    // The left knee (joint 7, values 21..24): effort 400.
    assert_eq!(ok(&with(23, -401.0)), Err((23, -401.0)));
    // The root: beyond the limit, or vertical.
    root[43] = 0.0;
    root[44] = -401.0; // norm 500.6
    assert_eq!(ok(&root), Err((44, -401.0)));
    assert_eq!(ok(&with(43, 1e-3)), Err((43, 1e-3)));
    let mut tilted = vec![0.0; 45];
    tilted[42..45].copy_from_slice(&[100.0, 1e-6, 0.0]);
    assert_eq!(ok(&tilted), Err((43, 1e-6)));
    // Beyond the 45 values.
    assert_eq!(
        ok(&with(0, 0.0)
            .into_iter()
            .chain([0.0, 2.0])
            .collect::<Vec<_>>()),
        Err((46, 2.0))
    );
    // A scene without a root torque limit accepts none.
    let strict = HumanoidPlant::new(&HumanoidScene::new(URDF, 1.0, G)).unwrap();
    assert_eq!(strict.check_torque_slice(&with(42, 1e-6)), Err((42, 1e-6)));

    // `step` refuses the whole step and leaves the plant as it was.
    let before = plant.state_frame();
    let e = plant.step(&with(0, 1e4)).unwrap_err();
    assert_eq!((e.index, e.value_nm), (0, 1e4));
    assert!(e.to_string().contains("waist"), "{e}");
    assert_eq!(plant.clock().step_index(), 0);
    assert_eq!(plant.state_frame(), before);
    // `step_driven_by` names the frame it applied; a refused one steps on zero torques and
    // names none.
    let f = plant.step_driven_by(&[10.0, 0.0, 0.0], 0x1_0000_0007);
    assert_eq!((f.step, f.applied_torque_sequence), (1, 7));
    let f = plant.step_driven_by(&with(43, 5.0), 8);
    assert_eq!((f.step, f.applied_torque_sequence), (2, 0));
}

/// State frames encode and decode whole while the body moves (every orientation a unit
/// quaternion within the wire's tolerance), carry 15 bodies, the four ground forces in their
/// order and no joints; a full torque frame (45 values) encodes and decodes.
#[test]
fn frames_encode_and_decode() {
    let mut scene = HumanoidScene::new(URDF, 1.0, G);
    scene
        .initial_joint_rotations_rad
        .insert(String::from("left_shoulder"), [-1.2, 0.3, 0.2]);
    scene
        .initial_joint_rotations_rad
        .insert(String::from("right_knee"), [0.0, 0.0, -0.4]);
    let mut plant = HumanoidPlant::new(&scene).unwrap();
    let m = plant.model().clone();
    let mut buf = [0u8; STATE_FRAME_LEN];
    let mut f = plant.state_frame();
    let start = quat(f.bodies[3].orientation);
    let want = DQuat::from_scaled_axis(DVec3::new(-1.2, 0.3, 0.2));
    assert!((start - want).length() < 1e-6, "{start} vs {want}");
    let knee = per_axis_angles_rad(f.bodies[12].orientation);
    assert!(
        (knee[2] + 0.4).abs() < 1e-6 && knee[0].abs() < 1e-7,
        "{knee:?}"
    );
    let mut worst: f64 = 0.0;
    for k in 0..100u64 {
        let tau = stand(&m, 0.0, &f);
        f = plant.step_driven_by(&tau, k + 1);
        let n = f.encode(&mut buf).unwrap();
        assert_eq!(n, STATE_FRAME_LEN);
        assert_eq!(StateFrame::decode(&buf).unwrap(), f);
        assert!(f.joints.is_empty());
        assert_eq!(f.bodies.len(), 15);
        let ids: Vec<(BodyId, u8)> = f.contacts.iter().map(|c| (c.body, c.point)).collect();
        let mut expected = vec![
            (BodyId(9), 0),
            (BodyId(13), 0),
            (BodyId(10), 0),
            (BodyId(14), 0),
        ];
        for foot in [9, 13] {
            expected.extend((1..=4).map(|p| (BodyId(foot), p)));
        }
        assert_eq!(ids, expected);
        // The corners are the foot's force, split: their sum is the whole (to the f32 rounding
        // of the plant's own sum).
        for foot in 0..2 {
            let whole = f.contacts[foot].force_n;
            let mut sum = [0.0; 3];
            for c in &f.contacts[4 + 4 * foot..8 + 4 * foot] {
                for (s, x) in sum.iter_mut().zip(c.force_n) {
                    *s += x;
                }
            }
            for (s, w) in sum.iter().zip(whole) {
                assert!((s - w).abs() <= 1e-6 * (1.0 + w.abs()), "{sum:?} {whole:?}");
            }
        }
        for b in &f.bodies {
            worst = worst.max((quat(b.orientation).length() - 1.0).abs());
        }
        let mut t = TorqueFrame::new(k + 1, k);
        for &x in &tau {
            t.push_torque(x).unwrap();
        }
        let mut tb = [0u8; TORQUE_FRAME_LEN];
        t.encode(&mut tb).unwrap();
        assert_eq!(TorqueFrame::decode(&tb).unwrap().torques_nm.len(), 45);
    }
    println!("largest |‖q‖ − 1|: {worst:e}");
    assert!(worst < UNIT_QUATERNION_TOLERANCE / 10.0, "{worst}");
}

#[test]
fn two_runs_are_bit_identical() {
    let mut scene = HumanoidScene::new(URDF, 1.0, G);
    scene.pushes.push(Push {
        body: String::from("torso"),
        force_n: [120.0, 0.0, 40.0],
        start_s: 0.3,
        duration_s: 0.1,
    });
    let run = || {
        let mut plant = HumanoidPlant::new(&scene).unwrap();
        let m = plant.model().clone();
        let lean = ankle_lean_rad(&m);
        let mut f = plant.state_frame();
        let mut out = Vec::new();
        while !plant.clock().is_finished() {
            f = plant.step(&stand(&m, lean, &f)).unwrap();
            f.step_cost_ns = 0;
            let mut buf = [0u8; STATE_FRAME_LEN];
            f.encode(&mut buf).unwrap();
            out.push(buf);
        }
        out
    };
    let (a, b) = (run(), run());
    assert_eq!(a.len(), 200);
    assert!(a == b, "the runs differ");
}

#[test]
fn bad_scenes_are_refused_by_field() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let f = dir.join("h.json");
    let urdf = r#""urdf": "../../models/humanoid15.urdf""#;
    let min =
        format!(r#""kind": "humanoid", {urdf}, "end_time_s": 1, "gravity_m_s2": [0, -9.81, 0]"#);
    // A scene of this kind, its URDF resolved against the scene file's folder.
    let Ok(PlantScene::Humanoid(s)) = PlantScene::from_json_str(&format!("{{{min}}}"), &f) else {
        panic!("not a humanoid scene");
    };
    assert_eq!(s.urdf, dir.join("../../models/humanoid15.urdf"));
    assert_eq!(s.total_steps(), 200);
    HumanoidPlant::new(&s).unwrap();

    // Refused when read.
    let cases: &[(&str, &str)] = &[
        (r#", "dt_s": 0"#, "dt_s"),
        (r#", "initial_pose": "sitting""#, "initial_pose"),
        (
            r#", "initial_joint_rotations_rad": {"left_hip": [0, 0, 4]}"#,
            "initial_joint_rotations_rad.left_hip[2]",
        ),
        (
            r#", "initial_joint_rotations_rad": {"left_hip": [3, 3, 0]}"#,
            "initial_joint_rotations_rad.left_hip",
        ),
        (
            r#", "initial_joint_rotations_rad": {"left_hip": [0, 0]}"#,
            "initial_joint_rotations_rad.left_hip",
        ),
        (
            r#", "pushes": [{"body": "torso", "force_n": [0, 2e5, 0], "start_s": 0, "duration_s": 1}]"#,
            "pushes[0].force_n[1]",
        ),
        (
            r#", "pushes": [{"body": "torso", "force_n": [0, 0, 0], "start_s": -1, "duration_s": 1}]"#,
            "pushes[0].start_s",
        ),
        (r#", "root_torque_limit_nm": -1"#, "root_torque_limit_nm"),
        (r#", "gravity": 1"#, "gravity"),
    ];
    for (extra, field) in cases {
        let e = HumanoidScene::from_json_str(&format!("{{{min}{extra}}}"), &f).unwrap_err();
        assert_eq!(e.field, *field, "{extra}: {e}");
    }
    let e = HumanoidScene::from_json_str(&format!("{{{}}}", min.replace("-9.81", "-1e4")), &f)
        .unwrap_err();
    assert_eq!(e.field, "gravity_m_s2[1]", "{e}");
    let e = HumanoidScene::from_json_str(&format!("{{{min}, \"gravity\": 1}}"), &f).unwrap_err();
    assert!(e.reason.contains("unknown field `gravity`"), "{e}");
    let e = HumanoidScene::from_json_str(
        r#"{"kind": "humanoid", "end_time_s": 1, "gravity_m_s2": [0, -9.81, 0]}"#,
        &f,
    )
    .unwrap_err();
    assert!(e.reason.contains("missing field `urdf`"), "{e}");

    // Refused by the plant, which knows the joints and bodies.
    let plant_cases: &[(&str, &str, &str)] = &[
        (
            r#", "initial_joint_rotations_rad": {"left_knee": [0, 0, 0.3]}"#,
            "initial_joint_rotations_rad.left_knee",
            "beyond",
        ),
        (
            r#", "initial_joint_rotations_rad": {"left_knee": [0.3, 0, 0]}"#,
            "initial_joint_rotations_rad.left_knee",
            "along that axis",
        ),
        (
            r#", "initial_joint_rotations_rad": {"right_ankle": [0, 0.1, 0]}"#,
            "initial_joint_rotations_rad.right_ankle",
            "locked",
        ),
        (
            r#", "initial_joint_rotations_rad": {"left_hip": [0, 0, 1.5]}"#,
            "initial_joint_rotations_rad.left_hip",
            "beyond",
        ),
        (
            r#", "initial_joint_rotations_rad": {"nose": [0, 0, 0]}"#,
            "initial_joint_rotations_rad.nose",
            "no joint `nose`",
        ),
        (
            r#", "pushes": [{"body": "tail", "force_n": [0, 0, 0], "start_s": 0, "duration_s": 1}]"#,
            "pushes[0].body",
            "no body `tail`",
        ),
    ];
    for (extra, field, reason) in plant_cases {
        let s = HumanoidScene::from_json_str(&format!("{{{min}{extra}}}"), &f).unwrap();
        let e = HumanoidPlant::new(&s).unwrap_err();
        assert_eq!(e.field, *field, "{extra}: {e}");
        assert!(e.reason.contains(reason), "{extra}: {e}");
    }
    let s = HumanoidScene::new("/nonexistent/h.urdf", 1.0, G);
    let e = HumanoidPlant::new(&s).unwrap_err();
    assert_eq!(e.field, "urdf");
    assert!(e.reason.contains("/nonexistent/h.urdf"), "{e}");
}

/// Each broken description is refused naming its element.
#[test]
fn bad_urdfs_are_refused_naming_the_element() {
    let text = std::fs::read_to_string(URDF).unwrap();
    let file = Path::new("h.urdf");
    let refuse = |from: &str, to: &str| {
        assert!(text.contains(from), "{from}");
        HumanoidModel::from_urdf_str(&text.replacen(from, to, 1), file).unwrap_err()
    };
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            r#"<joint name="left_knee" type="revolute">"#,
            r#"<joint name="left_knee" type="prismatic">"#,
            r#"joint "left_knee""#,
            "Prismatic",
        ),
        (
            r#"lower_xyz="-1 -0.25 -1.9" "#,
            "",
            r#"joint "left_hip" <limit>"#,
            "lower_xyz",
        ),
        (
            r#"lower_xyz="-0.75 0 -0.75" upper_xyz="0.75 0 0.75""#,
            r#"lower_xyz="0 0 -0.75" upper_xyz="0 0 0.75""#,
            r#"joint "left_ankle" <limit>"#,
            "more than one axis locked",
        ),
        (
            r#"lower_xyz="-0.6 -0.6 -0.6" upper_xyz="0.6 0.6 0.6""#,
            r#"lower_xyz="-0.6 -0.6 0.7" upper_xyz="0.6 0.6 0.6""#,
            r#"joint "waist" <limit>"#,
            "axis z",
        ),
        (
            r#"<origin xyz="0.01 0.33 0"/>"#,
            r#"<origin xyz="0.01 0.33 0" rpy="0 0 0.1"/>"#,
            r#"joint "neck" <origin>"#,
            "rpy must be 0",
        ),
        (
            r#"<inertia ixx="0.46" ixy="0""#,
            r#"<inertia ixx="0.46" ixy="0.01""#,
            r#"link "torso" <inertia>"#,
            "ixy, ixz, iyz must be 0",
        ),
        (
            r#"<mass value="5.2"/>"#,
            r#"<mass value="0"/>"#,
            r#"link "head" <inertial>"#,
            "mass",
        ),
        (
            r#"<limit effort="100" velocity="100" lower="-2.7" upper="0"/>"#,
            r#"<limit effort="0" velocity="100" lower="-2.7" upper="0"/>"#,
            r#"joint "left_elbow" <limit>"#,
            "effort",
        ),
        (
            r#"<child link="left_toes"/>"#,
            r#"<child link="left_toe"/>"#,
            r#"joint "left_toe""#,
            "does not have",
        ),
    ];
    for (from, to, element, reason) in cases {
        let e = refuse(from, to);
        assert_eq!(e.element, *element, "{from} -> {to}: {e}");
        assert!(e.reason.contains(reason), "{from} -> {to}: {e}");
        assert!(e.to_string().starts_with("h.urdf: "), "{e}");
    }
    // Renaming the left toes (link and joint child) leaves the plant without one of its four
    // ground-force bodies.
    let renamed = text
        .replace(r#"<link name="left_toes">"#, r#"<link name="left_digits">"#)
        .replace(
            r#"<child link="left_toes"/>"#,
            r#"<child link="left_digits"/>"#,
        );
    let e = HumanoidModel::from_urdf_str(&renamed, file).unwrap_err();
    assert!(e.reason.contains("left_toes"), "{e}");
    // The root must come first.
    let pelvis_at = text.find(r#"  <link name="pelvis">"#).unwrap();
    let torso_at = text.find(r#"  <link name="torso">"#).unwrap();
    let moved = format!(
        "{}{}{}",
        &text[..pelvis_at],
        &text[torso_at..],
        &text[pelvis_at..torso_at]
    );
    let e = HumanoidModel::from_urdf_str(&moved, file).unwrap_err();
    assert_eq!(e.element, r#"joint "waist""#, "{e}");
    let e = HumanoidModel::load(Path::new("/nonexistent.urdf")).unwrap_err();
    assert_eq!(e.element, "");
}

fn scene_file(name: &str, scene: &HumanoidScene) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sim-host-humanoid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(scene).unwrap()).unwrap();
    path
}

/// The `sim-host` binary runs a humanoid scene in lockstep: its states are the in-process
/// plant's bit for bit under the PD, and a torque frame with a vertical root torque is refused,
/// counted, and its step runs on the held torques.
#[test]
fn the_binary_hosts_the_humanoid_in_lockstep() {
    let mut scene = HumanoidScene::new(URDF, 0.5, G);
    scene.root_torque_limit_nm = 100.0;
    let path = scene_file("lockstep.json", &scene);
    let (ours, theirs) = SeqPacket::pair().unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_sim-host"));
    let fd = theirs.inherit_into(&mut cmd);
    cmd.arg("--scene")
        .arg(&path)
        .args(["--fd", &fd.to_string(), "--mode", "lockstep"])
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    drop(theirs);

    let mut reference = HumanoidPlant::new(&scene).unwrap();
    let m = reference.model().clone();
    let lean = ankle_lean_rad(&m);
    let mut expected = reference.state_frame();
    let mut guard = FrameGuard::new();
    let mut buf = [0u8; MAX_FRAME_LEN];
    let mut held = vec![0.0; 45];
    let mut held_seq = 0u64;
    loop {
        let n = ours
            .recv_timeout(&mut buf, Duration::from_secs(10))
            .unwrap();
        let got: StateFrame = guard.accept(&buf[..n]).unwrap();
        assert_eq!(got.step, expected.step);
        assert_eq!(got.bodies, expected.bodies, "step {}", got.step);
        assert_eq!(got.contacts, expected.contacts);
        assert_eq!(u64::from(got.applied_torque_sequence), held_seq);
        let refused = u32::from(got.step > 10);
        assert_eq!(got.plant_over_limit_frames, refused, "step {}", got.step);
        if got.flags.contains(StateFlags::FINAL) {
            assert_eq!(got.step, 100);
            break;
        }
        let mut tau = stand(&m, lean, &got);
        if got.step == 10 {
            tau[43] = 1.0; // a vertical root torque: refused
        }
        let seq = got.step + 1;
        let mut t = TorqueFrame::new(seq, got.step);
        for &x in &tau {
            t.push_torque(x).unwrap();
        }
        let mut tb = [0u8; TORQUE_FRAME_LEN];
        t.encode(&mut tb).unwrap();
        ours.send(&tb).unwrap();
        if got.step != 10 {
            held = tau;
            held_seq = seq;
        }
        expected = reference.step_driven_by(&held, held_seq);
    }
    let mut b = [0u8; 8];
    assert!(matches!(
        ours.recv_timeout(&mut b, Duration::from_secs(10)),
        Err(TransportError::PeerClosed)
    ));
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("end of scene after 100 steps"), "{stderr}");
    assert!(stderr.contains("over the torque limit 1"), "{stderr}");
}
