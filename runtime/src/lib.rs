//! The controller's home: a fixed-rate real-time control thread and its hand-over to I/O.
//!
//! - [`periodic`]: [`PeriodicBuilder`] starts a thread that asks for SCHED_FIFO (and says so in the
//!   report if refused), pins itself, locks memory, pre-faults its stack, holds
//!   `/dev/cpu_dma_latency` at 0, and ticks a [`Controller`] at absolute releases
//!   `t_k = t_0 + k·T` (`clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`), skipping and counting
//!   overrun releases. [`RuntimeHandle::stop`] returns a [`RunOutcome`]: [`RunReport`] (counters
//!   and latency summaries over every tick, setup, warnings) + the controller. Memory is constant
//!   whatever the length of the run.
//! - [`schedule`]: release arithmetic, deadline misses, skipping (pure, tested with no OS).
//! - [`clock`]: the [`Clock`] the loop runs on; [`ManualClock`] for tests without sleeping.
//! - [`exchange`]: newest-state-in (triple buffer) and outputs-out (SPSC ring), both
//!   allocation-free and non-blocking on the control side.
//! - [`stats`]: per-tick [`TickRecord`]s, exact [`TickCounters`], and allocation-free latency
//!   histograms ([`LatencyHistogram`], [`TickStats`]) kept on the control thread over every tick.
//! - [`telemetry`]: the optional bounded channel streaming every [`TickRecord`] to a consumer
//!   (`try_send`; a full channel drops and counts), and how to consume it.
//! - [`controller`]: the [`Controller`] trait and [`TickInfo`].
//! - [`os`]: the Linux real-time setup calls.
//! - [`alloc_count`]: a counting global allocator, for tests that assert a thread never allocates.
//! - [`synthetic`]: a realistic tick (the arrival servo on a simulated 1-DoF plant) for jitter
//!   measurement and allocation tests.
//!
//! The control thread, once its loop runs, never allocates, never blocks except in its release
//! sleep, never logs and never panics; a watchdog switches to the controller's safe output when
//! no fresh state arrives for N ticks.

pub mod alloc_count;
pub mod clock;
pub mod controller;
pub mod exchange;
pub mod os;
pub mod periodic;
pub mod schedule;
pub mod stats;
pub mod synthetic;
pub mod telemetry;

/// The channel crate of [`telemetry`], for callers that build their own bounded channel.
pub use crossbeam_channel;

pub use clock::{Clock, ManualClock, MonotonicClock};
pub use controller::{Controller, TickInfo};
pub use exchange::{
    ControlEnds, IoEnds, OutputReceiver, OutputSample, OutputSender, StatePublisher, StateReader,
    StateSample, channels,
};
pub use os::RtSetup;
pub use periodic::{
    DEFAULT_OUTPUT_CAPACITY, LiveStatus, LoopConfig, LoopEnd, PendingRuntime, PeriodicBuilder,
    RunOutcome, RunPanicked, RunReport, RuntimeHandle, SpawnError, StopReason, run_loop,
};
pub use schedule::{NextRelease, OverrunPolicy, ReleaseSchedule};
pub use stats::{LatencyHistogram, LatencySummary, TickCounters, TickRecord, TickStats};
pub use telemetry::{TelemetryReceiver, TelemetrySender};
