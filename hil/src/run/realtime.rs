//! Real time: the plant steps against the wall clock at its dt, holding the newest torques
//! (zero-order hold); the controller ticks on its own SCHED_FIFO thread (`runtime`) at the
//! control rate, reading the newest state without waiting and publishing torques without
//! blocking. Two I/O threads bridge the socket and the lock-free exchange: one receives and
//! publishes states, the other sends the torques the control thread produced.
//!
//! The control thread is started right after the plant's first state arrives, so its releases
//! (absolute, drift-free, on the same clock and period as the plant's) keep the phase that lets
//! each torque reach the plant before the step it is computed for. The round trip is measured
//! exactly: every state frame names the torque frame that drove its step.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use control_core::frames::{FrameGuard, MAX_FRAME_LEN, StateFlags, StateFrame};
use runtime::exchange::StateSample;
use runtime::{Clock, Controller, MonotonicClock, PeriodicBuilder, TickInfo};
use transport::FrameTransport;

use super::arm::{ArmCommand, ArmController, ArmState};
use super::lockstep::{PlantLost, Recorder, count_rejections, send_command};
use super::report::{ControllerRun, Faults, Percentiles, Timing};

/// How the control thread runs.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Control period, s.
    pub period_s: f64,
    /// SCHED_FIFO priority.
    pub priority: u8,
    /// CPU to pin the control thread to.
    pub cpu: Option<usize>,
    /// Ticks without a fresh state before the safe state.
    pub watchdog_ticks: u32,
    /// The plant is declared lost after this long without any state.
    pub plant_timeout: Duration,
}

/// The arm controller as the periodic thread drives it.
struct RealTimeArm {
    arm: ArmController,
}

impl Controller for RealTimeArm {
    type State = ArmState;
    type Output = ArmCommand;

    fn tick(&mut self, _tick: &TickInfo, state: Option<StateSample<ArmState>>) -> ArmCommand {
        match state {
            // A state seen before gives the same command again (the plant keeps the newest).
            Some(s) => self.arm.tick(s.value),
            None => self.arm.safe(ArmState::default()),
        }
    }

    fn safe_output(
        &mut self,
        _tick: &TickInfo,
        last_state: Option<StateSample<ArmState>>,
    ) -> ArmCommand {
        self.arm
            .safe(last_state.map(|s| s.value).unwrap_or_default())
    }
}

/// Send instants of recent torque frames, and the plant step each was computed for, by sequence
/// number modulo their length (I/O threads only).
struct SendTimes {
    slots: Vec<AtomicU64>,
    steps: Vec<AtomicU64>,
    start: Instant,
}

impl SendTimes {
    const SLOTS: usize = 4096;

    fn new(start: Instant) -> Self {
        Self {
            slots: (0..Self::SLOTS).map(|_| AtomicU64::new(0)).collect(),
            steps: (0..Self::SLOTS).map(|_| AtomicU64::new(0)).collect(),
            start,
        }
    }

    fn index(sequence: u64) -> usize {
        usize::try_from(sequence % Self::SLOTS as u64).unwrap_or(0)
    }

    fn slot(&self, sequence: u64) -> Option<&AtomicU64> {
        self.slots.get(Self::index(sequence))
    }

    fn sent(&self, sequence: u64, step: u64) {
        let ns = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        if let Some(s) = self.steps.get(Self::index(sequence)) {
            s.store(step, Ordering::Release);
        }
        if let Some(s) = self.slot(sequence) {
            s.store(ns, Ordering::Release);
        }
    }

    /// The plant step torque frame `sequence` was computed for.
    fn step_of(&self, sequence: u64) -> Option<u64> {
        Some(
            self.steps
                .get(Self::index(sequence))?
                .load(Ordering::Acquire),
        )
    }

    /// Time since torque frame `sequence` was sent, if it was sent recently.
    fn since(&self, sequence: u64) -> Option<Duration> {
        let sent = self.slot(sequence)?.load(Ordering::Acquire);
        let now = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        (sent > 0 && now >= sent).then(|| Duration::from_nanos(now - sent))
    }
}

/// Run `controller` against the real-time plant on `link` until its final state, or until the
/// plant is lost.
pub fn run<T: FrameTransport + Sync>(
    name: &'static str,
    balls: usize,
    controller: ArmController,
    link: &T,
    settings: Settings,
    mut progress: impl FnMut(f64),
) -> Result<ControllerRun, Box<dyn std::error::Error>> {
    let started = Instant::now();
    let mut rec = Recorder::new(name, balls);
    let mut guard = FrameGuard::new();
    let mut buf = [0u8; MAX_FRAME_LEN];
    let mut faults = Faults::default();
    let mut lost: Option<PlantLost> = None;

    // The plant's first state, before the control thread starts (phase alignment).
    let first: StateFrame = loop {
        let n = link
            .recv_timeout(&mut buf, settings.plant_timeout)
            .map_err(|e| format!("no first state from the plant: {e}"))?;
        if let Ok(f) = guard.accept(buf.get(..n).unwrap_or(&buf)) {
            break f;
        }
    };
    let arrived_ns = MonotonicClock.now_ns();
    let first_state = rec
        .state(&first)
        .ok_or("the plant's first state has no joint")?;

    let (mut io, control) = runtime::channels::<ArmState, ArmCommand>(64);
    io.states.publish(first_state);
    // Tick a little after each state arrives (the plant sends one per period on the same
    // clock): every tick then reads a fresh state and its torque reaches the plant well before
    // the step it is for.
    let period = Duration::from_secs_f64(settings.period_s);
    let offset_ns =
        u64::try_from((period / 4).min(Duration::from_micros(500)).as_nanos()).unwrap_or(0);
    let mut builder = PeriodicBuilder::new(period)
        .phase_anchor_ns(arrived_ns.saturating_add(offset_ns))
        .priority(settings.priority)
        .watchdog_ticks(u64::from(settings.watchdog_ticks))
        .name("hil-control");
    if let Some(cpu) = settings.cpu {
        builder = builder.cpu(cpu);
    }
    let handle = builder.spawn(RealTimeArm { arm: controller }, control)?;
    let send_times = SendTimes::new(started);
    let done = AtomicBool::new(false);
    // Set once the plant's final state arrived: it closes its end then, so later sends fail
    // by design and say nothing about the plant.
    let plant_finished = AtomicBool::new(false);
    let send_failed = AtomicBool::new(false);

    let (samples, outcome, stale_torque_steps) = std::thread::scope(|scope| {
        // Sender: torques from the control thread to the plant.
        let sender = scope.spawn(|| {
            let mut outputs = io.outputs;
            let mut sent: Vec<ArmCommand> = Vec::new();
            let mut sequence = 0u64;
            let mut last_step = None;
            loop {
                let Some(out) = outputs.recv_timeout(Duration::from_millis(20)) else {
                    if done.load(Ordering::Acquire) {
                        break;
                    }
                    continue;
                };
                let cmd = out.value;
                sequence += 1;
                if send_command(link, sequence, &cmd).is_err()
                    && !plant_finished.load(Ordering::Acquire)
                {
                    send_failed.store(true, Ordering::Release);
                }
                send_times.sent(sequence, cmd.step);
                // One record per plant state (a repeated state gives a repeated command), and
                // every safe-state output.
                if last_step != Some(cmd.step) || cmd.safe {
                    sent.push(cmd);
                    last_step = Some(cmd.step);
                }
            }
            sent
        });

        // Receiver (this thread): states from the plant to the control thread.
        let mut states = io.states;
        let mut last_applied = 0u32;
        let mut stale_torque_steps = 0u64;
        loop {
            let n = match link.recv_timeout(&mut buf, settings.plant_timeout) {
                Ok(n) => n,
                Err(e) => {
                    lost = Some(PlantLost::from_transport(&e, &rec, settings.plant_timeout));
                    break;
                }
            };
            let Ok(frame) = guard.accept::<StateFrame>(buf.get(..n).unwrap_or(&buf)) else {
                continue;
            };
            // Our sequence numbers stay far below 2^32 in any run.
            let applied = u64::from(frame.applied_torque_sequence);
            if applied != 0 {
                // The step that produced this state started from state `frame.step − 1`: a torque
                // computed from an older state drove it (it arrived too late, or none came).
                if send_times
                    .step_of(applied)
                    .is_some_and(|s| s.saturating_add(1) < frame.step)
                {
                    stale_torque_steps += 1;
                }
                if frame.applied_torque_sequence != last_applied {
                    last_applied = frame.applied_torque_sequence;
                    if let Some(d) = send_times.since(applied) {
                        rec.round_trip(d);
                    }
                }
            }
            let Some(state) = rec.state(&frame) else {
                continue;
            };
            if frame.flags.contains(StateFlags::FINAL) {
                plant_finished.store(true, Ordering::Release);
                break;
            }
            states.publish(state);
            progress(state.sim_time_s);
        }
        if lost.is_some() {
            // Let the watchdog put the controller in its safe state before stopping it.
            let wait = Instant::now();
            while !handle.live().watchdog_tripped() && wait.elapsed() < Duration::from_millis(200) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let outcome = handle.stop();
        done.store(true, Ordering::Release);
        let samples = sender.join().unwrap_or_default();
        (samples, outcome, stale_torque_steps)
    });
    let outcome = outcome.map_err(|_| "the control thread panicked")?;
    for cmd in &samples {
        rec.command(cmd, None);
    }
    let report = &outcome.report;
    let counters = &report.counters;
    faults.watchdog_trips = counters.watchdog_trips;
    faults.safe_state = counters.safe_ticks > 0;
    count_rejections(&mut faults, guard.rejected());
    let summary = |s: &runtime::LatencySummary| Percentiles {
        min: s.min,
        p50: s.p50,
        p99: s.p99,
        p999: s.p999,
        max: s.max,
        count: usize::try_from(s.count).unwrap_or(usize::MAX),
    };
    let timing = Timing {
        wake_latency_us: Some(summary(&report.wake_latency_us)),
        compute_us: Some(summary(&report.compute_us)),
        deadline_misses: Some(counters.deadline_misses),
        skipped_releases: Some(counters.skipped_releases),
        sched_fifo: Some(report.sched_fifo),
        stale_torque_steps: Some(stale_torque_steps),
        wake_latencies_us: outcome
            .log
            .iter()
            .map(|r| r.wake_latency_ns as f64 / 1e3)
            .collect(),
        warnings: report.warnings.clone(),
        ..Timing::default()
    };
    // A run that ended with the plant's final state is complete, whatever the sender saw
    // after the plant closed (the final state may still have been unread when a send failed).
    if send_failed.load(Ordering::Acquire)
        && lost.is_none()
        && !plant_finished.load(Ordering::Acquire)
    {
        lost = Some(PlantLost {
            reason: "cannot send torques to the plant".into(),
            at_s: rec.last_state.map_or(0.0, |s| s.sim_time_s),
        });
    }
    Ok(rec.finish(timing, faults, lost, started.elapsed()))
}
