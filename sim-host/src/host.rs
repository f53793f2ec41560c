//! The plant process's two loops: [`run_lockstep`] and [`run_realtime`], each driving a
//! [`Plant`] over a [`FrameTransport`].
//!
//! - Lockstep (bit-deterministic): send the state of step 0; then for each step k wait for the
//!   torque frame meant for step k, step, send the state of step k + 1. Torque frames for earlier
//!   steps are dropped (counted in [`RunSummary::late_torque_frames`]); one for a later step is a
//!   protocol error.
//! - Real time: step against the wall clock at dt with absolute deadlines (CLOCK_MONOTONIC,
//!   `clock_nanosleep(TIMER_ABSTIME)`). The state of step k + 1 is sent at its instant
//!   t0 + (k + 1)·dt; the step that produces it is computed a short lead before (dt/10, at least
//!   [`REALTIME_LEAD_MIN_NS`]) with the newest torques received by then (zero-order hold), so a
//!   controller that answers state k within about 0.9·dt drives the interval that state starts.
//!   Never waits for the controller. A step that finishes after its deadline is counted late and
//!   the loop goes on (simulated time never skips: the plant catches up).
//!
//! Lockstep speed, measured (`cargo bench -p sim-host`, `lockstep/binary_*`: one torque frame
//! out and one state frame back through the real `sim-host` process, arm scene): 18–20 µs per
//! step with both processes on CPU 0 (≈ 250–280× real time at dt = 5 ms), 18–65 µs unpinned
//! depending on the load of the 2-vCPU VM.
//!
//! In both, the last state (at the scene's end time) carries `StateFlags::FINAL`; a peer that
//! closes ends the run cleanly ([`RunEnd::PeerClosed`]). Malformed, stale and repeated torque
//! frames are rejected, counted ([`RunSummary::rejected`]) and never applied.
//!
//! Never does: apply a torque frame that failed its checks, block on the controller in real time.

use std::fmt;

use control_core::frames::{
    FrameGuard, MAX_FRAME_LEN, RejectCounts, StateFlags, StateFrame, TorqueFrame,
};
use transport::{FrameTransport, TransportError};

use crate::plant::Plant;

/// The two ways to run the loop (DESIGN.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Step only when the torques for the step have arrived; simulated time.
    Lockstep,
    /// Step against the wall clock, zero-order hold on torques.
    Realtime,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "lockstep" => Ok(Self::Lockstep),
            "realtime" => Ok(Self::Realtime),
            other => Err(format!("unknown mode `{other}` (lockstep or realtime)")),
        }
    }
}

/// How a run ended without error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// The scene's end time was reached and the final state sent.
    EndOfScene,
    /// The controller closed its end.
    PeerClosed,
}

/// What a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    /// How it ended.
    pub end: RunEnd,
    /// Physics steps taken.
    pub steps: u64,
    /// Torque frames refused, by reason.
    pub rejected: RejectCounts,
    /// Real time only: steps whose state was ready after its deadline.
    pub late_steps: u64,
    /// Lockstep only: valid torque frames for a step already taken (dropped).
    pub late_torque_frames: u64,
    /// Total wall-clock cost of the physics steps, ns.
    pub step_cost_total_ns: u64,
}

impl fmt::Display for RunSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mean_us = if self.steps == 0 {
            0.0
        } else {
            self.step_cost_total_ns as f64 / self.steps as f64 / 1e3
        };
        write!(
            f,
            "{} after {} steps; mean step cost {mean_us:.1} µs; rejected torque frames {}; late torque frames {}; late steps {}",
            match self.end {
                RunEnd::EndOfScene => "end of scene",
                RunEnd::PeerClosed => "controller closed the connection",
            },
            self.steps,
            self.rejected.total(),
            self.late_torque_frames,
            self.late_steps
        )
    }
}

/// Why a run failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum HostError {
    /// The transport failed (other than the peer closing).
    Transport(TransportError),
    /// The controller broke the lockstep protocol.
    Protocol(String),
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Transport(e) => write!(f, "transport error: {e}"),
            Self::Protocol(m) => write!(f, "protocol error: {m}"),
        }
    }
}

impl std::error::Error for HostError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Transport(e) => Some(e),
            Self::Protocol(_) => None,
        }
    }
}

struct Loop<'a, T: FrameTransport> {
    plant: &'a mut Plant,
    link: &'a T,
    guard: FrameGuard,
    buf: [u8; MAX_FRAME_LEN],
    steps: u64,
    cost_ns: u64,
    late: u64,
    late_frames: u64,
}

/// `Ok(None)`: the peer closed.
type Sent = Result<Option<()>, HostError>;

impl<'a, T: FrameTransport> Loop<'a, T> {
    fn new(plant: &'a mut Plant, link: &'a T) -> Self {
        Self {
            plant,
            link,
            guard: FrameGuard::new(),
            buf: [0; MAX_FRAME_LEN],
            steps: 0,
            cost_ns: 0,
            late: 0,
            late_frames: 0,
        }
    }

    fn send(&mut self, mut frame: StateFrame) -> Sent {
        if self.plant.is_finished() {
            frame.flags = frame.flags.with(StateFlags::FINAL);
        }
        let mut out = [0u8; MAX_FRAME_LEN];
        let n = frame
            .encode(&mut out)
            .map_err(|e| HostError::Protocol(format!("cannot encode state: {e}")))?;
        match self.link.send(out.get(..n).unwrap_or(&out)) {
            Ok(()) => Ok(Some(())),
            Err(TransportError::PeerClosed) => Ok(None),
            Err(e) => Err(HostError::Transport(e)),
        }
    }

    fn step(&mut self, torques: &[f64], torque_sequence: u64) -> StateFrame {
        let frame = self.plant.step_driven_by(torques, torque_sequence);
        self.steps += 1;
        self.cost_ns = self.cost_ns.saturating_add(frame.step_cost_ns);
        frame
    }

    fn summary(&self, end: RunEnd) -> RunSummary {
        RunSummary {
            end,
            steps: self.steps,
            rejected: *self.guard.rejected(),
            late_steps: self.late,
            late_torque_frames: self.late_frames,
            step_cost_total_ns: self.cost_ns,
        }
    }
}

/// Runs `plant` in lockstep with the controller at the other end of `link` until the scene's end
/// or until the controller closes.
pub fn run_lockstep<T: FrameTransport>(
    plant: &mut Plant,
    link: &T,
) -> Result<RunSummary, HostError> {
    let mut l = Loop::new(plant, link);
    let first = l.plant.state_frame();
    if l.send(first)?.is_none() {
        return Ok(l.summary(RunEnd::PeerClosed));
    }
    while !l.plant.is_finished() {
        let k = l.plant.step_index();
        let (torques, torque_sequence) = loop {
            let n = match l.link.recv(&mut l.buf) {
                Ok(n) => n,
                Err(TransportError::PeerClosed) => return Ok(l.summary(RunEnd::PeerClosed)),
                Err(e) => return Err(HostError::Transport(e)),
            };
            let Ok(frame) = l.guard.accept::<TorqueFrame>(l.buf.get(..n).unwrap_or(&[])) else {
                continue;
            };
            if frame.step == k {
                break (frame.torques_nm, frame.sequence);
            }
            if frame.step > k {
                return Err(HostError::Protocol(format!(
                    "torque frame for step {} while the plant waits for step {k}",
                    frame.step
                )));
            }
            // An accepted frame for an earlier step: late, dropped.
            l.late_frames += 1;
        };
        let state = l.step(&torques, torque_sequence);
        if l.send(state)?.is_none() {
            return Ok(l.summary(RunEnd::PeerClosed));
        }
    }
    Ok(l.summary(RunEnd::EndOfScene))
}

/// In real time, the step from t_k to t_(k+1) is computed this long (or dt/10 if longer) before
/// t_(k+1), with the newest torques received by then, and its state is sent at t_(k+1), ns.
pub const REALTIME_LEAD_MIN_NS: u64 = 300_000;

/// Runs `plant` against the wall clock at its dt, holding the newest torques received, until
/// the scene's end or until the controller closes.
pub fn run_realtime<T: FrameTransport>(
    plant: &mut Plant,
    link: &T,
) -> Result<RunSummary, HostError> {
    let dt_ns = (plant.dt_s() * 1e9).round() as u64;
    let lead_ns = (dt_ns / 10).max(REALTIME_LEAD_MIN_NS).min(dt_ns);
    let mut l = Loop::new(plant, link);
    let mut held: heapless::Vec<f64, { control_core::frames::MAX_JOINTS }> = heapless::Vec::new();
    let mut held_sequence = 0u64;
    let t0 = clock::now_ns();
    let first = l.plant.state_frame();
    if l.send(first)?.is_none() {
        return Ok(l.summary(RunEnd::PeerClosed));
    }
    while !l.plant.is_finished() {
        let deadline = t0.saturating_add(l.steps.saturating_add(1).saturating_mul(dt_ns));
        // Step as late as possible, so that torques answering the state just sent still apply
        // to the interval that state starts.
        clock::sleep_until_ns(deadline.saturating_sub(lead_ns));
        // Drain everything that arrived; the newest valid frame wins.
        loop {
            match l.link.try_recv(&mut l.buf) {
                Ok(Some(n)) => {
                    if let Ok(f) = l.guard.accept::<TorqueFrame>(l.buf.get(..n).unwrap_or(&[])) {
                        held = f.torques_nm;
                        held_sequence = f.sequence;
                    }
                }
                Ok(None) => break,
                Err(TransportError::PeerClosed) => return Ok(l.summary(RunEnd::PeerClosed)),
                Err(e) => return Err(HostError::Transport(e)),
            }
        }
        let state = l.step(&held, held_sequence);
        if clock::now_ns() > deadline {
            l.late += 1;
        } else {
            clock::sleep_until_ns(deadline);
        }
        if l.send(state)?.is_none() {
            return Ok(l.summary(RunEnd::PeerClosed));
        }
    }
    Ok(l.summary(RunEnd::EndOfScene))
}

/// Pins the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> std::io::Result<()> {
    if cpu >= 8 * size_of::<libc::cpu_set_t>() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("CPU {cpu} out of range"),
        ));
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes a bit inside it (cpu is in
    // range, checked above); sched_setaffinity only reads it.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// CLOCK_MONOTONIC in ns and absolute sleeps on it.
mod clock {
    fn to_ns(ts: &libc::timespec) -> u64 {
        u64::try_from(ts.tv_sec)
            .unwrap_or(0)
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::try_from(ts.tv_nsec).unwrap_or(0))
    }

    pub fn now_ns() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid timespec to write; CLOCK_MONOTONIC always exists on Linux.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &raw mut ts) };
        to_ns(&ts)
    }

    pub fn sleep_until_ns(t: u64) {
        let ts = libc::timespec {
            tv_sec: libc::time_t::try_from(t / 1_000_000_000).unwrap_or(libc::time_t::MAX),
            tv_nsec: libc::c_long::try_from(t % 1_000_000_000).unwrap_or(0),
        };
        // EINTR: sleep again towards the same absolute deadline.
        // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be null with
        // TIMER_ABSTIME.
        while unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &raw const ts,
                std::ptr::null_mut(),
            )
        } == libc::EINTR
        {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::{ArmSpec, Scene};
    use control_core::frames::TORQUE_FRAME_LEN;
    use transport::SeqPacket;

    fn torque(seq: u64, step: u64, tau: f64) -> [u8; TORQUE_FRAME_LEN] {
        let mut f = TorqueFrame::new(seq, step);
        f.push_torque(tau).unwrap();
        let mut b = [0u8; TORQUE_FRAME_LEN];
        f.encode(&mut b).unwrap();
        b
    }

    #[test]
    fn lockstep_over_a_socket_matches_the_plant_in_process_and_counts_bad_frames() {
        let scene = Scene::new(ArmSpec::BALL_BLOCKING, 0.5);
        let (ctl, host) = SeqPacket::pair().unwrap();
        let s2 = scene.clone();
        let plant_thread = std::thread::spawn(move || {
            let mut plant = Plant::new(&s2).unwrap();
            run_lockstep(&mut plant, &host).unwrap()
        });
        let mut reference = Plant::new(&scene).unwrap();
        let mut buf = [0u8; MAX_FRAME_LEN];
        let mut guard = FrameGuard::new();
        let mut k = 0u64;
        loop {
            let n = ctl.recv(&mut buf).unwrap();
            let state: StateFrame = guard.accept(&buf[..n]).unwrap();
            let expected = if k == 0 {
                reference.state_frame()
            } else {
                reference.step(&[0.5])
            };
            assert_eq!(state.step, k);
            assert_eq!(
                state.joints[0].position_rad.to_bits(),
                expected.joints[0].position_rad.to_bits()
            );
            if state.flags.contains(StateFlags::FINAL) {
                break;
            }
            // A corrupted frame and a repeat of the previous one, both refused.
            if k == 3 {
                let mut bad = torque(k, k, 0.5);
                bad[20] ^= 1;
                ctl.send(&bad).unwrap();
                ctl.send(&torque(k - 1, k - 1, 0.5)).unwrap();
            }
            ctl.send(&torque(k, k, 0.5)).unwrap();
            k += 1;
        }
        let summary = plant_thread.join().unwrap();
        assert_eq!(summary.end, RunEnd::EndOfScene);
        assert_eq!(summary.steps, 100);
        assert_eq!(summary.rejected.checksum, 1);
        assert_eq!(summary.rejected.repeated, 1);
    }

    #[test]
    fn realtime_paces_to_the_wall_clock_and_ends_when_the_peer_closes() {
        let scene = Scene::new(ArmSpec::BALL_BLOCKING, 100.0);
        let (ctl, host) = SeqPacket::pair().unwrap();
        let plant_thread = std::thread::spawn(move || {
            let mut plant = Plant::new(&scene).unwrap();
            run_realtime(&mut plant, &host).unwrap()
        });
        let start = std::time::Instant::now();
        let mut buf = [0u8; MAX_FRAME_LEN];
        let mut last = 0;
        let mut velocities = Vec::new();
        for i in 0..40 {
            let n = ctl.recv(&mut buf).unwrap();
            let state = StateFrame::decode(&buf[..n]).unwrap();
            last = state.step;
            velocities.push(state.joints[0].velocity_rad_s);
            ctl.send(&torque(i, last, 1.0)).unwrap();
        }
        let elapsed = start.elapsed().as_secs_f64();
        drop(ctl);
        let summary = plant_thread.join().unwrap();
        assert_eq!(last, 39);
        // 39 steps of 5 ms after the first state.
        assert!(elapsed > 0.19, "{elapsed}");
        // The answer to state k drives the step from k to k + 1 (this controller answers within
        // microseconds, far inside the 4.5 ms before the plant computes the step).
        let expected = 1.0 / ArmSpec::BALL_BLOCKING.model().inertia_about_hinge_kgm2() * 0.005;
        let driven = velocities
            .windows(2)
            .filter(|w| w[1] - w[0] > 0.5 * expected)
            .count();
        assert!(
            driven >= 35,
            "{driven} of 39 steps had the torque: {velocities:?}"
        );
        assert_eq!(summary.end, RunEnd::PeerClosed);
    }
}
