//! The real `sim-host` binary over a socketpair: lockstep states bit-identical to the plant run
//! in process, clean exits, the field-naming error for a bad scene file, and bad torque frames
//! (a 4096-byte datagram, a torque of 1e300) refused and counted in the states instead of
//! killing the process or driving it to infinity.
#![allow(missing_docs)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use control_core::frames::{
    FrameGuard, MAX_FRAME_LEN, StateFlags, StateFrame, TORQUE_FRAME_LEN, TorqueFrame,
};
use sim_host::{ArmSpec, BallSpawn, Mode, Plant, Scene};
use transport::{FrameLink, FrameTransport, LinkError, SeqPacket, TransportError};

fn scene_file(name: &str, scene: &Scene) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sim-host-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(scene).unwrap()).unwrap();
    path
}

fn spawn(scene: &std::path::Path, mode: &str) -> (std::process::Child, SeqPacket) {
    spawn_with(scene, mode, &[])
}

fn spawn_with(
    scene: &std::path::Path,
    mode: &str,
    extra: &[&str],
) -> (std::process::Child, SeqPacket) {
    let (ours, theirs) = SeqPacket::pair().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sim-host"));
    let fd = theirs.inherit_into(&mut cmd);
    cmd.arg("--scene")
        .arg(scene)
        .args(["--fd", &fd.to_string(), "--mode", mode])
        .args(extra)
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
    let mut scene = Scene::new(ArmSpec::EXAMPLE, 1.5); // 300 steps
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
            &Scene::new(ArmSpec::EXAMPLE, 60.0),
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
        r#"{"end_time_s": 1, "arm": {"length_m": 1, "thickness_m": 0.1, "mass_kg": -2, "gravity_m_s2": 9.8, "torque_limit_nm": 50}}"#,
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

/// What a fault run saw: the last state frame, every state's joint, the exit status and stderr.
struct FaultRun {
    last: StateFrame,
    finite: bool,
    states: u64,
    stderr: String,
}

/// Runs the binary on a 0.25 s scene (50 steps) in `mode` with a PD controller over a
/// `FrameLink`; before answering state `at`, `inject` sends whatever it likes through the raw
/// transport, and the answer to state `at` carries torque `tau_at`.
fn fault_run(
    mode: Mode,
    name: &str,
    at: u64,
    tau_at: f64,
    inject: impl Fn(&SeqPacket),
) -> FaultRun {
    let scene = Scene::new(ArmSpec::EXAMPLE, 0.25);
    let path = scene_file(&format!("{name}-{mode}.json"), &scene);
    let (child, raw) = spawn(&path, mode.name());
    let mut link = FrameLink::new(raw);
    let mut finite = true;
    let mut states = 0;
    let last = loop {
        let got = link
            .recv_state(Instant::now() + Duration::from_secs(10))
            .unwrap();
        states += 1;
        finite &=
            got.joints[0].position_rad.is_finite() && got.joints[0].velocity_rad_s.is_finite();
        if got.flags.contains(StateFlags::FINAL) {
            break got;
        }
        let mut tau = controller(&got);
        if got.step == at {
            inject(link.transport());
            tau = tau_at;
        }
        let mut f = TorqueFrame::new(got.step, got.step);
        f.push_torque(tau).unwrap();
        match link.send_torques(&f) {
            // In real time the plant may reach its end between our receive and send.
            Ok(()) | Err(LinkError::PeerClosed) => {}
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(
        link.rejected().total(),
        0,
        "the plant's frames are all good"
    );
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{mode}: {stderr}");
    FaultRun {
        last,
        finite,
        states,
        stderr,
    }
}

/// One datagram of 4096 bytes (over the largest frame) does not kill the plant: it is refused
/// and counted, the following valid frames are applied, the run completes, and the final state
/// frame's counter says 1.
#[test]
fn an_oversize_datagram_is_counted_not_fatal() {
    for mode in Mode::ALL {
        let run = fault_run(mode, "oversize", 3, 0.0, |t| t.send(&[0xAB; 4096]).unwrap());
        assert_eq!(run.last.step, 50, "{mode}");
        assert_eq!(run.last.plant_rejected_frames, 1, "{mode}: {:?}", run.last);
        assert_eq!(run.last.plant_over_limit_frames, 0, "{mode}");
        assert!(
            run.stderr
                .contains("rejected torque frames 1 (over the torque limit 0, oversize 1)"),
            "{mode}: {}",
            run.stderr
        );
        if mode == Mode::Lockstep {
            assert_eq!(run.states, 51);
            assert!(
                run.stderr.contains("end of scene after 50 steps"),
                "{}",
                run.stderr
            );
        }
    }
}

/// A torque of 1e300 (finite, far beyond the scene's 100 N·m) is refused whole and counted on
/// the plant side, and the state stays finite; a torque of exactly the limit is applied.
#[test]
fn a_torque_beyond_the_limit_is_refused_counted_and_the_state_stays_finite() {
    for mode in Mode::ALL {
        let run = fault_run(mode, "over-limit", 5, 1e300, |_| {});
        assert!(run.finite, "{mode}");
        assert_eq!(run.last.step, 50, "{mode}");
        assert_eq!(
            (
                run.last.plant_rejected_frames,
                run.last.plant_over_limit_frames
            ),
            (1, 1),
            "{mode}: {:?}",
            run.last
        );
        assert!(
            run.stderr
                .contains("rejected torque frames 1 (over the torque limit 1, oversize 0)"),
            "{mode}: {}",
            run.stderr
        );
    }
    // Exactly the limit (a controller that clamps to it) passes.
    let run = fault_run(Mode::Lockstep, "at-limit", 5, -100.0, |_| {});
    assert_eq!(run.last.plant_rejected_frames, 0);
}

/// In lockstep the refused frame still answers its step: the plant steps on the torques of the
/// frame before (bit for bit as the in-process plant does), and says so in
/// `applied_torque_sequence`.
#[test]
fn in_lockstep_a_refused_torque_frame_answers_its_step_with_the_held_torques() {
    let scene = Scene::new(ArmSpec::EXAMPLE, 0.05); // 10 steps
    let path = scene_file("held.json", &scene);
    let (child, raw) = spawn_with(&path, "lockstep", &["--quiet"]);
    let mut link = FrameLink::new(raw);
    let mut reference = Plant::new(&scene).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut state = link.recv_state(deadline).unwrap();
    let mut held = 0.0;
    while !state.flags.contains(StateFlags::FINAL) {
        let k = state.step;
        let tau = if k == 4 { -1e300 } else { 1.0 + k as f64 };
        let mut f = TorqueFrame::new(k + 1, k);
        f.push_torque(tau).unwrap();
        link.send_torques(&f).unwrap();
        if k != 4 {
            held = tau;
        }
        let expected = reference.step(&[held]);
        state = link.recv_state(deadline).unwrap();
        assert_eq!(state.step, k + 1);
        assert_eq!(
            state.joints[0].position_rad.to_bits(),
            expected.joints[0].position_rad.to_bits(),
            "step {k}"
        );
        let applied = if k == 4 { 4 } else { k + 1 };
        assert_eq!(
            u64::from(state.applied_torque_sequence),
            applied,
            "step {k}"
        );
    }
    assert_eq!(state.step, 10);
    assert_eq!(
        (state.plant_rejected_frames, state.plant_over_limit_frames),
        (1, 1)
    );
    drop(link);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(out.stderr.is_empty(), "--quiet");
}
