//! The periodic control thread: [`PeriodicBuilder`] → [`RuntimeHandle`] → [`RunOutcome`].
//!
//! The loop ([`run_loop`]) is generic over [`Clock`]: the real thread runs it with
//! [`MonotonicClock`] at SCHED_FIFO; tests run it with [`crate::ManualClock`], no sleeping. Each
//! iteration sleeps to the absolute release `t_k`, polls the newest state, calls the controller
//! (or its safe output while the watchdog is tripped), sends the output, adds the tick's
//! [`TickRecord`] to the counters and the summary histograms ([`TickStats`]), offers it to the
//! telemetry channel if there is one ([`crate::telemetry`]: `try_send`, a refusal is counted), and
//! computes the next release (skipping passed ones, see [`crate::schedule`]). Memory is constant
//! whatever the length of the run.
//!
//! Must never, inside the loop: allocate, block on anything but the release sleep, log, or panic
//! (no unwrap/expect/panicking indexing; arithmetic saturates). Everything that allocates (the
//! histograms, the channels, the report) happens before the loop starts or after it ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde::Serialize;
use thread_priority::{
    RealtimeThreadSchedulePolicy, ThreadBuilder, ThreadPriority, ThreadPriorityValue,
    ThreadSchedulePolicy,
};

use crate::clock::{Clock, MonotonicClock};
use crate::controller::{Controller, TickInfo};
use crate::exchange::{ControlEnds, OutputSample};
use crate::os::{self, RtSetup};
use crate::schedule::{OverrunPolicy, ReleaseSchedule};
use crate::stats::{LatencyHistogram, LatencySummary, TickCounters, TickRecord, TickStats};
use crate::telemetry::TelemetrySender;
/// Default output queue capacity used by callers of [`crate::channels`] that have no better idea.
pub const DEFAULT_OUTPUT_CAPACITY: usize = 64;

/// Why the loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum StopReason {
    /// [`RuntimeHandle::stop`] or [`LiveStatus::request_stop`] was called.
    Requested,
    /// The configured number of ticks ran.
    MaxTicks,
    /// A tick overran and the policy was [`OverrunPolicy::Stop`].
    Overrun,
}

/// The first release: one period after `start_ns`, moved forward onto the grid
/// `anchor + k·T` when an anchor is given (less than one period later).
fn first_release_ns(start_ns: u64, period_ns: u64, anchor_ns: Option<u64>) -> u64 {
    let earliest = start_ns.saturating_add(period_ns);
    let Some(anchor) = anchor_ns else {
        return earliest;
    };
    let period = period_ns.max(1);
    if anchor >= earliest {
        // An anchor in the future: the grid point just at or after `earliest`, going back.
        let back = (anchor - earliest) / period;
        return anchor - back * period;
    }
    let behind = (earliest - anchor) % period;
    if behind == 0 {
        earliest
    } else {
        earliest.saturating_add(period - behind)
    }
}

/// Loop parameters (what [`PeriodicBuilder`] validated).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopConfig {
    /// Period T, ns (≥ 1).
    pub period_ns: u64,
    /// Relative deadline D, ns.
    pub deadline_ns: u64,
    /// What to do on overrun.
    pub overrun: OverrunPolicy,
    /// Trip the watchdog after this many ticks without fresh state (`None`: no watchdog).
    pub watchdog_ticks: Option<u64>,
    /// Put the releases on the grid `anchor + k·T` (`CLOCK_MONOTONIC` ns): the first release is
    /// the earliest grid instant at least one period after the start. `None`: start + T.
    pub phase_anchor_ns: Option<u64>,
    /// End after this many ticks (`None`: until stopped).
    pub max_ticks: Option<u64>,
}

/// Counters readable from any thread while the loop runs (relaxed atomics, written once per
/// tick), plus the stop request.
#[derive(Debug, Default)]
pub struct LiveStatus {
    stop: AtomicBool,
    finished: AtomicBool,
    watchdog_tripped: AtomicBool,
    ticks: AtomicU64,
    deadline_misses: AtomicU64,
    skipped_releases: AtomicU64,
    watchdog_trips: AtomicU64,
    telemetry_dropped: AtomicU64,
}

impl LiveStatus {
    /// Asks the loop to end at its next wake-up.
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }
    /// A stop was asked for.
    pub fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
    /// The loop has ended.
    pub fn finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }
    /// The watchdog is tripped now (outputs are safe outputs).
    pub fn watchdog_tripped(&self) -> bool {
        self.watchdog_tripped.load(Ordering::Relaxed)
    }
    /// Ticks run so far.
    pub fn ticks(&self) -> u64 {
        self.ticks.load(Ordering::Relaxed)
    }
    /// Deadline misses so far.
    pub fn deadline_misses(&self) -> u64 {
        self.deadline_misses.load(Ordering::Relaxed)
    }
    /// Releases skipped so far.
    pub fn skipped_releases(&self) -> u64 {
        self.skipped_releases.load(Ordering::Relaxed)
    }
    /// Watchdog trips so far.
    pub fn watchdog_trips(&self) -> u64 {
        self.watchdog_trips.load(Ordering::Relaxed)
    }
    /// Tick records the telemetry channel refused so far (full or receiver gone).
    pub fn telemetry_dropped(&self) -> u64 {
        self.telemetry_dropped.load(Ordering::Relaxed)
    }
}

/// What [`run_loop`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopEnd {
    /// Why it ended.
    pub reason: StopReason,
    /// First release `t_0`, ns (one period after the loop started).
    pub t0_ns: u64,
    /// Clock time when it ended, ns.
    pub stopped_ns: u64,
    /// Releases passed (run or skipped) = index of the release not run: `ticks + skipped`.
    pub releases: u64,
    /// Exact totals.
    pub counters: TickCounters,
}

/// Runs the periodic loop on the calling thread until stopped, `max_ticks`, or an overrun under
/// [`OverrunPolicy::Stop`]. The first release is one period after the call (or on the phase
/// anchor's grid). Every tick is added to `stats` and, if given, offered to `telemetry` with
/// `try_send` (see [`crate::telemetry`] for how to consume it).
///
/// Real-time path: allocation-free, non-blocking except for `clock.sleep_until_ns`, panic-free.
pub fn run_loop<C: Clock, K: Controller>(
    clock: &mut C,
    cfg: &LoopConfig,
    controller: &mut K,
    ends: &mut ControlEnds<K::State, K::Output>,
    stats: &mut TickStats,
    telemetry: Option<&TelemetrySender>,
    live: &LiveStatus,
) -> LoopEnd {
    let start = clock.now_ns();
    let sched = ReleaseSchedule::new(
        first_release_ns(start, cfg.period_ns, cfg.phase_anchor_ns),
        cfg.period_ns,
        cfg.deadline_ns,
    );
    let mut counters = TickCounters::default();
    let mut k: u64 = 0;
    let mut skipped_before: u64 = 0;
    let mut tripped = false;
    let reason = loop {
        if cfg.max_ticks.is_some_and(|m| counters.ticks >= m) {
            break StopReason::MaxTicks;
        }
        let release_ns = sched.release_ns(k);
        clock.sleep_until_ns(release_ns);
        if live.stop_requested() {
            break StopReason::Requested;
        }
        let wake_ns = clock.now_ns();
        let state = ends.states.poll(wake_ns);
        let since_fresh = ends.states.ticks_since_fresh();
        counters.longest_stale_ticks = counters.longest_stale_ticks.max(since_fresh);
        let stale = cfg.watchdog_ticks.is_some_and(|n| since_fresh >= n);
        if stale && !tripped {
            counters.watchdog_trips = counters.watchdog_trips.saturating_add(1);
            counters.first_watchdog_trip_release.get_or_insert(k);
        }
        tripped = stale;
        let info = TickInfo {
            release_index: k,
            release_ns,
            wake_ns,
            period_ns: sched.period_ns(),
            deadline_ns: sched.deadline_of(k),
            skipped_before,
            ticks_since_fresh_state: since_fresh,
            watchdog_tripped: tripped,
        };
        let value = if tripped {
            controller.safe_output(&info, state)
        } else {
            controller.tick(&info, state)
        };
        let sample = OutputSample {
            value,
            release_index: k,
            state_seq: state.map(|s| s.seq),
            safe: tripped,
            sent_ns: clock.now_ns(),
        };
        if ends.outputs.try_send(sample).is_err() {
            counters.outputs_dropped = counters.outputs_dropped.saturating_add(1);
        }
        let end_ns = clock.now_ns();
        let next = sched.next_after(k, end_ns);
        let record = TickRecord {
            release_index: k,
            wake_latency_ns: wake_ns.saturating_sub(release_ns),
            compute_ns: end_ns.saturating_sub(wake_ns),
            missed_deadline: sched.missed_deadline(k, end_ns),
            skipped_after: next.skipped,
            safe_output: tripped,
        };
        stats.record(&record);
        counters.add(&record);
        if let Some(tx) = telemetry {
            // Never waits: a full channel (or a gone receiver) drops the record, counted.
            if tx.try_send(record).is_ok() {
                counters.telemetry_sent = counters.telemetry_sent.saturating_add(1);
            } else {
                counters.telemetry_dropped = counters.telemetry_dropped.saturating_add(1);
                live.telemetry_dropped
                    .store(counters.telemetry_dropped, Ordering::Relaxed);
            }
        }
        live.ticks.store(counters.ticks, Ordering::Relaxed);
        live.deadline_misses
            .store(counters.deadline_misses, Ordering::Relaxed);
        live.skipped_releases
            .store(counters.skipped_releases, Ordering::Relaxed);
        live.watchdog_trips
            .store(counters.watchdog_trips, Ordering::Relaxed);
        live.watchdog_tripped.store(tripped, Ordering::Relaxed);
        skipped_before = next.skipped;
        k = next.index;
        if next.skipped > 0 && cfg.overrun == OverrunPolicy::Stop {
            break StopReason::Overrun;
        }
    };
    LoopEnd {
        reason,
        t0_ns: sched.t0_ns(),
        stopped_ns: clock.now_ns(),
        releases: k,
        counters,
    }
}

/// Why the periodic thread could not be built or started.
#[derive(Debug)]
#[non_exhaustive]
pub enum SpawnError {
    /// Period zero, not finite, or a deadline of zero.
    InvalidPeriod(String),
    /// Priorities are 0 (normal, SCHED_OTHER) or 1..=99 (SCHED_FIFO).
    InvalidPriority(u8),
    /// The telemetry channel is unbounded (its sends allocate) or has no room (capacity 0).
    InvalidTelemetry(String),
    /// Pinning to the requested CPU failed (e.g. no such CPU).
    Affinity {
        /// The CPU asked for.
        cpu: usize,
        /// The OS error.
        source: std::io::Error,
    },
    /// The OS could not create the thread.
    Thread(std::io::Error),
    /// The thread ended before reporting its setup (it panicked).
    SetupLost,
}

impl std::fmt::Display for SpawnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InvalidPeriod(why) => write!(f, "invalid period or deadline: {why}"),
            Self::InvalidPriority(p) => write!(
                f,
                "invalid priority {p}: must be 0 (normal, SCHED_OTHER) or 1..=99 (SCHED_FIFO)"
            ),
            Self::InvalidTelemetry(why) => write!(f, "invalid telemetry channel: {why}"),
            Self::Affinity { cpu, source } => {
                write!(f, "cannot pin the control thread to CPU {cpu}: {source}")
            }
            Self::Thread(e) => write!(f, "cannot create the control thread: {e}"),
            Self::SetupLost => write!(f, "the control thread ended during its setup"),
        }
    }
}

impl std::error::Error for SpawnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Affinity { source, .. } | Self::Thread(source) => Some(source),
            _ => None,
        }
    }
}

/// The control thread panicked (a bug in the controller: it must never panic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunPanicked;

impl std::fmt::Display for RunPanicked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the control thread panicked")
    }
}

impl std::error::Error for RunPanicked {}

/// Builds and starts the periodic control thread.
///
/// ```no_run
/// # use runtime::*;
/// # struct Hold;
/// # impl Controller for Hold { type State = f64; type Output = f64;
/// #   fn tick(&mut self, _: &TickInfo, s: Option<StateSample<f64>>) -> f64 { s.map_or(0.0, |s| -s.value) }
/// #   fn safe_output(&mut self, _: &TickInfo, _: Option<StateSample<f64>>) -> f64 { 0.0 } }
/// let (mut io, ctl) = channels::<f64, f64>(DEFAULT_OUTPUT_CAPACITY);
/// let (records, _record_rx) = telemetry::channel(4096); // optional: see `telemetry`
/// let rt = PeriodicBuilder::from_rate_hz(1000.0)?.priority(80).cpu(1).watchdog_ticks(5)
///     .telemetry(records).spawn(Hold, ctl)?;
/// // What the OS refused (SCHED_FIFO, mlockall, cpu_dma_latency), one line each:
/// for w in rt.setup().warnings() {
///     eprintln!("WARNING: {w}");
/// }
/// io.states.publish(0.1);
/// let _torque = io.outputs.recv_timeout(std::time::Duration::from_millis(10));
/// let outcome = rt.stop()?;
/// // The same warnings, plus any from the run (e.g. telemetry records dropped):
/// for w in &outcome.report.warnings {
///     eprintln!("WARNING: {w}");
/// }
/// println!("{}", serde_json::to_string(&outcome.report)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct PeriodicBuilder {
    period_ns: u64,
    deadline_ns: Option<u64>,
    priority: u8,
    cpu: Option<usize>,
    overrun: OverrunPolicy,
    watchdog_ticks: Option<u64>,
    phase_anchor_ns: Option<u64>,
    telemetry: Option<TelemetrySender>,
    max_ticks: Option<u64>,
    lock_memory: bool,
    hold_dma_latency: bool,
    name: String,
}

impl PeriodicBuilder {
    /// A thread with period `period`, deadline = period, normal priority, no pinning, skipping
    /// overruns, no watchdog, memory locked and `/dev/cpu_dma_latency` held while it runs.
    pub fn new(period: Duration) -> Self {
        Self {
            period_ns: u64::try_from(period.as_nanos()).unwrap_or(u64::MAX),
            deadline_ns: None,
            priority: 0,
            cpu: None,
            overrun: OverrunPolicy::Skip,
            watchdog_ticks: None,
            phase_anchor_ns: None,
            telemetry: None,
            max_ticks: None,
            lock_memory: true,
            hold_dma_latency: true,
            name: "control".to_owned(),
        }
    }

    /// Period `round(1e9 / rate_hz)` ns; the rate must be finite, > 0 and ≤ 1 GHz.
    pub fn from_rate_hz(rate_hz: f64) -> Result<Self, SpawnError> {
        if !(rate_hz.is_finite() && rate_hz > 0.0 && rate_hz <= 1e9) {
            return Err(SpawnError::InvalidPeriod(format!("rate {rate_hz} Hz")));
        }
        // In [1, 1e18]: the cast cannot saturate.
        let period_ns = (1e9 / rate_hz).round() as u64;
        Ok(Self::new(Duration::from_nanos(period_ns)))
    }

    /// Scheduling of the control thread, one meaning everywhere:
    ///
    /// - `0` (the default): normal priority, SCHED_OTHER. No SCHED_FIFO is requested and nothing
    ///   is warned about; the report says `sched_fifo: false`. A thread spawned from a
    ///   SCHED_FIFO/SCHED_RR thread would inherit its policy: the control thread switches itself
    ///   back to SCHED_OTHER (a warning if that fails).
    /// - `1..=99`: SCHED_FIFO at that priority. If the OS refuses, the thread runs at normal
    ///   priority, [`RtSetup::sched_fifo`] is false and [`RtSetup::warnings`] says why.
    /// - Above 99: [`SpawnError::InvalidPriority`] from [`Self::loop_config`] and [`Self::spawn`].
    pub fn priority(mut self, priority: u8) -> Self {
        self.priority = priority;
        self
    }

    /// Pins the thread to this CPU (`sched_setaffinity`); failure is an error at spawn.
    pub fn cpu(mut self, cpu: usize) -> Self {
        self.cpu = Some(cpu);
        self
    }

    /// Relative deadline D (default: the period). A tick ending after `t_k + D` is a miss.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline_ns = Some(u64::try_from(deadline.as_nanos()).unwrap_or(u64::MAX));
        self
    }

    /// What to do when a tick ends after the next release (default: skip and count).
    pub fn overrun_policy(mut self, policy: OverrunPolicy) -> Self {
        self.overrun = policy;
        self
    }

    /// Trip the watchdog (safe output) after `n` ticks (≥ 1) without fresh state.
    pub fn watchdog_ticks(mut self, n: u64) -> Self {
        self.watchdog_ticks = Some(n.max(1));
        self
    }

    /// Release on the grid `anchor_ns + k·T` (`CLOCK_MONOTONIC` ns), e.g. a little after the
    /// instant a periodic plant's state arrives, so that every tick reads a fresh state and its
    /// output reaches the plant in time; the first release is the earliest grid instant at least
    /// one period after the thread starts.
    pub fn phase_anchor_ns(mut self, anchor_ns: u64) -> Self {
        self.phase_anchor_ns = Some(anchor_ns);
        self
    }

    /// Stream every tick's [`TickRecord`] to `tx` (optional; without it no record is sent and
    /// none is kept: the report's summaries and counters are all there is).
    ///
    /// The control thread calls only `tx.try_send` (never waits); a record refused because the
    /// channel is full or its receiver is gone is dropped and counted
    /// ([`TickCounters::telemetry_dropped`], [`LiveStatus::telemetry_dropped`], and a warning in
    /// the report). `tx` must be a bounded channel with a capacity of at least 1, e.g. from
    /// [`crate::telemetry::channel`]; anything else is [`SpawnError::InvalidTelemetry`]. The
    /// runtime drops its sender when the loop ends. See [`crate::telemetry`] for how to consume
    /// without slowing the control thread (poll; size the channel so it never fills).
    pub fn telemetry(mut self, tx: TelemetrySender) -> Self {
        self.telemetry = Some(tx);
        self
    }

    /// End by itself after this many ticks.
    pub fn max_ticks(mut self, ticks: u64) -> Self {
        self.max_ticks = Some(ticks);
        self
    }

    /// Whether to `mlockall` (default true; process-wide and left locked after the run).
    pub fn lock_memory(mut self, lock: bool) -> Self {
        self.lock_memory = lock;
        self
    }

    /// Whether to hold `/dev/cpu_dma_latency` at 0 while running (default true).
    pub fn hold_dma_latency(mut self, hold: bool) -> Self {
        self.hold_dma_latency = hold;
        self
    }

    /// Thread name (default "control").
    pub fn name(mut self, name: &str) -> Self {
        name.clone_into(&mut self.name);
        self
    }

    /// The validated loop parameters.
    pub fn loop_config(&self) -> Result<LoopConfig, SpawnError> {
        if self.period_ns == 0 {
            return Err(SpawnError::InvalidPeriod("period of 0 ns".into()));
        }
        let deadline_ns = self.deadline_ns.unwrap_or(self.period_ns);
        if deadline_ns == 0 {
            return Err(SpawnError::InvalidPeriod("deadline of 0 ns".into()));
        }
        if self.priority > 99 {
            return Err(SpawnError::InvalidPriority(self.priority));
        }
        if let Some(tx) = &self.telemetry {
            match tx.capacity() {
                Some(c) if c > 0 => {}
                Some(_) => {
                    return Err(SpawnError::InvalidTelemetry(
                        "zero capacity: try_send could never succeed without a waiting receiver"
                            .into(),
                    ));
                }
                None => {
                    return Err(SpawnError::InvalidTelemetry(
                        "unbounded: its sends allocate; use a bounded channel".into(),
                    ));
                }
            }
        }
        Ok(LoopConfig {
            period_ns: self.period_ns,
            deadline_ns,
            overrun: self.overrun,
            watchdog_ticks: self.watchdog_ticks,
            phase_anchor_ns: self.phase_anchor_ns,
            max_ticks: self.max_ticks,
        })
    }

    /// Starts the thread with `controller` and the control-thread ends of [`crate::channels`].
    /// Returns once the thread has done its real-time setup (so [`RuntimeHandle::setup`] is
    /// known); its first release is one period later.
    pub fn spawn<K>(
        self,
        controller: K,
        ends: ControlEnds<K::State, K::Output>,
    ) -> Result<RuntimeHandle<K>, SpawnError>
    where
        K: Controller + Send + 'static,
        K::State: 'static,
        K::Output: 'static,
    {
        self.spawn_with(controller, ends, None)
    }

    /// Starts the thread and its real-time setup (priority, affinity, locked memory, the stack
    /// pre-faulted) now, and its loop only at [`PendingRuntime::start`], on the grid of the
    /// phase anchor given then: for a loop whose phase is known only later (a plant's first
    /// state), so that nothing of the setup falls between that moment and the first tick.
    /// Dropping the [`PendingRuntime`] ends the thread without a tick.
    pub fn spawn_pending<K>(
        self,
        controller: K,
        ends: ControlEnds<K::State, K::Output>,
    ) -> Result<PendingRuntime<K>, SpawnError>
    where
        K: Controller + Send + 'static,
        K::State: 'static,
        K::Output: 'static,
    {
        let (start_tx, start_rx) = mpsc::sync_channel::<u64>(1);
        let handle = self.spawn_with(controller, ends, Some(start_rx))?;
        Ok(PendingRuntime { start_tx, handle })
    }

    fn spawn_with<K>(
        self,
        controller: K,
        ends: ControlEnds<K::State, K::Output>,
        start: Option<mpsc::Receiver<u64>>,
    ) -> Result<RuntimeHandle<K>, SpawnError>
    where
        K: Controller + Send + 'static,
        K::State: 'static,
        K::Output: 'static,
    {
        let cfg = self.loop_config()?;
        let live = Arc::new(LiveStatus::default());
        // Allocated and pre-faulted here, off the control thread.
        let stats = TickStats::new();
        let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<RtSetup, SpawnError>>(1);
        let mut tb = ThreadBuilder::default()
            .name(self.name.clone())
            .stack_size(os::CONTROL_STACK_BYTES);
        if self.priority > 0 {
            let p = self.priority;
            let value =
                ThreadPriorityValue::try_from(p).map_err(|_| SpawnError::InvalidPriority(p))?;
            tb = tb
                .policy(ThreadSchedulePolicy::Realtime(
                    RealtimeThreadSchedulePolicy::Fifo,
                ))
                .priority(ThreadPriority::Crossplatform(value));
        }
        let thread_live = Arc::clone(&live);
        // The builder moves into the thread, telemetry sender included (the thread drops it when
        // its loop ends).
        let opts = self;
        let join = tb
            .spawn(move |prio| {
                control_thread(
                    prio,
                    opts,
                    cfg,
                    controller,
                    ends,
                    stats,
                    &thread_live,
                    &ready_tx,
                    start,
                )
            })
            .map_err(SpawnError::Thread)?;
        match ready_rx.recv() {
            Ok(Ok(setup)) => Ok(RuntimeHandle {
                join: Some(join),
                live,
                setup,
                cfg,
            }),
            Ok(Err(e)) => {
                let _ = join.join();
                Err(e)
            }
            Err(_) => {
                let _ = join.join();
                Err(SpawnError::SetupLost)
            }
        }
    }
}

/// What the control thread hands back when its loop ends.
struct ThreadResult<K> {
    controller: K,
    stats: TickStats,
    end: LoopEnd,
    setup: RtSetup,
}

#[allow(clippy::too_many_arguments)]
fn control_thread<K: Controller>(
    prio: Result<(), thread_priority::Error>,
    mut opts: PeriodicBuilder,
    cfg: LoopConfig,
    mut controller: K,
    mut ends: ControlEnds<K::State, K::Output>,
    mut stats: TickStats,
    live: &LiveStatus,
    ready: &mpsc::SyncSender<Result<RtSetup, SpawnError>>,
    start: Option<mpsc::Receiver<u64>>,
) -> Option<ThreadResult<K>> {
    let mut cfg = cfg;
    let telemetry = opts.telemetry.take();
    let fifo_requested = opts.priority > 0;
    let mut setup = RtSetup {
        requested_priority: fifo_requested.then_some(opts.priority),
        cpu: opts.cpu,
        tid: os::current_thread_id(),
        ..RtSetup::default()
    };
    if !fifo_requested && let Err(e) = os::leave_realtime_policy() {
        setup.priority_error = Some(format!("cannot switch to SCHED_OTHER: {e}"));
    }
    setup.sched_fifo = os::current_thread_is_fifo();
    if fifo_requested && !setup.sched_fifo {
        setup.priority_error = Some(match prio {
            Err(e) => format!("{e:?}"),
            Ok(()) => "the policy read back is not SCHED_FIFO".to_owned(),
        });
    }
    if let Some(cpu) = opts.cpu
        && let Err(source) = os::pin_current_thread(cpu)
    {
        let _ = ready.send(Err(SpawnError::Affinity { cpu, source }));
        live.finished.store(true, Ordering::Release);
        return None;
    }
    if opts.lock_memory {
        setup.mlockall = match os::lock_memory() {
            Ok(()) => true,
            Err(e) => {
                setup.mlockall_error = Some(e.to_string());
                false
            }
        };
    }
    let dma = if opts.hold_dma_latency {
        match os::hold_cpu_dma_latency_zero() {
            Ok(f) => Some(f),
            Err(e) => {
                setup.dma_latency_error = Some(e.to_string());
                None
            }
        }
    } else {
        None
    };
    setup.dma_latency_held = dma.is_some();
    setup.stack_prefaulted_bytes = os::prefault_stack();
    // Handlers run on the process's other threads, never inside a tick.
    if let Err(e) = os::block_async_signals() {
        setup.signals_error = Some(format!("cannot block asynchronous signals: {e}"));
    }
    if ready.send(Ok(setup.clone())).is_err() {
        return None;
    }
    if let Some(start) = start {
        // Set up and waiting: the loop begins when the phase anchor comes (never, if the
        // pending handle was dropped).
        match start.recv() {
            Ok(anchor_ns) => cfg.phase_anchor_ns = Some(anchor_ns),
            Err(_) => {
                live.finished.store(true, Ordering::Release);
                return None;
            }
        }
    }
    let end = run_loop(
        &mut MonotonicClock,
        &cfg,
        &mut controller,
        &mut ends,
        &mut stats,
        telemetry.as_ref(),
        live,
    );
    // Disconnects the telemetry consumer (before `finished`, so a caller that sees the run
    // finished knows the channel holds all there will be).
    drop(telemetry);
    drop(dma);
    live.finished.store(true, Ordering::Release);
    Some(ThreadResult {
        controller,
        stats,
        end,
        setup,
    })
}

/// The running control thread. Dropping it without [`stop`](Self::stop) or
/// [`join`](Self::join) asks the loop to end (it never outlives its handle unnoticed) but does not
/// wait for it.
pub struct RuntimeHandle<K> {
    join: Option<JoinHandle<Option<ThreadResult<K>>>>,
    live: Arc<LiveStatus>,
    setup: RtSetup,
    cfg: LoopConfig,
}

impl<K> RuntimeHandle<K> {
    /// Live counters and the stop request (cheap, from any thread).
    pub fn live(&self) -> &LiveStatus {
        &self.live
    }

    /// A shared handle to the live counters (e.g. for the I/O thread).
    pub fn live_shared(&self) -> Arc<LiveStatus> {
        Arc::clone(&self.live)
    }

    /// What the real-time setup got (SCHED_FIFO or not, mlockall, DMA latency, CPU).
    pub fn setup(&self) -> &RtSetup {
        &self.setup
    }

    /// The loop has ended (max ticks or overrun stop); [`Self::join`] will not wait.
    pub fn is_finished(&self) -> bool {
        self.live.finished()
    }

    /// Asks the loop to end at its next release and waits for the outcome.
    pub fn stop(self) -> Result<RunOutcome<K>, RunPanicked> {
        self.live.request_stop();
        self.join()
    }

    /// Waits for the loop to end by itself (max ticks, overrun stop, or a stop requested through
    /// [`LiveStatus::request_stop`]) and returns the outcome.
    pub fn join(mut self) -> Result<RunOutcome<K>, RunPanicked> {
        let thread = self.join.take().ok_or(RunPanicked)?;
        let r = thread.join().map_err(|_| RunPanicked)?.ok_or(RunPanicked)?;
        let report = RunReport::new(&self.cfg, &r.end, r.setup, &r.stats);
        Ok(RunOutcome {
            report,
            controller: r.controller,
        })
    }
}

/// A control thread whose real-time setup is done and whose loop waits for its phase
/// ([`PeriodicBuilder::spawn_pending`]).
pub struct PendingRuntime<K> {
    start_tx: mpsc::SyncSender<u64>,
    handle: RuntimeHandle<K>,
}

impl<K> PendingRuntime<K> {
    /// What the real-time setup got.
    pub fn setup(&self) -> &RtSetup {
        self.handle.setup()
    }

    /// Starts the loop, its releases on the grid through `phase_anchor_ns` (monotonic clock,
    /// ns), the first one at least one period from now (as [`PeriodicBuilder::spawn`]'s).
    pub fn start(mut self, phase_anchor_ns: u64) -> RuntimeHandle<K> {
        self.handle.cfg.phase_anchor_ns = Some(phase_anchor_ns);
        // The thread waits on the other end; it is gone only if it ended (then `join` says so).
        let _ = self.start_tx.send(phase_anchor_ns);
        self.handle
    }
}

impl<K> Drop for RuntimeHandle<K> {
    fn drop(&mut self) {
        if self.join.is_some() {
            self.live.request_stop();
        }
    }
}

/// What a finished run hands back. (Per-tick records are not kept: stream them with
/// [`PeriodicBuilder::telemetry`].)
pub struct RunOutcome<K> {
    /// Counters, timing summaries over every tick, real-time setup, warnings.
    pub report: RunReport,
    /// The controller, as the loop left it.
    pub controller: K,
}

/// Summary of a run (serializable; built off the RT path).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunReport {
    /// Tick rate, Hz (1e9 / period).
    pub rate_hz: f64,
    /// Period T, ns.
    pub period_ns: u64,
    /// Relative deadline D, ns.
    pub deadline_ns: u64,
    /// Exact totals over the whole run (ticks, skipped releases, deadline misses, watchdog...).
    #[serde(flatten)]
    pub counters: TickCounters,
    /// Releases passed (run or skipped): `ticks + skipped_releases`.
    pub releases: u64,
    /// The control thread really ran SCHED_FIFO.
    pub sched_fifo: bool,
    /// Real-time setup details.
    pub setup: RtSetup,
    /// Wake-up latency (wake − `t_k`) over every tick, µs (kept on the control thread).
    pub wake_latency_us: LatencySummary,
    /// Compute time (end of tick − wake) over every tick, µs (kept on the control thread).
    pub compute_us: LatencySummary,
    /// First release `t_0`, `CLOCK_MONOTONIC` ns.
    pub t0_ns: u64,
    /// When the loop ended, ns.
    pub stopped_ns: u64,
    /// `stopped_ns − t0_ns`.
    pub elapsed_ns: u64,
    /// Why the loop ended.
    pub stop_reason: StopReason,
    /// Everything that did not go as asked, one line each (e.g. SCHED_FIFO refused).
    pub warnings: Vec<String>,
}

impl RunReport {
    /// Builds the report from the loop's end, the setup and the statistics. Allocates: off the
    /// RT path.
    pub fn new(cfg: &LoopConfig, end: &LoopEnd, setup: RtSetup, stats: &TickStats) -> Self {
        let mut warnings = setup.warnings();
        let c = &end.counters;
        if c.telemetry_dropped > 0 {
            warnings.push(format!(
                "telemetry channel full or closed: {} of {} tick records were not delivered \
                 (the summaries still cover every tick)",
                c.telemetry_dropped, c.ticks
            ));
        }
        for (what, h) in [
            ("wake-up latency", &stats.wake_latency),
            ("compute time", &stats.compute),
        ] {
            if h.above_range() > 0 {
                warnings.push(format!(
                    "{} {what} values above {} s are counted at {} s in the percentiles \
                     (min and max are exact)",
                    h.above_range(),
                    LatencyHistogram::MAX_NS / 1_000_000_000,
                    LatencyHistogram::MAX_NS / 1_000_000_000,
                ));
            }
        }
        Self {
            rate_hz: 1e9 / cfg.period_ns.max(1) as f64,
            period_ns: cfg.period_ns,
            deadline_ns: cfg.deadline_ns,
            counters: end.counters,
            releases: end.releases,
            sched_fifo: setup.sched_fifo,
            setup,
            wake_latency_us: stats.wake_latency.summary(),
            compute_us: stats.compute.summary(),
            t0_ns: end.t0_ns,
            stopped_ns: end.stopped_ns,
            elapsed_ns: end.stopped_ns.saturating_sub(end.t0_ns),
            stop_reason: end.reason,
            warnings,
        }
    }
}

#[cfg(test)]
mod tests {
    //! The loop on a [`ManualClock`]: every figure is exact, nothing sleeps.

    use super::*;
    use crate::clock::ManualClock;
    use crate::exchange::{StatePublisher, StateSample, channels};

    /// Which release indices a test controller publishes a state in.
    type FeedWhen = fn(u64) -> bool;

    /// A controller that models its compute time by advancing the shared manual clock, and checks
    /// each release against the exact grid.
    struct Scripted {
        clock: ManualClock,
        t0: u64,
        period: u64,
        compute_ns: fn(u64) -> u64,
        next_wake_delay_ns: Option<fn(u64) -> u64>,
        publisher: Option<(StatePublisher<u64>, FeedWhen)>,
        ticks: u64,
        off_grid: u64,
        last_index: u64,
        safe: u64,
    }

    impl Scripted {
        fn new(clock: &ManualClock, period: u64, compute_ns: fn(u64) -> u64) -> Self {
            Self {
                clock: clock.clone(),
                t0: clock.get_ns() + period,
                period,
                compute_ns,
                next_wake_delay_ns: None,
                publisher: None,
                ticks: 0,
                off_grid: 0,
                last_index: 0,
                safe: 0,
            }
        }

        fn step(&mut self, tick: &TickInfo) {
            if tick.release_ns != self.t0 + tick.release_index * self.period {
                self.off_grid += 1;
            }
            self.last_index = tick.release_index;
            if let Some((p, feed)) = &mut self.publisher
                && feed(tick.release_index)
            {
                p.publish_at(tick.release_index, tick.wake_ns);
            }
            if let Some(f) = self.next_wake_delay_ns {
                self.clock.set_wake_delay_ns(f(tick.release_index + 1));
            }
            self.clock.advance_ns((self.compute_ns)(tick.release_index));
        }
    }

    impl Controller for Scripted {
        type State = u64;
        type Output = u64;
        fn tick(&mut self, tick: &TickInfo, _: Option<StateSample<u64>>) -> u64 {
            self.ticks += 1;
            self.step(tick);
            1
        }
        fn safe_output(&mut self, tick: &TickInfo, _: Option<StateSample<u64>>) -> u64 {
            self.safe += 1;
            self.step(tick);
            0
        }
    }

    fn cfg(period_ns: u64, max_ticks: u64) -> LoopConfig {
        LoopConfig {
            period_ns,
            deadline_ns: period_ns,
            overrun: OverrunPolicy::Skip,
            watchdog_ticks: None,
            phase_anchor_ns: None,
            max_ticks: Some(max_ticks),
        }
    }

    #[test]
    fn a_phase_anchor_puts_every_release_on_its_grid() {
        let t = 1_000_000;
        // Without an anchor: start + T.
        assert_eq!(first_release_ns(5_000_123, t, None), 6_000_123);
        // Anchor in the past: the next grid point at or after start + T.
        assert_eq!(first_release_ns(5_000_123, t, Some(250)), 6_000_250);
        assert_eq!(first_release_ns(5_000_000, t, Some(0)), 6_000_000);
        // Anchor in the future: the grid point just at or after start + T, going back.
        assert_eq!(first_release_ns(5_000_123, t, Some(9_400_000)), 6_400_000);
        assert_eq!(first_release_ns(5_000_123, t, Some(6_000_123)), 6_000_123);
        // Through the loop, with the fake clock: every release k lands at 6_000_777 + k·T.
        let clock = ManualClock::new(5_000_123);
        let mut config = cfg(t, 50);
        config.phase_anchor_ns = Some(777);
        let mut c = Scripted::new(&clock, t, |_| 10_000);
        c.t0 = 6_000_777;
        let (end, _, _) = run(&clock, &config, &mut c, 64);
        assert_eq!(end.t0_ns, 6_000_777);
        assert_eq!((c.ticks, c.off_grid), (50, 0));
    }

    /// Runs the loop with a telemetry channel of `telemetry_capacity`; returns the end, the
    /// statistics and the records the channel took.
    fn run(
        clock: &ManualClock,
        cfg: &LoopConfig,
        c: &mut Scripted,
        telemetry_capacity: usize,
    ) -> (LoopEnd, TickStats, Vec<TickRecord>) {
        let (_io, mut ends) = channels::<u64, u64>(4);
        let (tx, rx) = crate::telemetry::channel(telemetry_capacity);
        let mut stats = TickStats::new();
        let end = run_loop(
            &mut clock.clone(),
            cfg,
            c,
            &mut ends,
            &mut stats,
            Some(&tx),
            &LiveStatus::default(),
        );
        drop(tx);
        (end, stats, rx.try_iter().collect())
    }

    #[test]
    fn releases_never_drift_over_a_million_ticks() {
        // An awkward period (3 kHz rounded), varying wake delay and compute time, all < T.
        let period = 333_333;
        let clock = ManualClock::new(987_654_321);
        clock.set_wake_delay_ns(17_000);
        let mut c = Scripted::new(&clock, period, |k| 1_000 + (k * 7_919) % 250_000);
        c.next_wake_delay_ns = Some(|k| (k * 104_729) % 60_000);
        let n = 1_000_000;
        // A telemetry channel of 16 that nobody drains: it fills, and the rest is counted.
        let (end, stats, records) = run(&clock, &cfg(period, n), &mut c, 16);
        assert_eq!((c.ticks, c.off_grid), (n, 0));
        assert_eq!(c.last_index, n - 1);
        assert_eq!(end.t0_ns, 987_654_321 + period);
        assert_eq!(end.releases, n);
        assert_eq!(end.counters.skipped_releases, 0);
        assert_eq!(end.counters.deadline_misses, 0);
        assert_eq!(end.reason, StopReason::MaxTicks);
        let idx: Vec<u64> = records.iter().map(|r| r.release_index).collect();
        assert_eq!(idx, (0..16).collect::<Vec<_>>());
        assert_eq!(
            (end.counters.telemetry_sent, end.counters.telemetry_dropped),
            (16, n - 16)
        );
        // The summaries cover every tick, whatever the channel took, in constant memory.
        assert_eq!(stats.wake_latency.count(), n);
        assert_eq!(stats.compute.count(), n);
        assert_eq!(stats.compute.max_ns(), Some(1_000 + 249_999));
        let report = RunReport::new(&cfg(period, n), &end, RtSetup::default(), &stats);
        assert_eq!(report.wake_latency_us.count, n);
        assert_eq!(report.warnings.len(), 1);
        assert!(report.warnings[0].contains("999984 of 1000000 tick records were not delivered"));
    }

    #[test]
    fn overrun_of_three_and_a_half_periods_skips_exactly_three_and_counts_them() {
        let period = 1_000_000;
        let clock = ManualClock::new(0);
        let mut c = Scripted::new(&clock, period, |k| if k == 5 { 3_500_000 } else { 10_000 });
        let (end, _, log) = run(&clock, &cfg(period, 10), &mut c, 64);
        let idx: Vec<u64> = log.iter().map(|r| r.release_index).collect();
        assert_eq!(idx, [0, 1, 2, 3, 4, 5, 9, 10, 11, 12]);
        assert_eq!(end.counters.skipped_releases, 3);
        assert_eq!(end.counters.overruns, 1);
        assert_eq!(end.counters.deadline_misses, 1);
        assert_eq!(
            end.releases,
            end.counters.ticks + end.counters.skipped_releases
        );
        let r5 = log
            .iter()
            .find(|r| r.release_index == 5)
            .copied()
            .unwrap_or_default();
        assert!(r5.missed_deadline && r5.skipped_after == 3);
        assert_eq!(c.off_grid, 0);
    }

    #[test]
    fn overrun_policy_stop_ends_the_run() {
        let clock = ManualClock::new(0);
        let mut c = Scripted::new(&clock, 1_000, |k| if k == 2 { 1_500 } else { 10 });
        let mut config = cfg(1_000, 100);
        config.overrun = OverrunPolicy::Stop;
        let (end, _, _) = run(&clock, &config, &mut c, 8);
        assert_eq!(end.reason, StopReason::Overrun);
        assert_eq!((end.counters.ticks, end.counters.skipped_releases), (3, 1));
    }

    #[test]
    fn statistics_are_exact_on_synthetic_latencies() {
        // Tick k wakes (k+1)·1024 ns late and computes (k+1)·512 ns: multiples of their
        // histogram bucket widths, so every figure is exact.
        let period = 2_000_000;
        let clock = ManualClock::new(0);
        clock.set_wake_delay_ns(1_024);
        let mut c = Scripted::new(&clock, period, |k| (k + 1) * 512);
        c.next_wake_delay_ns = Some(|k| (k + 1) * 1_024);
        let mut config = cfg(period, 1_000);
        config.deadline_ns = 1_000_000; // a 1 ms deadline inside the 2 ms period
        let (end, stats, _) = run(&clock, &config, &mut c, 1_000);
        let report = RunReport::new(&config, &end, RtSetup::default(), &stats);
        let w = report.wake_latency_us;
        assert_eq!(
            (w.count, w.min, w.p50, w.p99, w.p999, w.max),
            (1000, 1.024, 512.0, 1013.76, 1022.976, 1024.0)
        );
        assert_eq!(w.mean, 512.512);
        let c = report.compute_us;
        assert_eq!((c.min, c.p50, c.p99, c.max), (0.512, 256.0, 506.88, 512.0));
        assert_eq!(
            (
                report.counters.telemetry_sent,
                report.counters.telemetry_dropped
            ),
            (1000, 0)
        );
        // end − t_k = 1536·(k+1) ns > 1e6 ⇔ k ≥ 651.
        assert_eq!(report.counters.deadline_misses, 349);
        assert_eq!(report.counters.skipped_releases, 0);
        assert_eq!(report.rate_hz, 500.0);
        assert!(report.warnings.is_empty());
    }

    #[test]
    fn watchdog_switches_to_safe_output_after_n_stale_ticks_and_back() {
        let clock = ManualClock::new(0);
        let (io, mut ends) = channels::<u64, u64>(64);
        let mut c = Scripted::new(&clock, 1_000, |_| 10);
        // Publish during ticks 0..=10 and again from 20: tick k sees tick k−1's state fresh.
        c.publisher = Some((io.states, |k| k <= 10 || k >= 20));
        let mut config = cfg(1_000, 30);
        config.watchdog_ticks = Some(3);
        let (tx, rx) = crate::telemetry::channel(64);
        let end = run_loop(
            &mut clock.clone(),
            &config,
            &mut c,
            &mut ends,
            &mut TickStats::new(),
            Some(&tx),
            &LiveStatus::default(),
        );
        let safe: Vec<u64> = rx
            .try_iter()
            .filter(|r| r.safe_output)
            .map(|r| r.release_index)
            .collect();
        // Last fresh at tick 11; stale 1, 2, 3 ticks later → safe from tick 14 to 20 inclusive.
        assert_eq!(safe, (14..=20).collect::<Vec<_>>());
        assert_eq!(end.counters.watchdog_trips, 1);
        assert_eq!(end.counters.first_watchdog_trip_release, Some(14));
        assert_eq!((end.counters.safe_ticks, c.safe), (7, 7));
        // Outputs carry the flag too (the queue holds 64, nothing dropped).
        let mut outs = io.outputs;
        let flagged: Vec<u64> = std::iter::from_fn(|| outs.try_recv())
            .filter(|o| o.safe)
            .map(|o| o.release_index)
            .collect();
        assert_eq!(flagged, safe);
    }

    #[test]
    fn ticks_before_any_state_count_towards_the_watchdog() {
        let clock = ManualClock::new(0);
        let mut c = Scripted::new(&clock, 1_000, |_| 10);
        let mut config = cfg(1_000, 5);
        config.watchdog_ticks = Some(2);
        let (end, _, log) = run(&clock, &config, &mut c, 8);
        let safe: Vec<bool> = log.iter().map(|r| r.safe_output).collect();
        assert_eq!(safe, [false, true, true, true, true]);
        assert_eq!(end.counters.watchdog_trips, 1);
    }

    #[test]
    fn a_stop_request_ends_the_loop_at_the_next_release() {
        let clock = ManualClock::new(0);
        let mut c = Scripted::new(&clock, 1_000, |_| 10);
        let (_io, mut ends) = channels::<u64, u64>(4);
        let live = LiveStatus::default();
        live.request_stop();
        let end = run_loop(
            &mut clock.clone(),
            &cfg(1_000, 10),
            &mut c,
            &mut ends,
            &mut TickStats::new(),
            None,
            &live,
        );
        assert_eq!(
            (end.reason, end.counters.ticks, end.releases),
            (StopReason::Requested, 0, 0)
        );
    }

    #[test]
    fn builder_validates() {
        assert!(PeriodicBuilder::from_rate_hz(0.0).is_err());
        assert!(PeriodicBuilder::from_rate_hz(f64::NAN).is_err());
        let b = PeriodicBuilder::from_rate_hz(3_000.0).expect("valid rate");
        assert_eq!(b.loop_config().map(|c| c.period_ns).ok(), Some(333_333));
        // 0 = normal priority, 1..=99 = SCHED_FIFO, above: an error.
        for p in [0, 1, 80, 99] {
            assert!(b.clone().priority(p).loop_config().is_ok(), "priority {p}");
        }
        assert!(matches!(
            b.clone().priority(100).loop_config(),
            Err(SpawnError::InvalidPriority(100))
        ));
        // Telemetry: bounded with room only.
        let (tx, _rx) = crate::crossbeam_channel::unbounded();
        assert!(matches!(
            b.clone().telemetry(tx).loop_config(),
            Err(SpawnError::InvalidTelemetry(_))
        ));
        let (tx, _rx) = crate::crossbeam_channel::bounded(0);
        assert!(matches!(
            b.clone().telemetry(tx).loop_config(),
            Err(SpawnError::InvalidTelemetry(_))
        ));
        let (tx, _rx) = crate::telemetry::channel(1);
        assert!(b.clone().telemetry(tx).loop_config().is_ok());
        assert!(b.clone().deadline(Duration::ZERO).loop_config().is_err());
        assert_eq!(
            PeriodicBuilder::new(Duration::from_millis(5))
                .loop_config()
                .map(|c| c.deadline_ns)
                .ok(),
            Some(5_000_000)
        );
    }
}
