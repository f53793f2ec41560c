//! Every plant's clock, one type: the physics step, the index of the current state, the run's
//! length in steps, and the wall-clock cost of the last step (diagnostic only). The arm, biped,
//! humanoid and robot plants each hold one [`PlantClock`] and answer the host's clock
//! questions ([`crate::host::HostedPlant::clock`]) from it; times in a scene become steps by
//! [`steps_for`], the one rounding rule of the crate.
//!
//! Never does: read the wall clock for physics (only the end of a step reads it, for
//! the step's cost), allocate, or panic.

use std::time::Instant;

use control_core::frames::StateFrame;

/// The physics step nearest `time_s` at step `dt_s`: `time_s / dt_s`, rounded (a scene's end
/// time, a spawn time, a push's start and duration). Both validated finite and `time_s` ≥ 0
/// by the scenes; `as` saturates anything else to a harmless value.
pub fn steps_for(time_s: f64, dt_s: f64) -> u64 {
    (time_s / dt_s).round() as u64
}

/// A plant's clock: steps of `dt_s` from state 0 up to the run's end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlantClock {
    dt_s: f64,
    step: u64,
    total_steps: u64,
    last_cost_ns: u64,
}

impl PlantClock {
    /// At state 0 of a run of `total_steps` steps of `dt_s` (a plant of one's own, hosted
    /// through [`crate::host::HostedPlant`], holds one too).
    pub const fn new(dt_s: f64, total_steps: u64) -> Self {
        Self {
            dt_s,
            step: 0,
            total_steps,
            last_cost_ns: 0,
        }
    }

    /// Index of the current state (0 before the first step).
    pub const fn step_index(&self) -> u64 {
        self.step
    }

    /// Simulated time of the current state, s.
    pub fn time_s(&self) -> f64 {
        self.step as f64 * self.dt_s
    }

    /// Physics step, s.
    pub const fn dt_s(&self) -> f64 {
        self.dt_s
    }

    /// Steps of the whole run (the scene's end time over dt).
    pub const fn total_steps(&self) -> u64 {
        self.total_steps
    }

    /// Whether the run has reached the scene's end time.
    pub const fn is_finished(&self) -> bool {
        self.step >= self.total_steps
    }

    /// Wall-clock cost of the last step (torques, Rapier's step, the readout), ns; 0 before the
    /// first. Diagnostic: never part of a comparison.
    pub const fn last_step_cost_ns(&self) -> u64 {
        self.last_cost_ns
    }

    /// An empty state frame of the current state: sequence number and step the state's index,
    /// its time, the last step's cost.
    pub(crate) fn new_frame(&self) -> StateFrame {
        let mut frame = StateFrame::new(self.step, self.step, self.time_s());
        frame.step_cost_ns = self.last_cost_ns;
        frame
    }

    /// The state index moves on by one (the physics step has been taken).
    pub const fn advance(&mut self) {
        self.step += 1;
    }

    /// The step that began at `started` is over: its cost is the time since.
    pub fn finish_step(&mut self, started: Instant) {
        self.last_cost_ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_counts_steps_to_the_end() {
        let mut c = PlantClock::new(0.005, 2);
        assert_eq!(
            (c.step_index(), c.time_s(), c.is_finished()),
            (0, 0.0, false)
        );
        c.advance();
        assert_eq!(
            (c.step_index(), c.time_s(), c.is_finished()),
            (1, 0.005, false)
        );
        c.advance();
        assert!(c.is_finished());
        assert_eq!(
            (c.dt_s(), c.total_steps(), c.last_step_cost_ns()),
            (0.005, 2, 0)
        );
    }

    #[test]
    fn times_round_to_the_nearest_step() {
        assert_eq!(steps_for(1.0, 0.005), 200);
        assert_eq!(steps_for(0.0124, 0.005), 2);
        assert_eq!(steps_for(0.0126, 0.005), 3);
        // Saturating on what a scene would refuse: never a panic.
        assert_eq!(steps_for(f64::NAN, 0.005), 0);
        assert_eq!(steps_for(-1.0, 0.005), 0);
        assert_eq!(steps_for(f64::INFINITY, 0.005), u64::MAX);
    }
}
