//! Real time: the plant steps against the wall clock at its dt, holding the newest torques
//! (zero-order hold); the controller ticks on its own SCHED_FIFO thread (`runtime`) at the
//! control rate, reading the newest state without waiting and publishing torques without
//! blocking. Two I/O threads bridge the socket and the lock-free exchange (this one receives and
//! publishes states; a second sends the torques the control thread produced), and a recorder
//! thread takes the records both hand it over a bounded channel (`try_send`: they never block
//! on it; a full channel drops the record and counts it).
//!
//! The control thread is started right after the plant's first state arrives, so its releases
//! (absolute, drift-free, on the same clock) keep the phase that lets each torque reach the plant
//! before the step it is computed for. Its gains are clamped for the period at which fresh states
//! arrive (the slower of the control period and the physics step), and its watchdog counts that
//! period, not control ticks: ticking at 1 kHz on a 5 ms plant sees a fresh state every 5 ticks.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use control_core::frames::StateFrame;
use crossbeam_channel::{Receiver, Sender};
use runtime::exchange::StateSample;
use runtime::{Clock, Controller, MonotonicClock, PeriodicBuilder, TickInfo};

use super::recorder::{KindRecorder, Recorder};
use super::report::{Faults, Percentiles, Timing};
use super::session::{
    Admitted, Cut, LoopCommand, LoopController, LoopState, Session, admit, torque_frame,
};

/// How the control thread runs.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Control period, s.
    pub control_period_s: f64,
    /// The period at which fresh states arrive, s (≥ the control period).
    pub state_period_s: f64,
    /// SCHED_FIFO priority (0: normal scheduling).
    pub priority: u8,
    /// CPU to pin the control thread to.
    pub cpu: Option<usize>,
    /// State periods without a fresh state before the safe state.
    pub watchdog_state_periods: u32,
}

impl Settings {
    /// The watchdog in control ticks: `watchdog_state_periods` state periods, rounded up.
    pub fn watchdog_ticks(&self) -> u64 {
        let ticks_per_state = (self.state_period_s / self.control_period_s).max(1.0);
        // Both periods are validated finite and positive: the product is small and finite.
        (f64::from(self.watchdog_state_periods) * ticks_per_state).ceil() as u64
    }
}

/// A session's controller as the periodic thread drives it.
pub(crate) struct OnThread<C>(pub(crate) C);

impl<C: LoopController> Controller for OnThread<C> {
    type State = C::State;
    type Output = C::Command;

    fn tick(&mut self, _tick: &TickInfo, state: Option<StateSample<C::State>>) -> C::Command {
        match state {
            // A state seen before gives the same command again (the plant keeps the newest).
            Some(s) => self.0.tick(s.value),
            None => self.0.safe(C::State::default()),
        }
    }

    fn safe_output(
        &mut self,
        _tick: &TickInfo,
        last_state: Option<StateSample<C::State>>,
    ) -> C::Command {
        self.0.safe(last_state.map(|s| s.value).unwrap_or_default())
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

    fn sent(&self, sequence: u64, step: u64) {
        let ns = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        if let Some(s) = self.steps.get(Self::index(sequence)) {
            s.store(step, Ordering::Release);
        }
        if let Some(s) = self.slots.get(Self::index(sequence)) {
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
        let sent = self
            .slots
            .get(Self::index(sequence))?
            .load(Ordering::Acquire);
        let now = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        (sent > 0 && now >= sent).then(|| Duration::from_nanos(now - sent))
    }
}

/// What the I/O threads hand the recorder thread: a state frame with the state the I/O thread
/// decoded from it (once), a tick's command, a round trip.
enum Record<S, T> {
    State(Box<(StateFrame, S)>),
    Tick(Box<T>),
    RoundTrip(Duration),
}

/// Hands records to the recorder thread without ever blocking; counts what it had to drop.
struct RecordSink<'a, S, T> {
    tx: Sender<Record<S, T>>,
    dropped: &'a AtomicU64,
}

impl<S, T> RecordSink<'_, S, T> {
    fn put(&self, r: Record<S, T>) {
        // Full (the recorder fell behind) or disconnected: either way the record is lost; count.
        if self.tx.try_send(r).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The recorder thread: everything the I/O threads and the control thread's telemetry send,
/// until both channels are closed and drained. It polls (every [`POLL`]) instead of blocking in
/// `recv`: a parked receiver would make every `try_send` on the control thread wake it, a
/// syscall per tick (see `runtime::telemetry`).
fn record_all<C: LoopController, K: KindRecorder<C>>(
    recorder: &mut Recorder<C, K>,
    records: &Receiver<Record<C::State, C::Command>>,
    telemetry: &Receiver<runtime::TickRecord>,
) {
    use crossbeam_channel::TryRecvError;
    let (mut records_open, mut telemetry_open) = (true, true);
    while records_open || telemetry_open {
        loop {
            match records.try_recv() {
                Ok(Record::State(f)) => {
                    let (frame, state) = *f;
                    recorder.admitted(&frame, state);
                }
                Ok(Record::Tick(t)) => recorder.tick(&t, None),
                Ok(Record::RoundTrip(d)) => recorder.round_trip(d),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    records_open = false;
                    break;
                }
            }
        }
        loop {
            match telemetry.try_recv() {
                Ok(t) => recorder.thread_tick(t.wake_latency_ns),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    telemetry_open = false;
                    break;
                }
            }
        }
        std::thread::sleep(POLL);
    }
}

/// How often the recorder thread drains its channels.
const POLL: Duration = Duration::from_millis(5);

/// Records buffered between the I/O threads and the recorder thread.
const RECORD_CHANNEL: usize = 8192;

/// Drive `session` in real time until the plant's final state (`None`) or a cut. Returns the
/// cut and the run's timing; faults are counted into `faults`.
/// What a real-time run sets up before its plant starts: the controller's copy for the control
/// thread, the exchange with it, and the thread itself with its real-time setup done, waiting
/// for its phase (the plant's first state). None of this then falls between the plant's first
/// state, when its wall clock starts, and the first torque (copying a balance controller alone
/// takes tens of milliseconds).
pub struct Prepared<C: LoopController> {
    settings: Settings,
    io: runtime::IoEnds<C::State, C::Command>,
    telemetry_rx: runtime::TelemetryReceiver,
    pending: runtime::PendingRuntime<OnThread<C>>,
}

/// Sets up the control thread for `controller` (see [`Prepared`]); call before the plant starts.
pub fn prepare<C: LoopController>(
    controller: &C,
    settings: Settings,
) -> Result<Prepared<C>, Box<dyn std::error::Error>> {
    let (io, control) = runtime::channels::<C::State, C::Command>(64);
    let (telemetry_tx, telemetry_rx) = runtime::telemetry::channel(RECORD_CHANNEL);
    let period = Duration::from_secs_f64(settings.control_period_s);
    let mut builder = PeriodicBuilder::new(period)
        .priority(settings.priority)
        .watchdog_ticks(settings.watchdog_ticks())
        .telemetry(telemetry_tx)
        .name("hil-control");
    if let Some(cpu) = settings.cpu {
        builder = builder.cpu(cpu);
    }
    let pending = builder.spawn_pending(OnThread(controller.clone()), control)?;
    Ok(Prepared {
        settings,
        io,
        telemetry_rx,
        pending,
    })
}

/// Drives `session` in real time with the control thread `prepared` set up: waits for the
/// plant's first state, starts the thread phase-anchored just after it, forwards states and
/// torques until the plant's last state or a cut.
pub fn drive<C: LoopController, K: KindRecorder<C>>(
    session: &mut Session<C, K>,
    prepared: Prepared<C>,
    faults: &mut Faults,
    mut progress: impl FnMut(f64),
) -> Result<(Option<Cut>, Timing), Box<dyn std::error::Error>> {
    let Prepared {
        settings,
        mut io,
        telemetry_rx,
        pending,
    } = prepared;
    let started = Instant::now();
    let window = session.watchdog;
    // The plant's first usable state, before the control thread starts (phase alignment). An
    // early return drops `pending`: the thread ends without a tick.
    let mut deadline = Instant::now() + window.max(super::session::STARTUP_GRACE);
    let (first, first_state) = loop {
        let (mut rx, _) = session.link.split();
        let frame = match Session::<C, K>::next_state(&mut rx, &session.stop, &mut deadline, window)
        {
            Ok(f) => f,
            Err(Ok(sig)) => return Ok((Some(Cut::Signal(sig)), timing_of(settings))),
            Err(Err(e)) => {
                faults.watchdog_trips += 1;
                return Ok((Some(Cut::from_link(&e, None, window)), timing_of(settings)));
            }
        };
        match admit(&mut session.check, &session.controller, &frame) {
            Admitted::Tick { state, last: false } => break (frame, state),
            // A run whose first state is its last (a scene of no steps) has nothing to control.
            Admitted::Tick { state, last: true } => {
                session.recorder.admitted(&frame, state);
                return Ok((None, timing_of(settings)));
            }
            Admitted::Refused => {}
            Admitted::Cut(cut) => return Ok((Some(cut), timing_of(settings))),
        }
    };
    let arrived_ns = MonotonicClock.now_ns();
    io.states.publish(first_state);
    // Tick a little after each state arrives: every tick then reads a fresh state and its
    // torque reaches the plant well before the step it is for.
    let period = Duration::from_secs_f64(settings.control_period_s);
    let offset_ns =
        u64::try_from((period / 4).min(Duration::from_micros(500)).as_nanos()).unwrap_or(0);
    let handle = pending.start(arrived_ns.saturating_add(offset_ns));
    session.recorder.admitted(&first, first_state);
    let send_times = SendTimes::new(started);
    let done = AtomicBool::new(false);
    // Set once the plant's final state arrived: it closes its end then, so later sends fail
    // by design and say nothing about the plant.
    let plant_finished = AtomicBool::new(false);
    let send_failed = AtomicBool::new(false);
    let dropped = AtomicU64::new(0);
    let last_sequence = AtomicU64::new(session.sequence);
    let (records_tx, records_rx) =
        crossbeam_channel::bounded::<Record<C::State, C::Command>>(RECORD_CHANNEL);

    let stop = session.stop.clone();
    let check = &mut session.check;
    // The session's own copy checks the states (the control thread ticks its own copy).
    let checker = &session.controller;
    let recorder = &mut session.recorder;
    let (mut rx, tx) = session.link.split();
    let (cut, outcome, (stale_torque_steps, steps_before_first_torque)) =
        std::thread::scope(|scope| {
            let rec_thread =
                scope.spawn(|| record_all::<C, K>(recorder, &records_rx, &telemetry_rx));
            // Sender: torques from the control thread to the plant.
            let sink = RecordSink {
                tx: records_tx.clone(),
                dropped: &dropped,
            };
            let sender = scope.spawn(|| {
                let sink = sink;
                let mut outputs = io.outputs;
                let mut sequence = last_sequence.load(Ordering::Relaxed);
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
                    // Timed from the start of the send (see lockstep.rs).
                    send_times.sent(sequence, cmd.step());
                    if tx.send_torques(&torque_frame(sequence, &cmd)).is_err()
                        && !plant_finished.load(Ordering::Acquire)
                    {
                        send_failed.store(true, Ordering::Release);
                    }
                    // One record per plant state (a repeated state gives a repeated command), and
                    // every safe-state output.
                    if last_step != Some(cmd.step()) || cmd.is_safe() {
                        sink.put(Record::Tick(Box::new(cmd)));
                        last_step = Some(cmd.step());
                    }
                }
                last_sequence.store(sequence, Ordering::Relaxed);
            });

            // Receiver (this thread): states from the plant to the control thread.
            let sink = RecordSink {
                tx: records_tx,
                dropped: &dropped,
            };
            let mut states = io.states;
            let mut last_applied = 0u32;
            let mut stale_torque_steps = 0u64;
            let mut steps_before_first_torque = 0u64;
            let mut deadline = Instant::now() + window;
            let mut last_t = first_state.sim_time_s();
            let cut = loop {
                let frame = match Session::<C, K>::next_state(&mut rx, &stop, &mut deadline, window)
                {
                    Ok(f) => f,
                    Err(Ok(sig)) => break Some(Cut::Signal(sig)),
                    Err(Err(e)) => break Some(Cut::from_link(&e, Some(last_t), window)),
                };
                let received = Instant::now();
                let (state, last) = match admit(check, checker, &frame) {
                    Admitted::Tick { state, last } => (state, last),
                    Admitted::Refused => continue,
                    Admitted::Cut(cut) => break Some(cut),
                };
                // A controller running elsewhere (firmware under QEMU) that is gone ends the run as
                // a lost plant does (every copy of it shares its state with the control thread's).
                if let Some(reason) = checker.lost() {
                    break Some(Cut::PlantLost { reason });
                }
                deadline = received + window;
                // Our sequence numbers stay far below 2^32 in any run.
                let applied = u64::from(frame.applied_torque_sequence);
                if applied == 0 && frame.step > 0 {
                    // A step driven before any torque had arrived.
                    stale_torque_steps += 1;
                    steps_before_first_torque += 1;
                }
                if applied != 0 {
                    // The step that produced this state started from state `frame.step − 1`: a
                    // torque computed from an older state drove it (too late, or none came).
                    if send_times
                        .step_of(applied)
                        .is_some_and(|s| s.saturating_add(1) < frame.step)
                    {
                        stale_torque_steps += 1;
                    }
                    if frame.applied_torque_sequence != last_applied {
                        last_applied = frame.applied_torque_sequence;
                        if let Some(d) = send_times.since(applied) {
                            sink.put(Record::RoundTrip(d));
                        }
                    }
                }
                last_t = state.sim_time_s();
                sink.put(Record::State(Box::new((frame, state))));
                progress(state.sim_time_s());
                if last {
                    plant_finished.store(true, Ordering::Release);
                    break None;
                }
                states.publish(state);
            };
            if matches!(cut, Some(Cut::PlantLost { .. })) {
                // Let the watchdog put the controller in its safe state before stopping it.
                let wait = Instant::now();
                while !handle.live().watchdog_tripped()
                    && wait.elapsed() < Duration::from_millis(200)
                {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            let outcome = handle.stop();
            done.store(true, Ordering::Release);
            let _ = sender.join();
            drop(sink);
            let _ = rec_thread.join();
            (
                cut,
                outcome,
                (stale_torque_steps, steps_before_first_torque),
            )
        });
    session.sequence = last_sequence.load(Ordering::Relaxed);
    let outcome = outcome.map_err(|_| "the control thread panicked")?;
    let report = &outcome.report;
    let counters = &report.counters;
    faults.watchdog_trips += counters.watchdog_trips;
    faults.records_dropped += dropped.load(Ordering::Relaxed) + counters.telemetry_dropped;
    let mut timing = timing_of(settings);
    // Over every tick, whatever the telemetry channel dropped.
    timing.wake_latency_us = Some(Percentiles::from(&report.wake_latency_us));
    timing.compute_us = Some(Percentiles::from(&report.compute_us));
    timing.deadline_misses = Some(counters.deadline_misses);
    timing.skipped_releases = Some(counters.skipped_releases);
    timing.sched_fifo = Some(report.sched_fifo);
    timing.stale_torque_steps = Some(stale_torque_steps);
    timing.steps_before_first_torque = Some(steps_before_first_torque);
    timing.watchdog_ticks = Some(settings.watchdog_ticks());
    timing.longest_stale_ticks = Some(counters.longest_stale_ticks);
    timing.warnings.clone_from(&report.warnings);
    // A run that ended with the plant's final state is complete, whatever the sender saw
    // after the plant closed (the final state may still have been unread when a send failed).
    let cut = match cut {
        None if send_failed.load(Ordering::Acquire) && !plant_finished.load(Ordering::Acquire) => {
            Some(Cut::PlantLost {
                reason: "cannot send torques to the plant".into(),
            })
        }
        other => other,
    };
    Ok((cut, timing))
}

fn timing_of(settings: Settings) -> Timing {
    Timing {
        realtime: true,
        state_period_s: settings.state_period_s,
        control_period_s: settings.control_period_s,
        ..Timing::default()
    }
}
