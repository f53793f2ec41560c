//! The plant process's two loops: [`run_lockstep`] and [`run_realtime`], each driving a plant
//! over a [`FrameLink`] (any [`FrameTransport`]). A plant is anything that implements
//! [`HostedPlant`]: the arm ([`Plant`]), any robot ([`crate::robot::RobotPlant`]), the biped and the
//! humanoid all do, and the loops are the same for all.
//!
//! - Lockstep (bit-deterministic): send the state of step 0; then for each step k wait for the
//!   torque frame meant for step k, step, send the state of step k + 1. Torque frames for earlier
//!   steps are dropped (counted in [`RunSummary::late_torque_frames`]); one for a later step is a
//!   protocol error. A frame for step k refused for its torque (below) still answers step k: the
//!   plant steps with the torques it holds (those of the last frame it applied, zero before any)
//!   and the state's `applied_torque_sequence` names that frame, not the refused one.
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
//! closes ends the run cleanly ([`RunEnd::PeerClosed`]). Torque frames that are malformed,
//! oversize (longer than any frame), non-finite, stale or repeated are refused by the link and
//! counted by reason ([`RunSummary::rejected`]); a frame with any torque beyond its limit (the arm
//! scene's `arm.torque_limit_nm`, a robot joint's URDF `<limit effort>`: |τ| > limit, as
//! [`HostedPlant::check_torques`] judges) is refused whole and counted
//! ([`RunSummary::over_limit_torque_frames`]). Every state frame carries both running totals
//! (`plant_rejected_frames`: all refusals; `plant_over_limit_frames`: the over-limit ones), so
//! the controller can report them from the newest state; the summary line says them too.
//!
//! Never does: apply a torque frame that failed a check, clamp a torque, end a run because of
//! what the controller sent (garbage is counted, not fatal; only a frame for a future step in
//! lockstep is), block on the controller in real time.

use std::fmt;

use control_core::frames::{MAX_JOINTS, RejectCounts, StateFlags, StateFrame, TorqueFrame};
use transport::{FrameLink, FrameTransport, LinkError};

use crate::clock::PlantClock;
use crate::plant::Plant;

/// What the host loops need of a plant: its current state as a frame, one step with given
/// torques, its torque limits, and its clock (steps of dt up to an end). Implemented by the arm
/// ([`Plant`]), the SIMBICON biped
/// ([`crate::biped::BipedPlant`]), the humanoid and the robot plant
/// ([`crate::robot::RobotPlant`]) by their inherent methods. How a torque frame drives a step
/// is one rule for all of them ([`HostedPlant::step_driven_by`]).
pub trait HostedPlant {
    /// The state frame of the current state (sequence number = step index).
    fn state_frame(&mut self) -> StateFrame;
    /// One physics step with `torques_nm` held for the step (a missing value is 0); returns the
    /// new state's frame, which names no torque frame. Applies what it is given: the limits are
    /// the caller's to check ([`HostedPlant::check_torques`]).
    fn advance(&mut self, torques_nm: &[f64]) -> StateFrame;
    /// `Err((index, torque))` names the first torque beyond its limit; a frame that fails is
    /// refused whole by the loops.
    fn check_torques(&self, torques_nm: &[f64]) -> Result<(), (usize, f64)>;
    /// The plant's clock: the current state's index, the step, the run's length.
    fn clock(&self) -> &PlantClock;
    /// One physics step driven by the torque frame with sequence number `torque_sequence` (0:
    /// none) and values `torques_nm`: the values if [`HostedPlant::check_torques`] passes them,
    /// the new state's frame then naming the frame (`applied_torque_sequence`, its low 32 bits);
    /// else zero torques, the frame naming none (0). The loops only hold frames that passed.
    fn step_driven_by(&mut self, torques_nm: &[f64], torque_sequence: u64) -> StateFrame {
        if self.check_torques(torques_nm).is_ok() {
            self.step_checked(torques_nm, torque_sequence)
        } else {
            self.advance(&[])
        }
    }
    /// [`HostedPlant::step_driven_by`] for torques that passed [`HostedPlant::check_torques`]
    /// already (the loops check a frame once, when it arrives): applied, the frame named.
    fn step_checked(&mut self, torques_nm: &[f64], torque_sequence: u64) -> StateFrame {
        let mut frame = self.advance(torques_nm);
        // The low 32 bits, as the frame documents.
        frame.applied_torque_sequence = (torque_sequence & u64::from(u32::MAX)) as u32;
        frame
    }
}

impl HostedPlant for Plant {
    fn state_frame(&mut self) -> StateFrame {
        Plant::state_frame(self)
    }
    fn advance(&mut self, torques_nm: &[f64]) -> StateFrame {
        Plant::step(self, torques_nm)
    }
    fn check_torques(&self, torques_nm: &[f64]) -> Result<(), (usize, f64)> {
        Plant::check_torques(self, torques_nm)
    }
    fn clock(&self) -> &PlantClock {
        Plant::clock(self)
    }
}

impl HostedPlant for crate::humanoid::HumanoidPlant {
    fn state_frame(&mut self) -> StateFrame {
        crate::humanoid::HumanoidPlant::state_frame(self)
    }
    fn advance(&mut self, torques_nm: &[f64]) -> StateFrame {
        crate::humanoid::HumanoidPlant::advance(self, torques_nm)
    }
    fn check_torques(&self, torques_nm: &[f64]) -> Result<(), (usize, f64)> {
        crate::humanoid::HumanoidPlant::check_torque_slice(self, torques_nm)
    }
    fn clock(&self) -> &PlantClock {
        crate::humanoid::HumanoidPlant::clock(self)
    }
}

impl HostedPlant for crate::biped::BipedPlant {
    fn state_frame(&mut self) -> StateFrame {
        crate::biped::BipedPlant::state_frame(self)
    }
    fn advance(&mut self, torques_nm: &[f64]) -> StateFrame {
        crate::biped::BipedPlant::advance(self, torques_nm)
    }
    fn check_torques(&self, torques_nm: &[f64]) -> Result<(), (usize, f64)> {
        crate::biped::BipedPlant::check_torque_slice(torques_nm)
    }
    fn clock(&self) -> &PlantClock {
        crate::biped::BipedPlant::clock(self)
    }
}

impl HostedPlant for crate::robot::RobotPlant {
    fn state_frame(&mut self) -> StateFrame {
        crate::robot::RobotPlant::state_frame(self)
    }
    fn advance(&mut self, torques_nm: &[f64]) -> StateFrame {
        crate::robot::RobotPlant::step(self, torques_nm)
    }
    fn check_torques(&self, torques_nm: &[f64]) -> Result<(), (usize, f64)> {
        crate::robot::RobotPlant::check_torques(self, torques_nm)
    }
    fn clock(&self) -> &PlantClock {
        crate::robot::RobotPlant::clock(self)
    }
}

/// The one rule every plant with a per-joint limit applies to a torque frame's values:
/// `Err((index, value))` names the first value it refuses: NaN, |τ| beyond its joint's limit
/// (`limit(i)` = `Some`), or a value other than exactly 0 for a joint the plant does not have
/// (`None`). A value of exactly the limit passes; nothing is clamped.
pub fn first_refused_torque(
    torques_nm: &[f64],
    limit: impl Fn(usize) -> Option<f64>,
) -> Result<(), (usize, f64)> {
    let refused = |(i, &t): (usize, &f64)| match limit(i) {
        Some(limit) => t.is_nan() || t.abs() > limit,
        None => t != 0.0,
    };
    match torques_nm.iter().enumerate().position(refused) {
        Some(i) => Err((i, torques_nm.get(i).copied().unwrap_or(f64::NAN))),
        None => Ok(()),
    }
}

/// The two ways to run the loop (docs/ARCHITECTURE.md, "The two modes"). the plant's and the harness's one mode type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Step only when the torques for the step have arrived; simulated time.
    Lockstep,
    /// Step against the wall clock, zero-order hold on torques.
    Realtime,
}

impl Mode {
    /// Both modes, lockstep first.
    pub const ALL: [Self; 2] = [Self::Lockstep, Self::Realtime];

    /// The mode's name on command lines and in reports: `"lockstep"` or `"realtime"` (what
    /// [`str::parse`] reads back).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Lockstep => "lockstep",
            Self::Realtime => "realtime",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
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
    /// Torque frames the link refused, by reason (oversize datagrams under `oversize`).
    pub rejected: RejectCounts,
    /// Torque frames refused for a torque beyond its limit (not in `rejected`).
    pub over_limit_torque_frames: u64,
    /// Real time only: steps whose state was ready after its deadline.
    pub late_steps: u64,
    /// Lockstep only: valid torque frames for a step already taken (dropped).
    pub late_torque_frames: u64,
    /// Total wall-clock cost of the physics steps, ns.
    pub step_cost_total_ns: u64,
}

impl RunSummary {
    /// Every torque frame refused, for any reason: what the last state frame's
    /// `plant_rejected_frames` says (unless it saturated).
    pub const fn refused_torque_frames(&self) -> u64 {
        self.rejected
            .total()
            .saturating_add(self.over_limit_torque_frames)
    }
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
            "{} after {} steps; mean step cost {mean_us:.1} µs; rejected torque frames {} (over the torque limit {}, oversize {}); late torque frames {}; late steps {}",
            match self.end {
                RunEnd::EndOfScene => "end of scene",
                RunEnd::PeerClosed => "controller closed the connection",
            },
            self.steps,
            self.refused_torque_frames(),
            self.over_limit_torque_frames,
            self.rejected.oversize,
            self.late_torque_frames,
            self.late_steps
        )
    }
}

/// Why a run failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum HostError {
    /// The link failed (other than the peer closing).
    Link(LinkError),
    /// The controller broke the lockstep protocol.
    Protocol(String),
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Link(e) => write!(f, "link error: {e}"),
            Self::Protocol(m) => write!(f, "protocol error: {m}"),
        }
    }
}

impl std::error::Error for HostError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Link(e) => Some(e),
            Self::Protocol(_) => None,
        }
    }
}

struct Loop<'a, P: HostedPlant + ?Sized, T: FrameTransport> {
    plant: &'a mut P,
    link: &'a mut FrameLink<T>,
    /// The torques of the last frame applied, and its sequence number (0: none yet).
    held: heapless::Vec<f64, MAX_JOINTS>,
    held_sequence: u64,
    over_limit: u64,
    steps: u64,
    cost_ns: u64,
    late: u64,
    late_frames: u64,
}

/// `Ok(None)`: the peer closed.
type Sent = Result<Option<()>, HostError>;

impl<'a, P: HostedPlant + ?Sized, T: FrameTransport> Loop<'a, P, T> {
    fn new(plant: &'a mut P, link: &'a mut FrameLink<T>) -> Self {
        Self {
            plant,
            link,
            held: heapless::Vec::new(),
            held_sequence: 0,
            over_limit: 0,
            steps: 0,
            cost_ns: 0,
            late: 0,
            late_frames: 0,
        }
    }

    /// Sends `frame` with the final flag (at the scene's end) and the running refusal counts.
    fn send(&mut self, mut frame: StateFrame) -> Sent {
        if self.plant.clock().is_finished() {
            frame.flags = frame.flags.with(StateFlags::FINAL);
        }
        let all = self.link.rejected().total().saturating_add(self.over_limit);
        frame.plant_rejected_frames = u32::try_from(all).unwrap_or(u32::MAX);
        frame.plant_over_limit_frames = u32::try_from(self.over_limit).unwrap_or(u32::MAX);
        match self.link.send_state(&frame) {
            Ok(()) => Ok(Some(())),
            Err(LinkError::PeerClosed) => Ok(None),
            Err(e) => Err(HostError::Link(e)),
        }
    }

    /// Whether `frame`'s torques are within the plant's limits; counts it refused if not.
    fn within_limit(&mut self, frame: &TorqueFrame) -> bool {
        let ok = self.plant.check_torques(&frame.torques_nm).is_ok();
        if !ok {
            self.over_limit = self.over_limit.saturating_add(1);
        }
        ok
    }

    fn hold(&mut self, frame: TorqueFrame) {
        self.held = frame.torques_nm;
        self.held_sequence = frame.sequence;
    }

    /// One physics step with the held torques (checked when their frame arrived).
    fn step(&mut self) -> StateFrame {
        let frame = self.plant.step_checked(&self.held, self.held_sequence);
        self.steps += 1;
        self.cost_ns = self.cost_ns.saturating_add(frame.step_cost_ns);
        frame
    }

    fn summary(&self, end: RunEnd) -> RunSummary {
        RunSummary {
            end,
            steps: self.steps,
            rejected: *self.link.rejected(),
            over_limit_torque_frames: self.over_limit,
            late_steps: self.late,
            late_torque_frames: self.late_frames,
            step_cost_total_ns: self.cost_ns,
        }
    }
}

/// Runs `plant` in lockstep with the controller at the other end of `link` until the scene's end
/// or until the controller closes.
pub fn run_lockstep<P: HostedPlant + ?Sized, T: FrameTransport>(
    plant: &mut P,
    link: &mut FrameLink<T>,
) -> Result<RunSummary, HostError> {
    let mut l = Loop::new(plant, link);
    let first = l.plant.state_frame();
    if l.send(first)?.is_none() {
        return Ok(l.summary(RunEnd::PeerClosed));
    }
    while !l.plant.clock().is_finished() {
        let k = l.plant.clock().step_index();
        loop {
            let frame = match l.link.recv_torques(None) {
                Ok(f) => f,
                Err(LinkError::PeerClosed) => return Ok(l.summary(RunEnd::PeerClosed)),
                Err(e) => return Err(HostError::Link(e)),
            };
            if frame.step > k {
                return Err(HostError::Protocol(format!(
                    "torque frame for step {} while the plant waits for step {k}",
                    frame.step
                )));
            }
            let applicable = l.within_limit(&frame);
            if frame.step == k {
                // Refused for its torque: it still answers step k, which runs on the held
                // torques.
                if applicable {
                    l.hold(frame);
                }
                break;
            }
            if applicable {
                // An accepted frame for an earlier step: late, dropped.
                l.late_frames += 1;
            }
        }
        let state = l.step();
        if l.send(state)?.is_none() {
            return Ok(l.summary(RunEnd::PeerClosed));
        }
    }
    Ok(l.summary(RunEnd::EndOfScene))
}

/// In real time, the step from t_k to t_(k+1) is computed this long (or dt/10 if longer) before
/// t_(k+1), with the newest torques received by then, and its state is sent at t_(k+1), ns.
pub const REALTIME_LEAD_MIN_NS: u64 = 300_000;

/// Runs `plant` against the wall clock at its dt, holding the newest torques received (and
/// within the limit), until the scene's end or until the controller closes.
pub fn run_realtime<P: HostedPlant + ?Sized, T: FrameTransport>(
    plant: &mut P,
    link: &mut FrameLink<T>,
) -> Result<RunSummary, HostError> {
    let dt_ns = (plant.clock().dt_s() * 1e9).round() as u64;
    let lead_ns = (dt_ns / 10).max(REALTIME_LEAD_MIN_NS).min(dt_ns);
    let mut l = Loop::new(plant, link);
    let t0 = clock::now_ns();
    let first = l.plant.state_frame();
    if l.send(first)?.is_none() {
        return Ok(l.summary(RunEnd::PeerClosed));
    }
    while !l.plant.clock().is_finished() {
        let deadline = t0.saturating_add(l.steps.saturating_add(1).saturating_mul(dt_ns));
        // Step as late as possible, so that torques answering the state just sent still apply
        // to the interval that state starts.
        clock::sleep_until_ns(deadline.saturating_sub(lead_ns));
        // Drain everything that arrived; the newest frame within the limit wins.
        loop {
            match l.link.try_recv_torques() {
                Ok(Some(f)) => {
                    if l.within_limit(&f) {
                        l.hold(f);
                    }
                }
                Ok(None) => break,
                Err(LinkError::PeerClosed) => return Ok(l.summary(RunEnd::PeerClosed)),
                Err(e) => return Err(HostError::Link(e)),
            }
        }
        let state = l.step();
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
    use control_core::frames::{FrameGuard, MAX_FRAME_LEN, TORQUE_FRAME_LEN};
    use transport::SeqPacket;

    /// The one torque rule: NaN and |τ| beyond the joint's limit refused, exactly the limit
    /// passes, any value but ±0 refused for a joint the plant does not have; the first refused
    /// value is named.
    #[test]
    fn the_torque_rule_names_the_first_refused_value() {
        let two = |i: usize| (i < 2).then_some(10.0);
        assert_eq!(first_refused_torque(&[10.0, -10.0, 0.0, -0.0], two), Ok(()));
        assert_eq!(first_refused_torque(&[], two), Ok(()));
        assert_eq!(
            first_refused_torque(&[1.0, -10.5, f64::NAN], two),
            Err((1, -10.5))
        );
        let e = first_refused_torque(&[f64::NAN], two).unwrap_err();
        assert!(e.0 == 0 && e.1.is_nan());
        assert_eq!(
            first_refused_torque(&[0.0, 0.0, 1e-300], two),
            Err((2, 1e-300))
        );
        let e = first_refused_torque(&[0.0, 0.0, f64::NAN], two).unwrap_err();
        assert!(e.0 == 2 && e.1.is_nan());
        assert_eq!(
            first_refused_torque(&[5.0, f64::INFINITY], |_| Some(f64::MAX)),
            Err((1, f64::INFINITY))
        );
    }

    fn torque(seq: u64, step: u64, tau: f64) -> [u8; TORQUE_FRAME_LEN] {
        let mut f = TorqueFrame::new(seq, step);
        f.push_torque(tau).unwrap();
        let mut b = [0u8; TORQUE_FRAME_LEN];
        f.encode(&mut b).unwrap();
        b
    }

    #[test]
    fn modes_have_one_name_each_way() {
        for m in Mode::ALL {
            assert_eq!(m.name().parse::<Mode>(), Ok(m));
            assert_eq!(m.to_string(), m.name());
        }
        assert_eq!(Mode::Realtime.name(), "realtime");
        assert!("Lockstep".parse::<Mode>().is_err());
    }

    /// Lockstep over a socket gives the in-process plant's states bit for bit while bad frames
    /// of every kind are refused, counted by reason and reported in every later state: a
    /// corrupted frame, a repeat, a 4096-byte datagram, a torque of 1e300 (refused whole; the
    /// step runs on the held torques) and, applied, a torque of exactly the limit.
    #[test]
    fn lockstep_over_a_socket_matches_the_plant_in_process_and_counts_bad_frames() {
        let scene = Scene::new(ArmSpec::EXAMPLE, 0.5);
        let limit = scene.arm.torque_limit_nm;
        let (ctl, host) = SeqPacket::pair().unwrap();
        let s2 = scene.clone();
        let plant_thread = std::thread::spawn(move || {
            let mut plant = Plant::new(&s2).unwrap();
            run_lockstep(&mut plant, &mut FrameLink::new(host)).unwrap()
        });
        let mut reference = Plant::new(&scene).unwrap();
        let mut buf = [0u8; MAX_FRAME_LEN];
        let mut guard = FrameGuard::new();
        let mut k = 0u64;
        let mut held = (0.0, 0u64);
        let mut counts = (0u32, 0u32);
        loop {
            let n = ctl.recv(&mut buf).unwrap();
            let state: StateFrame = guard.accept(&buf[..n]).unwrap();
            let expected = if k == 0 {
                reference.state_frame()
            } else {
                reference.step(&[held.0])
            };
            assert_eq!(state.step, k);
            assert_eq!(
                state.joints[0].position_rad.to_bits(),
                expected.joints[0].position_rad.to_bits()
            );
            assert!(state.joints[0].velocity_rad_s.is_finite());
            assert_eq!(u64::from(state.applied_torque_sequence), held.1);
            assert_eq!(
                (state.plant_rejected_frames, state.plant_over_limit_frames),
                counts,
                "step {k}"
            );
            if state.flags.contains(StateFlags::FINAL) {
                break;
            }
            let mut tau = 0.5;
            match k {
                3 => {
                    // A corrupted frame and a repeat of the previous one, both refused.
                    let mut bad = torque(k, k, 0.5);
                    bad[20] ^= 1;
                    ctl.send(&bad).unwrap();
                    ctl.send(&torque(k - 1, k - 1, 0.5)).unwrap();
                    counts.0 += 2;
                }
                5 => {
                    ctl.send(&[0x55; 4096]).unwrap();
                    counts.0 += 1;
                }
                7 => tau = -limit,
                9 => tau = 1e300,
                11 => tau = limit * (1.0 + f64::EPSILON),
                _ => {}
            }
            ctl.send(&torque(k, k, tau)).unwrap();
            if tau.abs() > limit {
                counts.0 += 1;
                counts.1 += 1;
            } else {
                held = (tau, k);
            }
            k += 1;
        }
        let summary = plant_thread.join().unwrap();
        assert_eq!(summary.end, RunEnd::EndOfScene);
        assert_eq!(summary.steps, 100);
        assert_eq!(summary.rejected.checksum, 1);
        assert_eq!(summary.rejected.repeated, 1);
        assert_eq!(summary.rejected.oversize, 1);
        assert_eq!(summary.rejected.total(), 3);
        assert_eq!(summary.over_limit_torque_frames, 2);
        assert_eq!(summary.refused_torque_frames(), 5);
        assert_eq!(counts, (5, 2));
        let line = summary.to_string();
        assert!(
            line.contains("rejected torque frames 5 (over the torque limit 2, oversize 1)"),
            "{line}"
        );
    }

    #[test]
    fn realtime_paces_to_the_wall_clock_and_ends_when_the_peer_closes() {
        let scene = Scene::new(ArmSpec::EXAMPLE, 100.0);
        let (ctl, host) = SeqPacket::pair().unwrap();
        let plant_thread = std::thread::spawn(move || {
            let mut plant = Plant::new(&scene).unwrap();
            run_realtime(&mut plant, &mut FrameLink::new(host)).unwrap()
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
        let expected = 1.0 / ArmSpec::EXAMPLE.model().inertia_about_hinge_kgm2() * 0.005;
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

    /// In real time a frame over the limit is refused and not held: the plant keeps the torques
    /// it had, and the states count the refusal.
    #[test]
    fn realtime_refuses_torques_over_the_limit_and_keeps_the_held_ones() {
        let mut scene = Scene::new(ArmSpec::EXAMPLE, 100.0);
        scene.arm.gravity_m_s2 = 0.0;
        scene.arm.initial_angle_rad = 0.0;
        let (ctl, host) = SeqPacket::pair().unwrap();
        let plant_thread = std::thread::spawn(move || {
            let mut plant = Plant::new(&scene).unwrap();
            run_realtime(&mut plant, &mut FrameLink::new(host)).unwrap()
        });
        let mut buf = [0u8; MAX_FRAME_LEN];
        let mut newest = None;
        for i in 0..30u64 {
            let n = ctl.recv(&mut buf).unwrap();
            let state = StateFrame::decode(&buf[..n]).unwrap();
            newest = Some(state);
            // Frame 1 is within the limit; every later one is not.
            let tau = if i == 1 { 2.0 } else { -1e300 };
            if i >= 1 {
                ctl.send(&torque(i, i, tau)).unwrap();
            }
        }
        drop(ctl);
        let summary = plant_thread.join().unwrap();
        let s = newest.unwrap();
        assert_eq!(
            summary.over_limit_torque_frames,
            summary.refused_torque_frames()
        );
        assert!(s.plant_over_limit_frames >= 25, "{s:?}");
        assert_eq!(s.plant_over_limit_frames, s.plant_rejected_frames);
        // Only frame 1 was ever applied, and it is still held: the arm keeps speeding up
        // counter-clockwise, finitely.
        assert_eq!(s.applied_torque_sequence, 1);
        assert!(s.joints[0].velocity_rad_s > 0.0 && s.joints[0].velocity_rad_s.is_finite());
    }
}
