//! A lying plant, for the end-to-end tests of hil's distrust of its plant: `hil run` starts it in
//! place of the real plant (`HIL_SIM_HOST=<this binary>`). It starts the real plant itself
//! (`$RELAY_REAL_PLANT __sim-host <the same arguments>`, over a socket pair of its own), forwards
//! every torque frame to it unchanged, and relays its state frames to hil after changing them as
//! `$RELAY` says. Each changed frame is encoded anew, so its checksum is right: only its content
//! lies. Behaviours (`N`: a plant step; from step N on):
//!
//! - `honest`: changes nothing.
//! - `final-at:N`: flags the state of step N final (and goes on relaying).
//! - `positions:N:V`: every joint position is V (e.g. `1e300`).
//! - `time-backwards:N`, `time-frozen:N`, `time-jump:N`: the time runs backwards, stays at step
//!   N's, or is one second ahead.
//! - `step-frozen:N`, `step-jump:N`: the step number stays N, or is 1000 ahead.
//! - `empty:N`: states with no joints.
//! - `quaternion:N`: every body's orientation quaternion doubled (off unit).
//! - `flood:N`: at step N stops relaying and sends step-0 states with fresh sequence numbers as
//!   fast as the socket takes them (for at most 60 s).
//! - `exit-after-final:C`: relays honestly, then exits with status C after the final state.
//! - `linger`: relays honestly, then neither exits nor reads after the final state (120 s).
//! - `die-on-run:K:N`: with `$RELAY_COUNTER` a file counting the relays started (this one adds
//!   itself): the K-th relay started exits with status 9 at step N, its real plant killed.
//! - `random:SEED`: from step 50 on, each state has a 1 in 40 chance of one lie drawn at random
//!   (a field of 1e300 or 1e6, the time, step or sequence shifted, a final flag, no joints, an
//!   off-unit quaternion, the frame sent twice, or not at all). Each lie told is appended to
//!   `$RELAY_LOG` as `<lie> <step>`; the frame sent twice is the one harmless lie (`repeat`).
//!
//! Test support only.

use std::io::{Read, Seek, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use control_core::frames::{MAX_FRAME_LEN, StateFlags, StateFrame};
use transport::{FrameTransport, SeqPacket, TransportError};

/// What the relay does, parsed from `$RELAY`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Lie {
    Honest,
    FinalAt(u64),
    Positions(u64, f64),
    TimeBackwards(u64),
    TimeFrozen(u64),
    TimeJump(u64),
    StepFrozen(u64),
    StepJump(u64),
    Empty(u64),
    Quaternion(u64),
    Flood(u64),
    ExitAfterFinal(i32),
    Linger,
    DieOnRun(u64, u64),
    Random(u64),
}

fn parse(spec: &str) -> Option<Lie> {
    let mut parts = spec.split(':');
    let name = parts.next()?;
    let mut num = || parts.next().and_then(|v| v.parse::<f64>().ok());
    Some(match name {
        "honest" | "" => Lie::Honest,
        "final-at" => Lie::FinalAt(num()? as u64),
        "positions" => Lie::Positions(num()? as u64, num()?),
        "time-backwards" => Lie::TimeBackwards(num()? as u64),
        "time-frozen" => Lie::TimeFrozen(num()? as u64),
        "time-jump" => Lie::TimeJump(num()? as u64),
        "step-frozen" => Lie::StepFrozen(num()? as u64),
        "step-jump" => Lie::StepJump(num()? as u64),
        "empty" => Lie::Empty(num()? as u64),
        "quaternion" => Lie::Quaternion(num()? as u64),
        "flood" => Lie::Flood(num()? as u64),
        "exit-after-final" => Lie::ExitAfterFinal(num()? as i32),
        "linger" => Lie::Linger,
        "die-on-run" => Lie::DieOnRun(num()? as u64, num()? as u64),
        "random" => Lie::Random(num()? as u64),
        _ => return None,
    })
}

/// Change `f` as `lie` says; `dt` is the plant's step (from its first two states' times).
fn change(lie: Lie, f: &mut StateFrame, dt: f64) {
    let step = f.step;
    match lie {
        Lie::FinalAt(n) if step == n => f.flags = f.flags.with(StateFlags::FINAL),
        Lie::Positions(n, v) if step >= n => {
            for j in &mut f.joints {
                j.position_rad = v;
            }
        }
        Lie::TimeBackwards(n) if step >= n => {
            f.sim_time_s = (2.0 * n as f64 - step as f64) * dt;
        }
        Lie::TimeFrozen(n) if step >= n => f.sim_time_s = n as f64 * dt,
        Lie::TimeJump(n) if step >= n => f.sim_time_s += 1.0,
        Lie::StepFrozen(n) if step >= n => f.step = n,
        Lie::StepJump(n) if step >= n => f.step += 1000,
        Lie::Empty(n) if step >= n => f.joints.clear(),
        Lie::Quaternion(n) if step >= n => {
            for b in &mut f.bodies {
                for q in &mut b.orientation {
                    *q *= 2.0;
                }
            }
        }
        _ => {}
    }
}

/// The random lies: their names, as `$RELAY_LOG` has them.
const RANDOM_LIES: [&str; 10] = [
    "position",
    "velocity",
    "time",
    "step",
    "sequence",
    "final",
    "empty",
    "quaternion",
    "repeat",
    "drop",
];

/// A xorshift64 generator: the same seed, the same lies.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Tell lie `k` of [`RANDOM_LIES`] in `f`; returns how many times to send it (0, 1 or 2).
fn random_lie(k: usize, f: &mut StateFrame, dt: f64) -> usize {
    match k {
        0 => f.joints.iter_mut().for_each(|j| j.position_rad = 1e300),
        1 => f.joints.iter_mut().for_each(|j| j.velocity_rad_s = 1e6),
        2 => f.sim_time_s += 7.0 * dt,
        3 => f.step += 3,
        4 => f.sequence += 5,
        5 => f.flags = f.flags.with(StateFlags::FINAL),
        6 => f.joints.clear(),
        7 => {
            // Bodies if the scene has any; the joints otherwise (so that the lie is told).
            if f.bodies.is_empty() {
                f.joints.iter_mut().for_each(|j| j.position_rad = 1e300);
            }
            f.bodies
                .iter_mut()
                .for_each(|b| b.orientation.iter_mut().for_each(|q| *q *= 2.0));
        }
        8 => return 2,
        _ => return 0,
    }
    1
}

fn arg_value(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

/// This relay's number among those started with `$RELAY_COUNTER` (1 for the first).
fn run_number() -> u64 {
    let Some(path) = std::env::var_os("RELAY_COUNTER") else {
        return 1;
    };
    let Ok(mut file) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
    else {
        return 1;
    };
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    let n = text.trim().parse::<u64>().unwrap_or(0) + 1;
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = write!(file, "{n}");
    n
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let lie = match parse(&std::env::var("RELAY").unwrap_or_default()) {
        Some(l) => l,
        None => {
            eprintln!("relay-plant: unknown $RELAY");
            std::process::exit(2);
        }
    };
    let Some(fd) = arg_value(&args, "--fd").and_then(|v| v.parse::<i32>().ok()) else {
        eprintln!("relay-plant: no --fd");
        std::process::exit(2);
    };
    // SAFETY: the descriptor was inherited from hil for this process alone, adopted once here.
    let Ok(hil) = (unsafe { SeqPacket::from_inherited_fd(fd) }) else {
        eprintln!("relay-plant: no usable --fd");
        std::process::exit(2);
    };
    let Some(real) = std::env::var_os("RELAY_REAL_PLANT") else {
        eprintln!("relay-plant: no $RELAY_REAL_PLANT");
        std::process::exit(2);
    };
    let run = run_number();
    let Ok((ours, theirs)) = SeqPacket::pair() else {
        std::process::exit(2);
    };
    let mut cmd = Command::new(real);
    let plant_fd = theirs.inherit_into(&mut cmd);
    cmd.arg("__sim-host");
    // The real plant gets our arguments, but its own end of our socket pair.
    let mut rest = args.iter();
    while let Some(a) = rest.next() {
        if a == "--fd" {
            rest.next();
            cmd.arg("--fd").arg(plant_fd.to_string());
        } else {
            cmd.arg(a);
        }
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::null());
    // SAFETY: prctl(PR_SET_PDEATHSIG) is async-signal-safe; it runs in the child before exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let Ok(mut plant) = cmd.spawn() else {
        eprintln!("relay-plant: cannot start the real plant");
        std::process::exit(2);
    };
    drop(theirs);

    let code = std::thread::scope(|s| {
        // Torques: hil → plant, unchanged. Ends when either side closes.
        s.spawn(|| {
            let mut buf = [0u8; MAX_FRAME_LEN];
            loop {
                match hil.recv(&mut buf) {
                    Ok(n) => {
                        if ours.send(buf.get(..n).unwrap_or(&[])).is_err() {
                            return;
                        }
                    }
                    Err(TransportError::Truncated { .. }) => {}
                    Err(_) => return,
                }
            }
        });
        // States: plant → hil, changed.
        let mut buf = [0u8; MAX_FRAME_LEN];
        let mut out = [0u8; MAX_FRAME_LEN];
        let mut first_time = None;
        let mut dt = 0.0;
        let mut rng = Rng(match lie {
            Lie::Random(seed) => seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            _ => 1,
        });
        let mut lie_log = std::env::var_os("RELAY_LOG").and_then(|p| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .ok()
        });
        loop {
            let n = match ours.recv(&mut buf) {
                Ok(n) => n,
                Err(_) => break 0,
            };
            let Ok(mut f) = StateFrame::decode(buf.get(..n).unwrap_or(&[])) else {
                continue;
            };
            match first_time {
                None => first_time = Some(f.sim_time_s),
                Some(t0) if dt == 0.0 => dt = f.sim_time_s - t0,
                _ => {}
            }
            if let Lie::DieOnRun(k, n) = lie
                && run == k
                && f.step >= n
            {
                let _ = plant.kill();
                std::process::exit(9);
            }
            if let Lie::Flood(n) = lie
                && f.step >= n
            {
                let start = Instant::now();
                let mut fake = StateFrame::new(f.sequence, 0, 0.0);
                fake.joints = f.joints.clone();
                while start.elapsed() < Duration::from_secs(60) {
                    fake.sequence += 1;
                    let len = fake.encode(&mut out).unwrap_or(0);
                    if hil.send(out.get(..len).unwrap_or(&[])).is_err() {
                        break;
                    }
                }
                let _ = plant.kill();
                std::process::exit(0);
            }
            change(lie, &mut f, dt);
            let mut copies = 1;
            if let Lie::Random(_) = lie
                && f.step >= 50
                && rng.next().is_multiple_of(40)
            {
                let k = usize::try_from(rng.next() % RANDOM_LIES.len() as u64).unwrap_or(0);
                if let Some(file) = &mut lie_log {
                    let _ = writeln!(file, "{} {}", RANDOM_LIES[k], f.step);
                }
                copies = random_lie(k, &mut f, dt);
            }
            let last = f.flags.contains(StateFlags::FINAL);
            let Ok(len) = f.encode(&mut out) else {
                continue;
            };
            if (0..copies).any(|_| hil.send(out.get(..len).unwrap_or(&[])).is_err()) {
                break 0;
            }
            if last {
                match lie {
                    Lie::ExitAfterFinal(code) => break code,
                    Lie::Linger => {
                        std::thread::sleep(Duration::from_secs(120));
                        break 0;
                    }
                    _ => {}
                }
            }
        }
    });
    let _ = plant.kill();
    let _ = plant.wait();
    std::process::exit(code);
}
