//! One controller's run against one plant process, whatever the mode: what both drivers
//! ([`lockstep`](super::lockstep) and [`realtime`](super::realtime)) share. A session owns the
//! plant's [`FrameLink`], the controller and the recorder; a driver moves states in and torques
//! out until the plant's final state, a lost plant, or a signal; then [`Session::end`] enters the
//! safe state when the run did not finish, and closes the record.
//!
//! The plant is lost when no *usable* state arrives within the watchdog window: a dead plant
//! (end-of-file), a hung one (silence), one that sends only malformed frames (every datagram
//! rejected, counted, and not extending the wait) and one whose well-formed states hil's clock
//! or the controller refuses ([`super::state_check`]: out of order, wrong time, implausible, no
//! joints) end the same way. The watchdog's window starts over only at a state the controller
//! ticks on. Until the plant's first datagram arrives the wait is the start-up allowance
//! ([`STARTUP_GRACE`]); from then on, the plant is up and the window applies.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use control_core::frames::{RejectCounts, StateFrame, TorqueFlags, TorqueFrame};
use transport::{FrameLink, LinkError, SeqPacket};

use super::recorder::{KindRecorder, Recorder, Run};
use super::report::{Faults, SafeState, Timing};
use super::state_check::{Refusal, StateCheck};

/// How long to wait for the plant to show that it applied the safe-state torque.
const SAFE_STATE_ACK_WAIT: Duration = Duration::from_millis(300);
/// The plant's first state may take this long (process start, scene build) if the watchdog
/// window is shorter.
pub const STARTUP_GRACE: Duration = Duration::from_secs(5);
/// Longest single wait on the socket, so that a signal is noticed promptly.
pub const WAIT_SLICE: Duration = Duration::from_millis(50);

/// The signal that asked the run to stop (0: none). Set by a signal handler, read by the
/// drivers between waits.
#[derive(Debug, Clone, Default)]
pub struct StopFlag(Arc<AtomicUsize>);

impl StopFlag {
    /// A flag set by SIGINT and SIGTERM (to the signal's number).
    pub fn on_signals() -> std::io::Result<Self> {
        let flag = Self::default();
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let value = usize::try_from(sig).unwrap_or(0);
            signal_hook::flag::register_usize(sig, Arc::clone(&flag.0), value)?;
        }
        Ok(flag)
    }

    /// The signal received, if any.
    pub fn signal(&self) -> Option<i32> {
        match self.0.load(Ordering::Relaxed) {
            0 => None,
            s => i32::try_from(s).ok(),
        }
    }
}

/// Why a run ended before the plant's final state.
#[derive(Debug, Clone)]
pub enum Cut {
    /// The plant died, hung, or sent nothing usable.
    PlantLost {
        /// What happened.
        reason: String,
    },
    /// SIGINT or SIGTERM.
    Signal(i32),
}

impl Cut {
    /// The plant is lost because talking to it failed with `error`; `at_s` is the simulated
    /// time of the last accepted state (`None`: none ever came), `window` the watchdog's.
    pub fn from_link(error: &LinkError, at_s: Option<f64>, window: Duration) -> Self {
        let when = match at_s {
            Some(t) => format!("after t = {t:.3} s"),
            None => "before its first state".to_owned(),
        };
        let reason = match error {
            LinkError::PeerClosed => format!(
                "the plant process closed its link before its final state (it exited or crashed) {when}"
            ),
            LinkError::TimedOut => format!(
                "no valid state from the plant for {} ms {when} (hung, or sending only frames that were rejected)",
                window.as_millis()
            ),
            other => format!("link error {when}: {other}"),
        };
        Self::PlantLost { reason }
    }

    /// The plant flagged a state final before the scene's end: it ended the run early.
    pub fn early_final(step: u64, clock: super::state_check::RunClock) -> Self {
        Self::PlantLost {
            reason: format!(
                "the plant ended the run early: it sent its final state at step {step} (t = {:.3} s), before the scene's end at step {} (t = {:.3} s)",
                step as f64 * clock.dt_s,
                clock.final_step,
                clock.end_s()
            ),
        }
    }

    /// A line for the console and the report.
    pub fn describe(&self) -> String {
        match self {
            Self::PlantLost { reason } => format!("plant lost: {reason}"),
            Self::Signal(s) => format!("interrupted by {}", signal_name(*s)),
        }
    }
}

/// "SIGINT", "SIGTERM", or the number.
pub fn signal_name(sig: i32) -> String {
    match sig {
        signal_hook::consts::SIGINT => "SIGINT".to_owned(),
        signal_hook::consts::SIGTERM => "SIGTERM".to_owned(),
        other => format!("signal {other}"),
    }
}

/// The plant state a controller ticks on, as decoded from an accepted state frame.
pub trait LoopState: Copy + Default + Send + 'static {
    /// The plant step of this state.
    fn step(&self) -> u64;
    /// The simulated time of this state, s.
    fn sim_time_s(&self) -> f64;
}

/// What a controller answers a state with: the torques for the plant's step, whether they are
/// the safe state's, and (inside) whatever the recorder wants of the tick.
pub trait LoopCommand: Copy + Send + 'static {
    /// The plant step whose state this answers (the torques apply from it on).
    fn step(&self) -> u64;
    /// Whether this is the safe state's output.
    fn is_safe(&self) -> bool;
    /// The joint torques, root first, N·m (at most `frames::MAX_JOINTS`).
    fn torques(&self) -> &[f64];
}

/// A controller that a session drives, in lockstep or on the real-time thread: the same object
/// either way. [`LoopController::tick`] and [`LoopController::safe`] run on the control thread
/// in real time, so they must never allocate, block or panic.
pub trait LoopController: Clone + Send + 'static {
    /// The state it ticks on.
    type State: LoopState;
    /// What a tick returns.
    type Command: LoopCommand;
    /// The state an accepted frame carries (`None`: not one this controller can use).
    fn state_of(frame: &StateFrame) -> Option<Self::State>;
    /// One tick on `state`.
    fn tick(&mut self, state: Self::State) -> Self::Command;
    /// The safe state's output (damping only, torque-limited) for the newest state known.
    fn safe(&self, state: Self::State) -> Self::Command;
    /// Why the controller itself is lost (a controller running elsewhere, e.g. in emulated
    /// firmware, that died, hung or faulted): the drivers then end the run as for a lost plant.
    fn lost(&self) -> Option<String> {
        None
    }
    /// Whether a state from the plant fits this controller (e.g. as many joints as its model);
    /// if not, why. A plant whose states do not fit is as good as lost: the drivers end the run.
    fn accepts(&self, _state: &Self::State) -> Result<(), String> {
        Ok(())
    }
}

/// The torque frame for `cmd`, numbered `sequence`.
pub fn torque_frame(sequence: u64, cmd: &impl LoopCommand) -> TorqueFrame {
    let mut frame = TorqueFrame::new(sequence, cmd.step());
    if cmd.is_safe() {
        frame.flags = TorqueFlags::SAFE_STATE;
    }
    // A controller never commands more joints than a frame carries (its model was checked
    // against the frame's capacity when it was built); any excess is not sent.
    for &t in cmd.torques() {
        if frame.push_torque(t).is_err() {
            break;
        }
    }
    frame
}

/// Copy the guard's rejection counts into `faults`, by reason (only the non-zero ones).
pub fn count_rejections(faults: &mut Faults, counts: &RejectCounts) {
    faults.rejected_frames = counts.total();
    faults.rejected_by_reason = [
        ("bad_length", counts.bad_length),
        ("oversize", counts.oversize),
        ("bad_magic", counts.bad_magic),
        ("wrong_version", counts.wrong_version),
        ("wrong_kind", counts.wrong_kind),
        ("checksum", counts.checksum),
        ("bad_content", counts.bad_content),
        ("non_finite", counts.non_finite),
        ("stale", counts.stale),
        ("repeated", counts.repeated),
    ]
    .into_iter()
    .filter(|(_, n)| *n > 0)
    .map(|(reason, n)| (reason.to_string(), n))
    .collect();
}

/// What an accepted state frame is to a run ([`admit`]).
#[derive(Debug)]
pub enum Admitted<S> {
    /// A state the controller ticks on; `last`: the run's last state (hil's clock says so).
    Tick {
        /// The state.
        state: S,
        /// Whether it is the state at the scene's last step.
        last: bool,
    },
    /// Refused (counted in the check): dropped, and the watchdog keeps running.
    Refused,
    /// The run ends here: the plant ended it early, or its states do not fit the controller.
    Cut(Cut),
}

/// Pass `frame` (accepted by the link) through hil's clock (`check`) and `controller`'s own
/// check. Never allocates unless the run ends.
pub fn admit<C: LoopController>(
    check: &mut StateCheck,
    controller: &C,
    frame: &StateFrame,
) -> Admitted<C::State> {
    let last = match check.check(frame) {
        Ok(last) => last,
        Err(Refusal::EarlyFinal { step }) => {
            return Admitted::Cut(Cut::early_final(step, check.clock()));
        }
        Err(_) => return Admitted::Refused,
    };
    let Some(state) = C::state_of(frame) else {
        check.count_unusable(frame.step);
        return Admitted::Refused;
    };
    match controller.accepts(&state) {
        Ok(()) => Admitted::Tick { state, last },
        Err(reason) => Admitted::Cut(Cut::PlantLost { reason }),
    }
}

/// One controller against one plant.
pub struct Session<C: LoopController, K: KindRecorder<C>> {
    /// The controller.
    pub controller: C,
    /// The plant's link.
    pub link: FrameLink<SeqPacket>,
    /// The record of the run (both drivers feed it).
    pub recorder: Recorder<C, K>,
    /// The plant is lost after this long without an accepted state.
    pub watchdog: Duration,
    /// Set by SIGINT/SIGTERM.
    pub stop: StopFlag,
    /// Sequence number of the newest torque frame sent.
    pub sequence: u64,
    /// hil's clock of the run: every state the link accepted passes it before use.
    pub check: StateCheck,
    started: Instant,
}

impl<C: LoopController, K: KindRecorder<C>> Session<C, K> {
    /// A session over `link`.
    pub fn new(
        controller: C,
        link: FrameLink<SeqPacket>,
        recorder: Recorder<C, K>,
        (watchdog, check): (Duration, StateCheck),
        stop: StopFlag,
    ) -> Self {
        Self {
            controller,
            link,
            recorder,
            watchdog,
            stop,
            sequence: 0,
            check,
            started: Instant::now(),
        }
    }

    /// Wait for the next accepted state until `deadline`, in slices so that a signal is seen
    /// within [`WAIT_SLICE`]. `Err(Ok(signal))` for a signal, `Err(Err(e))` for a link error
    /// (`TimedOut` once `deadline` has passed). While nothing has arrived yet, `deadline` may be
    /// the start-up allowance: the first datagram of any kind (valid or not) shows the plant is
    /// up, and the wait then ends `window` after it at the latest (`deadline` is moved).
    pub fn next_state(
        link: &mut transport::LinkReceiver<'_, SeqPacket>,
        stop: &StopFlag,
        deadline: &mut Instant,
        window: Duration,
    ) -> Result<StateFrame, Result<i32, LinkError>> {
        let mut silent = link.guard().accepted() == 0 && link.rejected().total() == 0;
        loop {
            if let Some(sig) = stop.signal() {
                return Err(Ok(sig));
            }
            if silent && (link.guard().accepted() > 0 || link.rejected().total() > 0) {
                silent = false;
                *deadline = (*deadline).min(Instant::now() + window);
            }
            let deadline = *deadline;
            let slice = deadline.min(Instant::now() + WAIT_SLICE);
            match link.recv_state(slice) {
                Ok(f) => return Ok(f),
                Err(LinkError::TimedOut) if Instant::now() < deadline => {}
                Err(e) => return Err(Err(e)),
            }
        }
    }

    /// The newest state's time, s (`None` before any).
    pub fn last_time_s(&self) -> Option<f64> {
        self.recorder.last_state().map(|s| s.sim_time_s())
    }

    /// After a cut run: send the safe-state torque (damping only, torque-limited) for the newest
    /// state, as the next torque frame, and wait briefly for a state that says the plant
    /// applied it. Returns what happened; `None` when no state ever arrived.
    fn enter_safe_state(&mut self) -> Option<SafeState> {
        // Answer the newest state the plant sent (a lockstep plant waits for the torque of its
        // newest step and would drop one for an older step as late).
        let drain = Instant::now() + Duration::from_millis(2);
        while let Ok(f) = self.link.recv_state(drain) {
            // What the plant sends after the cut is not counted; what passes is recorded.
            if self.check.observe(&f)
                && let Some(state) = C::state_of(&f)
            {
                self.recorder.admitted(&f, state);
            }
        }
        let state = self.recorder.last_state()?;
        let cmd = self.controller.safe(state);
        self.sequence += 1;
        let mut frame = torque_frame(self.sequence, &cmd);
        // Computed from the newest state hil accepted, addressed to the newest step the plant
        // has shown (a lockstep plant waits for that step's torques, and drops older ones as
        // late), so that the plant applies it even after states of its were refused.
        if let Some(step) = self.check.newest_seen_step() {
            frame.step = frame.step.max(step);
        }
        let delivered = self.link.send_torques(&frame).is_ok();
        self.recorder.tick(&cmd, None);
        let mut applied = false;
        if delivered {
            let deadline = Instant::now() + SAFE_STATE_ACK_WAIT;
            let (mut rx, _) = self.link.split();
            while let Ok(f) = rx.recv_state(deadline) {
                if u64::from(f.applied_torque_sequence) == self.sequence & u64::from(u32::MAX) {
                    applied = true;
                    break;
                }
            }
        }
        Some(SafeState {
            sent_at_step: frame.step,
            sent_at_s: frame.step as f64 * self.check.clock().dt_s,
            computed_from_step: state.step(),
            torque_frame_sequence: self.sequence,
            torque_nm: cmd.torques().first().copied().unwrap_or(0.0),
            torques_nm: cmd.torques().to_vec(),
            delivered_to_socket: delivered,
            applied_by_plant: applied,
        })
    }

    /// Close the session: the safe state if the run was cut, the faults, the record.
    pub fn end(mut self, cut: Option<&Cut>, timing: Timing, mut faults: Faults) -> Run<K::Outcome> {
        if cut.is_some() {
            faults.safe_state = self.enter_safe_state();
        }
        if let Some(Cut::PlantLost { reason }) = cut {
            faults.plant_lost = true;
            faults.plant_lost_reason = Some(reason.clone());
            faults.plant_lost_at_s = self.last_time_s();
        }
        count_rejections(&mut faults, self.link.rejected());
        let states = self.check.rejections();
        faults.rejected_frames += states.total();
        faults.rejected_by_reason.extend(
            states
                .by_reason()
                .map(|(reason, n)| (reason.to_string(), n)),
        );
        faults.first_rejected_state = states.first;
        let wall = self.started.elapsed();
        self.recorder.finish(timing, faults, wall)
    }
}
