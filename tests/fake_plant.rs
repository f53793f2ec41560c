//! A plant that misbehaves on purpose, for the end-to-end fault tests: `hil run` starts it in
//! place of the real plant (`HIL_SIM_HOST=<this binary>`), with the plant's command line
//! (`[--quiet] --scene F --fd N --mode M [--cpu N]`). What it does comes from the environment:
//!
//! - `FAKE_PLANT=garbage`: sends only malformed state frames (bad checksums, then oversize
//!   datagrams), one per millisecond, never a valid one.
//! - `FAKE_PLANT=silent-after:N`: a lockstep plant of `$FAKE_PLANT_JOINTS` joints (default 1)
//!   at rest for N steps (each step waits for the torque frame of its step), then stops sending
//!   states but keeps reading.
//!
//! Every torque frame it accepts is appended to the file `$FAKE_PLANT_LOG` as a line
//! `sequence step flags torques_nm` (the torques comma-separated), so a test can assert what
//! reached the plant. It ends when the controller closes its end. Test support only.

use std::io::Write;
use std::time::{Duration, Instant};

use control_core::frames::{JointState, StateFrame, TorqueFlags, TorqueFrame};
use transport::{FrameLink, FrameTransport, LinkError, SeqPacket};

fn log_torque(log: &mut Option<std::fs::File>, f: &TorqueFrame) {
    if let Some(file) = log {
        let torques: Vec<String> = f.torques_nm.iter().map(|t| format!("{t:?}")).collect();
        let _ = writeln!(
            file,
            "{} {} {} {}",
            f.sequence,
            f.step,
            if f.flags.contains(TorqueFlags::SAFE_STATE) {
                "safe"
            } else {
                "normal"
            },
            torques.join(",")
        );
        let _ = file.flush();
    }
}

fn state(step: u64, applied: u64, joints: usize) -> StateFrame {
    let mut s = StateFrame::new(step + 1, step, step as f64 * 0.005);
    s.applied_torque_sequence = u32::try_from(applied).unwrap_or(0);
    for _ in 0..joints {
        let _ = s.push_joint(JointState {
            position_rad: 0.0,
            velocity_rad_s: 0.0,
        });
    }
    s
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let fd: i32 = args
        .iter()
        .position(|a| a == "--fd")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1);
    // SAFETY: the descriptor was inherited from hil for this process alone, adopted once here.
    let Ok(socket) = (unsafe { SeqPacket::from_inherited_fd(fd) }) else {
        eprintln!("fake-plant: no usable --fd");
        std::process::exit(2);
    };
    let mut log = std::env::var_os("FAKE_PLANT_LOG").and_then(|p| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .ok()
    });
    let behaviour = std::env::var("FAKE_PLANT").unwrap_or_default();
    let joints: usize = std::env::var("FAKE_PLANT_JOINTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let mut link = FrameLink::new(socket);
    if behaviour == "garbage" {
        let mut bad = [0u8; 4096];
        let mut good = [0u8; control_core::frames::MAX_FRAME_LEN];
        let n = state(0, 0, joints).encode(&mut good).unwrap_or(0);
        let start = Instant::now();
        for i in 0u64.. {
            let sent = if i % 2 == 0 {
                // A real frame with one flipped byte: its checksum fails.
                let mut f = good;
                if let Some(b) = f.get_mut(20) {
                    *b ^= 0xff;
                }
                link.transport().send(f.get(..n).unwrap_or(&f))
            } else {
                bad[0] = u8::try_from(i % 251).unwrap_or(0);
                link.transport().send(&bad)
            };
            if matches!(sent, Err(transport::TransportError::PeerClosed)) || sent.is_err() {
                return;
            }
            while let Ok(Some(f)) = link.try_recv_torques() {
                log_torque(&mut log, &f);
            }
            if start.elapsed() > Duration::from_secs(120) {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let silent_after: u64 = behaviour
        .strip_prefix("silent-after:")
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX);
    let mut step = 0u64;
    let mut applied = 0u64;
    let mut sent: Option<u64> = None;
    loop {
        if step <= silent_after && sent != Some(step) {
            if link.send_state(&state(step, applied, joints)).is_err() {
                return;
            }
            sent = Some(step);
        }
        let frame = match link.recv_torques(None) {
            Ok(f) => f,
            Err(LinkError::PeerClosed) | Err(_) => return,
        };
        log_torque(&mut log, &frame);
        if frame.step == step && step < silent_after {
            applied = frame.sequence;
            step += 1;
        }
    }
}
