//! The SIMBICON planar biped plant (`sim_host::biped`): exact masses and inertias, standing on
//! PD holding torques and falling without them, ground forces at rest against m·g, the joint
//! readout against the bodies' geometry, pushes, bitwise determinism, the torque limit, and
//! scene refusals named by field.
#![allow(missing_docs)]

use std::path::Path;

use sim_host::HostedPlant as _;
use sim_host::scene::SceneFile as _;

use sim_host::biped::{
    BODIES, BipedPlant, BipedScene, BipedState, INERTIAS_KG_M2, JOINTS, MASSES_KG, TORQUE_LIMIT_NM,
    TorsoPush,
};

const G: [f64; 2] = [0.0, -9.81];
const KP: f64 = 300.0;
const KD: f64 = 30.0;

/// SIMBICON's gains towards the standing pose: knees and ankles by joint PDs, the torso held
/// upright in the world by the two (stance) hips, each taking half of the torso's virtual PD
/// torque (the hip's reaction on the torso is −τ_hip).
fn stand(s: &BipedState) -> [f64; JOINTS] {
    let tau_torso = KP * (0.0 - s.root.pitch_rad) - KD * s.root.angular_velocity_rad_s;
    let mut tau = [0.0; JOINTS];
    for (j, t) in tau.iter_mut().enumerate() {
        *t = if j % 3 == 0 {
            -tau_torso / 2.0
        } else {
            KP * (0.0 - s.joints[j].angle_rad) - KD * s.joints[j].rate_rad_s
        };
    }
    tau.map(|t| t.clamp(-TORQUE_LIMIT_NM, TORQUE_LIMIT_NM))
}

fn run(
    scene: &BipedScene,
    steps: usize,
    control: impl Fn(usize, &BipedState) -> [f64; JOINTS],
) -> Vec<BipedState> {
    let mut p = BipedPlant::new(scene).unwrap();
    let mut out = vec![*p.state()];
    for k in 0..steps {
        let tau = control(k, out.last().unwrap());
        out.push(p.step(&tau).unwrap());
    }
    out
}

#[test]
fn masses_and_inertias_are_simbicons() {
    let p = BipedPlant::new(&BipedScene::new(1.0, G)).unwrap();
    for (b, (m, i)) in p.mass_properties().into_iter().enumerate() {
        println!("body {b}: mass {m} kg, inertia {i} kg·m²");
        assert!((m / MASSES_KG[b] - 1.0).abs() < 1e-6, "{b}: {m}");
        assert!((i / INERTIAS_KG_M2[b] - 1.0).abs() < 1e-6, "{b}: {i}");
    }
    let total: f64 = p.mass_properties().iter().map(|(m, _)| m).sum();
    assert!((total - 90.0).abs() < 1e-4, "{total}");
    assert_eq!(BODIES, 7);
}

/// Stands 2 s on SIMBICON's gains (dt 5 ms); at rest the ground carries m·g; then without
/// torques it falls.
#[test]
fn stands_on_pd_then_falls_without_torques() {
    let scene = BipedScene::new(6.0, G);
    let hold = 400; // 2 s
    let states = run(&scene, 1200, |k, s| {
        if k < hold { stand(s) } else { [0.0; JOINTS] }
    });
    let at2 = &states[hold];
    println!(
        "t {}: torso y {:.4} pitch {:.5} com {:?}",
        at2.time_s, at2.root.com_m[1], at2.root.pitch_rad, at2.com_m
    );
    let min_torso = states[..=hold]
        .iter()
        .map(|s| s.root.com_m[1])
        .fold(f64::INFINITY, f64::min);
    println!("lowest torso centre while held: {min_torso:.4} m");
    assert!(min_torso > 1.1, "{min_torso}");
    assert!(!states[..=hold].iter().any(|s| s.non_foot_ground_contact));
    // Contact forces near rest (0.5–1.0 s) against m·g.
    let mg = 90.0 * 9.81;
    let mut worst: f64 = 0.0;
    for s in &states[100..=200] {
        let sum = s.feet[0].normal_n + s.feet[1].normal_n;
        worst = worst.max((sum / mg - 1.0).abs());
        assert!(s.feet.iter().all(|f| f.touching));
    }
    println!("feet normal force over 0.5–1 s: worst relative error against m·g = {worst:.4}");
    assert!(worst < 0.02, "{worst}");
    let end = states.last().unwrap();
    let fell_at = states
        .iter()
        .find(|s| s.non_foot_ground_contact)
        .map(|s| s.time_s);
    let lowest = states[hold..]
        .iter()
        .map(|s| s.root.com_m[1])
        .fold(f64::INFINITY, f64::min);
    println!(
        "without torques: lowest torso centre {lowest:.3} m, first non-foot contact at {fell_at:?} s, end torso y {:.3}",
        end.root.com_m[1]
    );
    assert!(lowest < 0.6, "{lowest}");
    assert!(fell_at.is_some());
}

/// The joint readout against the bodies' geometry: each joint angle is the child's pitch minus
/// the parent's (from the quaternions), and the thigh's pitch read from the hip and knee points
/// agrees (here with landing impacts; the rates are checked on a smooth motion, below).
#[test]
fn joint_readout_matches_body_pitches() {
    let mut scene = BipedScene::new(1.0, G);
    scene.initial_torso_height_m = Some(1.5);
    scene.initial_joint_angles_rad = [0.4, -1.1, 0.2, -0.3, -0.05, 0.1];
    let states = run(&scene, 100, |_, s| stand(s).map(|t| 0.3 * t));
    let mut worst_geo: f64 = 0.0;
    for s in &states[1..] {
        for (j, &(parent, child)) in sim_host::biped::JOINT_BODIES.iter().enumerate() {
            let d = s.bodies[child].pitch_rad - s.bodies[parent].pitch_rad;
            assert!(
                (s.joints[j].angle_rad - d).abs() < 1e-12
                    || (s.joints[j].angle_rad - d).abs() > 6.0
            );
        }
        for (hip, knee, thigh) in [(0, 1, 1), (3, 4, 4)] {
            let h = s.joints[hip].position_m;
            let k = s.joints[knee].position_m;
            let geo = (k[0] - h[0]).atan2(-(k[1] - h[1]));
            worst_geo = worst_geo.max((geo - s.bodies[thigh].pitch_rad).abs());
        }
    }
    println!("thigh pitch from hip/knee points vs body pitch: worst {worst_geo:.2e} rad");
    assert!(worst_geo < 1e-2, "{worst_geo}");
    let s0 = &states[0];
    for j in 0..JOINTS {
        assert!((s0.joints[j].angle_rad - scene.initial_joint_angles_rad[j]).abs() < 1e-6);
    }
}

/// Joint rates against the angles' finite differences on a smooth motion: in the air without
/// gravity (no contact, no impact), the legs driven from a bent pose by smooth (sinusoidal)
/// torques, small enough for the 0.01 kg·m² feet (PD torques at dt 5 ms would chatter). Rapier
/// moves the bodies with the velocities of its substeps, so over a step the angle changes by
/// dt times a rate near those read before and after it: |Δθ/dt − their mean| ≤ their
/// difference (dt times the step's angular acceleration), plus the f32 rounding of the
/// pitches (≈ 1e-7 rad, over dt), plus 1e-2 rad/s for the joints' position correction (which
/// moves the bodies by other than their velocities: measured 5.8e-3 rad/s beyond the rest).
/// Measured: worst 3.0e-2 rad/s at rates up to 11.3 rad/s (the old check, through landing
/// impacts, allowed 50).
#[test]
fn joint_rates_match_finite_differences_on_a_smooth_motion() {
    let mut scene = BipedScene::new(1.0, [0.0, 0.0]);
    scene.initial_torso_height_m = Some(2.0);
    scene.initial_joint_angles_rad = [0.4, -1.1, 0.2, -0.3, -0.05, 0.1];
    let dt = scene.dt_s;
    let amplitude_nm = [4.0, 2.0, 0.1, -4.0, 2.0, -0.1];
    let states = run(&scene, 200, |k, _| {
        let phase = std::f64::consts::TAU * k as f64 * dt;
        std::array::from_fn(|j| amplitude_nm[j] * (phase + j as f64).sin())
    });
    let rounding = 2.0 * 1e-7 / dt;
    let mut worst_excess = f64::NEG_INFINITY;
    let mut worst_abs: f64 = 0.0;
    let mut fastest: f64 = 0.0;
    for w in states.windows(2) {
        let (a, s) = (&w[0], &w[1]);
        assert!(!s.feet.iter().any(|f| f.touching) && !s.non_foot_ground_contact);
        for j in 0..JOINTS {
            // Angles are wrapped to (−π, π]: unwrap the step's change.
            let change = s.joints[j].angle_rad - a.joints[j].angle_rad;
            let tau = std::f64::consts::TAU;
            let fd = (change - tau * (change / tau).round()) / dt;
            let (r0, r1) = (a.joints[j].rate_rad_s, s.joints[j].rate_rad_s);
            let err = (fd - 0.5 * (r0 + r1)).abs();
            let bound = (r1 - r0).abs() + rounding;
            worst_excess = worst_excess.max(err - bound);
            worst_abs = worst_abs.max(err);
            fastest = fastest.max(r1.abs());
        }
    }
    println!(
        "rate vs finite difference: worst {worst_abs:.2e} rad/s (rates up to {fastest:.2} rad/s), worst excess over the bound {worst_excess:.2e}"
    );
    assert!(fastest > 1.0, "the legs move: {fastest}");
    assert!(worst_excess <= 1e-2, "{worst_excess}");
}

/// A push forward on the torso, in the air without gravity, gives the whole biped its impulse.
#[test]
fn pushes_move_the_com() {
    let mut scene = BipedScene::new(1.0, [0.0, 0.0]);
    scene.initial_torso_height_m = Some(2.0);
    scene.pushes.push(TorsoPush {
        force_n: [90.0, 0.0],
        start_s: 0.1,
        duration_s: 0.2,
    });
    let states = run(&scene, 100, |_, _| [0.0; JOINTS]);
    assert!(
        states[20].com_velocity_m_s[0].abs() < 1e-9,
        "not before it starts"
    );
    let v = states[100].com_velocity_m_s[0];
    println!("COM speed after 90 N for 0.2 s on 90 kg: {v:.5} m/s (impulse / mass 0.2)");
    assert!((v - 0.2).abs() < 0.2 * 0.02, "{v}");
    assert!(states[100].com_m[0] > 0.05);
}

#[test]
fn two_runs_are_bit_identical() {
    let mut scene = BipedScene::new(3.0, G);
    scene.pushes.push(TorsoPush {
        force_n: [150.0, 0.0],
        start_s: 0.5,
        duration_s: 0.2,
    });
    let a = run(
        &scene,
        600,
        |k, s| if k < 300 { stand(s) } else { [0.0; JOINTS] },
    );
    let b = run(
        &scene,
        600,
        |k, s| if k < 300 { stand(s) } else { [0.0; JOINTS] },
    );
    for (x, y) in a.iter().zip(&b) {
        for (p, q) in x.bodies.iter().zip(&y.bodies) {
            assert_eq!(p.com_m.map(f64::to_bits), q.com_m.map(f64::to_bits));
            assert_eq!(p.pitch_rad.to_bits(), q.pitch_rad.to_bits());
            assert_eq!(
                p.angular_velocity_rad_s.to_bits(),
                q.angular_velocity_rad_s.to_bits()
            );
        }
        assert_eq!(x.feet[0].normal_n.to_bits(), y.feet[0].normal_n.to_bits());
    }
}

#[test]
fn torques_beyond_the_limit_are_refused_whole() {
    let mut p = BipedPlant::new(&BipedScene::new(1.0, G)).unwrap();
    let e = p.step(&[0.0, 0.0, 0.0, 0.0, 1000.5, 0.0]).unwrap_err();
    assert_eq!((e.joint, e.torque_nm), (4, 1000.5));
    assert_eq!(p.clock().step_index(), 0, "not stepped");
    assert_eq!(
        p.step(&[0.0, f64::NAN, 0.0, 0.0, 0.0, 0.0])
            .unwrap_err()
            .joint,
        1
    );
    assert!(p.step(&[1000.0, -1000.0, 0.0, 0.0, 0.0, 0.0]).is_ok());
}

#[test]
fn bad_scenes_are_refused_by_field() {
    let f = Path::new("s.json");
    let min = r#""kind": "biped", "end_time_s": 1, "gravity_m_s2": [0, -9.81]"#;
    assert!(BipedScene::from_json_str(&format!("{{{min}}}"), f).is_ok());
    let cases: &[(&str, &str)] = &[
        (r#", "dt_s": 0"#, "dt_s"),
        (
            r#", "initial_joint_angles_rad": [0, 0, 0, 0, 4, 0]"#,
            "initial_joint_angles_rad[4]",
        ),
        (
            r#", "initial_joint_angles_rad": [0, 0]"#,
            "initial_joint_angles_rad",
        ),
        (
            r#", "initial_torso_pitch_rad": 2"#,
            "initial_torso_pitch_rad",
        ),
        (
            r#", "initial_torso_height_m": -1"#,
            "initial_torso_height_m",
        ),
        (
            r#", "initial_forward_velocity_m_s": 1e3"#,
            "initial_forward_velocity_m_s",
        ),
        (
            r#", "pushes": [{"force_n": [0, 2e5], "start_s": 0, "duration_s": 1}]"#,
            "pushes[0].force_n[1]",
        ),
        (
            r#", "pushes": [{"force_n": [0, 0], "start_s": -1, "duration_s": 1}]"#,
            "pushes[0].start_s",
        ),
        (
            r#", "pushes": [{"force_n": [0, 0], "start_s": 0}]"#,
            "pushes[0]",
        ),
        (r#", "friction": 1"#, "friction"),
    ];
    for (extra, field) in cases {
        let e = BipedScene::from_json_str(&format!("{{{min}{extra}}}"), f).unwrap_err();
        assert_eq!(e.field, *field, "{extra}: {e}");
    }
    let e =
        BipedScene::from_json_str(&format!("{{{}}}", min.replace("-9.81", "-1e4")), f).unwrap_err();
    assert_eq!(e.field, "gravity_m_s2[1]");
    let e = BipedScene::from_json_str(&format!("{{{}}}", min.replace("biped", "chain")), f)
        .unwrap_err();
    assert_eq!(e.field, "kind");
    // A pose in the ground is refused by the plant.
    let mut s = BipedScene::new(1.0, G);
    s.initial_torso_height_m = Some(0.9);
    assert_eq!(
        BipedPlant::new(&s).unwrap_err().field,
        "initial_torso_height_m"
    );
    // The example file loads.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/biped_stand.json");
    BipedPlant::new(&BipedScene::load(&path).unwrap()).unwrap();
}

/// Hosted: `"kind": "biped"` is a biped scene; the state frames encode and decode whole (every
/// orientation a unit quaternion to the wire's tolerance) and carry 6 joints, 7 bodies and the
/// feet's forces first; the host's torque check refuses beyond ±1000 N·m, NaN, and a torque
/// for a seventh joint; a frame's torques drive the step as `step` does.
#[test]
fn hosted_biped_speaks_the_frames() {
    use control_core::frames::{BodyId, STATE_FRAME_LEN, StateFrame};
    use sim_host::PlantScene;

    let json = r#"{"kind": "biped", "end_time_s": 0.5, "gravity_m_s2": [0, -9.81]}"#;
    let Ok(PlantScene::Biped(scene)) = PlantScene::from_json_str(json, Path::new("b.json")) else {
        panic!("not a biped scene");
    };
    let mut hosted = BipedPlant::new(&scene).unwrap();
    let mut direct = BipedPlant::new(&scene).unwrap();
    let torques = [10.0, -5.0, 2.0, -10.0, 5.0, -2.0];
    for k in 0..50u64 {
        let frame = hosted.step_driven_by(&torques, k + 1);
        let s = direct.step(&torques).unwrap();
        let mut buf = [0u8; STATE_FRAME_LEN];
        frame.encode(&mut buf).unwrap();
        let decoded = StateFrame::decode(&buf).unwrap();
        assert_eq!(decoded, frame);
        assert_eq!(frame.joints.len(), JOINTS);
        assert_eq!(frame.bodies.len(), BODIES);
        assert_eq!(frame.applied_torque_sequence, (k + 1) as u32);
        for (b, body) in s.bodies.iter().enumerate() {
            assert_eq!(frame.bodies[b].com_m[..2], body.com_m);
            assert_eq!(
                frame.bodies[b].angular_velocity_rad_s[2],
                body.angular_velocity_rad_s
            );
        }
        assert_eq!(frame.contacts[0].body, BodyId(3));
        assert_eq!(frame.contacts[1].body, BodyId(6));
        assert_eq!(frame.contacts[0].force_n[1], s.feet[0].normal_n);
        assert_eq!(frame.contacts[1].force_n[0], s.feet[1].tangential_n);
    }
    assert_eq!(BipedPlant::check_torque_slice(&torques), Ok(()));
    assert_eq!(
        BipedPlant::check_torque_slice(&[0.0, 1000.5]),
        Err((1, 1000.5))
    );
    assert!(BipedPlant::check_torque_slice(&[f64::NAN]).is_err());
    assert_eq!(
        BipedPlant::check_torque_slice(&[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]),
        Err((6, 1.0))
    );
    assert_eq!(
        BipedPlant::check_torque_slice(&[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
        Ok(())
    );
}
