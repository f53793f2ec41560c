//! What the periodic thread calls every tick: the [`Controller`] trait and its [`TickInfo`].
//!
//! Implementations run on the control thread, so `tick` and `safe_output` must never allocate,
//! block, log, or panic; they get the newest state (or notice it is stale) and return an output.

use crate::exchange::StateSample;

/// Timing of the current tick, handed to the controller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TickInfo {
    /// Release index k.
    pub release_index: u64,
    /// Scheduled release `t_k = t_0 + k·T`, `CLOCK_MONOTONIC` ns.
    pub release_ns: u64,
    /// Actual wake-up time, ns (≥ `release_ns`).
    pub wake_ns: u64,
    /// Period T, ns.
    pub period_ns: u64,
    /// Absolute deadline of this tick `t_k + D`, ns.
    pub deadline_ns: u64,
    /// Releases skipped just before this tick because the previous tick overran.
    pub skipped_before: u64,
    /// Ticks since a fresh state last arrived (0: fresh this tick).
    pub ticks_since_fresh_state: u64,
    /// The watchdog is tripped: this tick's output is [`Controller::safe_output`].
    pub watchdog_tripped: bool,
}

/// A controller driven by the periodic thread.
///
/// Every tick the runtime polls the newest state and calls exactly one of the two methods:
/// [`tick`](Self::tick) normally, or [`safe_output`](Self::safe_output) while the watchdog is
/// tripped (no fresh state for `watchdog_ticks` ticks). It goes back to `tick` by itself once fresh
/// state arrives again. Both run on the control thread: never allocate, block, log or panic there.
pub trait Controller {
    /// State read from the plant each tick (e.g. a decoded state frame).
    type State: Copy + Send;
    /// Output sent to the plant each tick (e.g. a torque frame).
    type Output: Copy + Send;

    /// Computes the output from the newest state. `state` is `None` until a first state arrives;
    /// `state.age_ticks`/`age_ns` say how old it is.
    fn tick(&mut self, tick: &TickInfo, state: Option<StateSample<Self::State>>) -> Self::Output;

    /// The safe output (damping-only, torque-limited) used while the watchdog is tripped;
    /// `last_state` is the newest (stale) state, if any ever arrived.
    fn safe_output(
        &mut self,
        tick: &TickInfo,
        last_state: Option<StateSample<Self::State>>,
    ) -> Self::Output;
}
