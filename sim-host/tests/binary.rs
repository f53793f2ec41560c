//! The real `sim-host` binary over a socketpair: lockstep states bit-identical to the plant run
//! in process, clean exits, and the field-naming error for a bad scene file.
#![allow(missing_docs)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use control_core::frames::{
    FrameGuard, MAX_FRAME_LEN, StateFlags, StateFrame, TORQUE_FRAME_LEN, TorqueFrame,
};
use sim_host::{ArmSpec, BallSpawn, Plant, Scene};
use transport::{FrameTransport, SeqPacket, TransportError};

fn scene_file(name: &str, scene: &Scene) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sim-host-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(scene).unwrap()).unwrap();
    path
}

fn spawn(scene: &std::path::Path, mode: &str) -> (std::process::Child, SeqPacket) {
    let (ours, theirs) = SeqPacket::pair().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sim-host"));
    let fd = theirs.inherit_into(&mut cmd);
    cmd.arg("--scene")
        .arg(scene)
        .args(["--fd", &fd.to_string(), "--mode", mode])
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    drop(theirs);
    (child, ours)
}

fn torque_bytes(step: u64, tau: f64) -> [u8; TORQUE_FRAME_LEN] {
    let mut f = TorqueFrame::new(step, step);
    f.push_torque(tau).unwrap();
    let mut b = [0u8; TORQUE_FRAME_LEN];
    f.encode(&mut b).unwrap();
    b
}

fn controller(s: &StateFrame) -> f64 {
    let j = s.joints[0];
    -15.0 * (j.position_rad - 0.4) - 2.0 * j.velocity_rad_s
}

#[test]
fn lockstep_binary_matches_the_in_process_plant_bit_for_bit() {
    let mut scene = Scene::new(ArmSpec::BALL_BLOCKING, 1.5); // 300 steps
    scene
        .balls
        .push(BallSpawn::aimed(1, [0.0, -0.5], 0.6, 0.3, 0.05, 0.2, 9.8));
    let path = scene_file("lockstep.json", &scene);
    let (child, link) = spawn(&path, "lockstep");

    let mut reference = Plant::new(&scene).unwrap();
    let mut expected = reference.state_frame();
    let mut guard = FrameGuard::new();
    let mut buf = [0u8; MAX_FRAME_LEN];
    let mut contacts = 0;
    loop {
        let n = link
            .recv_timeout(&mut buf, Duration::from_secs(10))
            .unwrap();
        let got: StateFrame = guard.accept(&buf[..n]).unwrap();
        assert_eq!(got.step, expected.step);
        assert_eq!(got.sim_time_s.to_bits(), expected.sim_time_s.to_bits());
        let (g, e) = (got.joints[0], expected.joints[0]);
        assert_eq!(
            g.position_rad.to_bits(),
            e.position_rad.to_bits(),
            "step {}",
            got.step
        );
        assert_eq!(g.velocity_rad_s.to_bits(), e.velocity_rad_s.to_bits());
        assert_eq!(got.events, expected.events);
        contacts += got.events.len();
        if got.flags.contains(StateFlags::FINAL) {
            assert_eq!(got.step, 300);
            break;
        }
        let tau = controller(&got);
        link.send(&torque_bytes(got.step, tau)).unwrap();
        expected = reference.step(&[tau]);
    }
    assert!(contacts > 0, "the ball reached the arm");
    // After the final state the plant exits 0 and closes its end.
    let mut b = [0u8; 8];
    assert!(matches!(
        link.recv_timeout(&mut b, Duration::from_secs(10)),
        Err(TransportError::PeerClosed)
    ));
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("end of scene after 300 steps"));
}

#[test]
fn the_binary_exits_cleanly_when_the_controller_closes() {
    for mode in ["lockstep", "realtime"] {
        let path = scene_file(
            &format!("close-{mode}.json"),
            &Scene::new(ArmSpec::BALL_BLOCKING, 60.0),
        );
        let (mut child, link) = spawn(&path, mode);
        let mut buf = [0u8; MAX_FRAME_LEN];
        let n = link
            .recv_timeout(&mut buf, Duration::from_secs(10))
            .unwrap();
        assert_eq!(StateFrame::decode(&buf[..n]).unwrap().step, 0);
        drop(link);
        let status = child.wait().unwrap();
        assert!(status.success(), "{mode}: {status}");
    }
}

#[test]
fn a_bad_scene_file_names_the_file_and_the_field() {
    let dir = std::env::temp_dir().join(format!("sim-host-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.json");
    std::fs::write(
        &path,
        r#"{"end_time_s": 1, "arm": {"length_m": 1, "thickness_m": 0.1, "mass_kg": -2, "gravity_m_s2": 9.8}}"#,
    )
    .unwrap();
    let (child, _link) = spawn(&path, "lockstep");
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("bad scene file {}", path.display())),
        "{err}"
    );
    assert!(err.contains("field `arm.mass_kg`"), "{err}");
    assert!(err.contains("got -2"), "{err}");
}

#[test]
fn a_bad_command_line_gets_the_usage_and_code_2() {
    for args in [
        &[][..],
        &["--mode", "sometimes"][..],
        &["--fd", "x"][..],
        &["--bogus"][..],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_sim-host"))
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("usage: sim-host"), "{err}");
    }
}
