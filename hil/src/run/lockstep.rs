//! Lockstep: the plant steps only when the torques for its step have arrived, and the controller
//! ticks once per state, on simulated time. Same scenario and seed, bit-identical outputs. The
//! controller runs on this thread, driven by the arrival of states (there is no wall-clock
//! schedule to keep), so a run goes as fast as the plant steps.
//!
//! A plant that dies shows as end-of-file on the socket, one that hangs as no state within the
//! watchdog window: either way the controller's safe state is sent (if the socket still takes
//! it) and the run ends with `plant_lost`.

use std::time::{Duration, Instant};

use control_core::frames::{
    BodyId, Event, MAX_FRAME_LEN, RejectCounts, StateFlags, StateFrame, TORQUE_FRAME_LEN,
    TorqueFlags, TorqueFrame,
};
use transport::{FrameTransport, TransportError};

use super::arm::{ArmCommand, ArmController, ArmState};
use super::report::{BallOutcome, ControllerRun, Faults, Percentiles, Timing};

/// What ended a run early.
#[derive(Debug, Clone)]
pub struct PlantLost {
    /// What happened.
    pub reason: String,
    /// Simulated time of the last state received, s.
    pub at_s: f64,
}

impl PlantLost {
    /// The plant lost because talking to it failed with `error` (a receive that waited
    /// `timeout`, or a send): what happened, and when in simulated time.
    pub fn from_transport(error: &TransportError, rec: &Recorder, timeout: Duration) -> Self {
        let at_s = rec.last_state.map_or(0.0, |s| s.sim_time_s);
        let reason = match error {
            TransportError::PeerClosed => format!(
                "the plant process closed its link before its final state (it exited or crashed) after t = {at_s:.3} s"
            ),
            TransportError::TimedOut => format!(
                "no state from the plant for {} ms after t = {at_s:.3} s (hung)",
                timeout.as_millis()
            ),
            other => format!("transport error after t = {at_s:.3} s: {other}"),
        };
        Self { reason, at_s }
    }
}

/// Records plant events and per-tick figures into a [`ControllerRun`]; shared by both modes.
#[derive(Debug)]
pub struct Recorder {
    /// The run being recorded.
    pub run: ControllerRun,
    round_trips_us: Vec<f64>,
    compute_us: Vec<f64>,
    step_cost_us: Vec<f64>,
    /// The newest state seen.
    pub last_state: Option<ArmState>,
}

impl Recorder {
    /// A recorder for controller `name` with `balls` target balls.
    pub fn new(name: &'static str, balls: usize) -> Self {
        Self {
            run: ControllerRun {
                name,
                balls: vec![BallOutcome::default(); balls],
                ..ControllerRun::default()
            },
            round_trips_us: Vec::new(),
            compute_us: Vec::new(),
            step_cost_us: Vec::new(),
            last_state: None,
        }
    }

    /// Note the events and the step cost of an accepted state frame; returns the arm's state.
    pub fn state(&mut self, frame: &StateFrame) -> Option<ArmState> {
        let t = frame.sim_time_s;
        for event in &frame.events {
            match *event {
                Event::ContactBegan {
                    body: BodyId::Ball(i),
                } => {
                    if let Some(b) = self.run.balls.get_mut(usize::from(i)) {
                        b.contact_s = Some(b.contact_s.map_or(t, |c| c.min(t)));
                    }
                }
                Event::BallCrossedPlane { ball } => {
                    if let Some(b) = self.run.balls.get_mut(usize::from(ball)) {
                        b.crossed_s.get_or_insert(t);
                    }
                }
                Event::ContactBegan {
                    body: BodyId::Weight(_),
                } => self.run.weight_contacts_s.push(t),
                _ => {}
            }
        }
        if frame.step > 0 {
            self.step_cost_us.push(frame.step_cost_ns as f64 / 1e3);
        }
        let joint = frame.joints.first()?;
        let state = ArmState {
            step: frame.step,
            sim_time_s: t,
            angle_rad: joint.position_rad,
            velocity_rad_s: joint.velocity_rad_s,
        };
        self.last_state = Some(state);
        Some(state)
    }

    /// Note one tick's command and its compute time.
    pub fn command(&mut self, cmd: &ArmCommand, compute: Option<Duration>) {
        self.run.samples.push(cmd.sample);
        if cmd.sample.torque_limited {
            self.run.torque_limited_ticks += 1;
        }
        match self
            .run
            .status_counts
            .iter_mut()
            .find(|(s, _)| *s == cmd.sample.status)
        {
            Some((_, n)) => *n += 1,
            None => self.run.status_counts.push((cmd.sample.status, 1)),
        }
        if let Some(c) = compute {
            self.compute_us.push(c.as_secs_f64() * 1e6);
        }
    }

    /// Note one round trip.
    pub fn round_trip(&mut self, d: Duration) {
        self.round_trips_us.push(d.as_secs_f64() * 1e6);
    }

    /// Close the record: percentiles, faults.
    pub fn finish(
        mut self,
        mut timing: Timing,
        mut faults: Faults,
        lost: Option<PlantLost>,
        wall: Duration,
    ) -> ControllerRun {
        timing.round_trip_us = Percentiles::of(&mut self.round_trips_us);
        timing.round_trip_samples_us = self.round_trips_us;
        if timing.compute_us.is_none() {
            timing.compute_us = Some(Percentiles::of(&mut self.compute_us));
        }
        if let Some(l) = lost {
            faults.plant_lost = true;
            faults.plant_lost_reason = Some(l.reason);
            faults.plant_lost_at_s = Some(l.at_s);
        }
        self.run.plant_step_us = Percentiles::of(&mut self.step_cost_us);
        self.run.timing = timing;
        self.run.faults = faults;
        self.run.wall_s = wall.as_secs_f64();
        self.run
    }
}

/// Copy the guard's rejection counts into `faults`, by reason (only the non-zero ones).
pub fn count_rejections(faults: &mut Faults, counts: &RejectCounts) {
    faults.rejected_frames = counts.total();
    faults.rejected_by_reason = [
        ("bad_length", counts.bad_length),
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

/// Encode and send the torque of `cmd` as frame `sequence`.
pub fn send_command<T: FrameTransport>(
    link: &T,
    sequence: u64,
    cmd: &ArmCommand,
) -> Result<(), TransportError> {
    let mut frame = TorqueFrame::new(sequence, cmd.step);
    if cmd.safe {
        frame.flags = TorqueFlags::SAFE_STATE;
    }
    // One joint always fits (MAX_JOINTS ≥ 1).
    let _ = frame.push_torque(cmd.torque_nm);
    let mut buf = [0u8; TORQUE_FRAME_LEN];
    match frame.encode(&mut buf) {
        Ok(n) => link.send(buf.get(..n).unwrap_or(&buf)),
        Err(e) => Err(TransportError::Io(std::io::Error::other(e.to_string()))),
    }
}

/// Run `controller` against the plant on `link` in lockstep until the plant's final state, or
/// until the plant is lost (no state within `watchdog`, or its end closed).
pub fn run<T: FrameTransport>(
    name: &'static str,
    balls: usize,
    mut controller: ArmController,
    link: &T,
    watchdog: Duration,
    mut progress: impl FnMut(f64),
) -> ControllerRun {
    let started = Instant::now();
    let mut rec = Recorder::new(name, balls);
    let mut guard = control_core::frames::FrameGuard::new();
    let mut buf = [0u8; MAX_FRAME_LEN];
    let mut sequence = 0u64;
    let mut last_send: Option<Instant> = None;
    let mut faults = Faults::default();
    let mut lost = None;
    loop {
        let n = match link.recv_timeout(&mut buf, watchdog) {
            Ok(n) => n,
            Err(e) => {
                if matches!(e, TransportError::TimedOut) {
                    faults.watchdog_trips += 1;
                }
                lost = Some(PlantLost::from_transport(&e, &rec, watchdog));
                break;
            }
        };
        let received = Instant::now();
        let frame: StateFrame = match guard.accept(buf.get(..n).unwrap_or(&buf)) {
            Ok(f) => f,
            Err(_) => continue,
        };
        if let Some(sent) = last_send.take() {
            rec.round_trip(received - sent);
        }
        let Some(state) = rec.state(&frame) else {
            continue;
        };
        if frame.flags.contains(StateFlags::FINAL) {
            break;
        }
        progress(state.sim_time_s);
        let t0 = Instant::now();
        let cmd = controller.tick(state);
        rec.command(&cmd, Some(t0.elapsed()));
        sequence += 1;
        if let Err(e) = send_command(link, sequence, &cmd) {
            // A plant that died shows here as often as on the receive side.
            lost = Some(PlantLost::from_transport(&e, &rec, watchdog));
            break;
        }
        last_send = Some(Instant::now());
    }
    if lost.is_some() {
        // The safe state, for the record and for a plant that may still listen.
        if let Some(state) = rec.last_state {
            let cmd = controller.safe(state);
            sequence += 1;
            let _ = send_command(link, sequence, &cmd);
            rec.command(&cmd, None);
        }
        faults.safe_state = true;
    }
    count_rejections(&mut faults, guard.rejected());
    rec.finish(Timing::default(), faults, lost, started.elapsed())
}
