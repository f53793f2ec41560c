//! The controller of the ball-blocking arm, the same in lockstep and in real time: it sequences
//! the targets (each plan is set while the arm still moves from the last), feeds gravity forward
//! from the model, and runs one of the three servos. Each tick returns an [`ArmCommand`]: the
//! torque for the plant and a [`ArmTick`] of what the tick saw and did; turning records into
//! report rows is the recorder's job, not the controller's.
//!
//! [`ArmController::tick`] runs on the control thread in real-time mode: it never allocates,
//! blocks or panics (everything it needs is built before the run starts).

use control_core::arm::{ArmController as CoreArm, ArmServoKind, ArmSetup, ArmTarget};
use control_core::frames::StateFrame;
use control_core::gains::{ArrivalProblem, CriticalGains, GainLimit, solve_arrival_gains};
use control_core::servo::{ArrivalPlan, ConfigError, JointState, ServoOutput};
use control_core::servo_fixed::DEFAULT_GAIN_DECIMATION;

use super::scenario::Scenario;
use crate::run::session::{LoopCommand, LoopController, LoopState};

/// Which controller drives the arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControllerKind {
    /// The analytic arrival servo, re-planning every tick.
    Analytic,
    /// Fixed gains tuned to block the first ball from rest.
    FixedGain,
    /// The static-timing method of "On the Beat!".
    StaticTiming,
    /// The analytic arrival servo in f32, its exp/ln from micromath (firmware profile).
    AnalyticF32,
    /// The analytic arrival servo's torque law in fixed point, gains re-solved at a lower rate
    /// (firmware profile).
    AnalyticFixed,
}

impl ControllerKind {
    /// The default three, in report order.
    pub const ALL: [Self; 3] = [Self::Analytic, Self::FixedGain, Self::StaticTiming];
    /// Every controller a ball-blocking scenario can name in `controllers.run`.
    pub const KNOWN: [Self; 5] = [
        Self::Analytic,
        Self::FixedGain,
        Self::StaticTiming,
        Self::AnalyticF32,
        Self::AnalyticFixed,
    ];

    /// The controller named `name` (`-` and `_` alike).
    pub fn from_name(name: &str) -> Option<Self> {
        let name = name.replace('-', "_");
        Self::KNOWN.into_iter().find(|k| k.name() == name)
    }

    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Analytic => "analytic",
            Self::FixedGain => "fixed_gain",
            Self::StaticTiming => "static_timing",
            Self::AnalyticF32 => "analytic_f32",
            Self::AnalyticFixed => "analytic_fixed",
        }
    }
}

/// The plant state the control thread sees: the shoulder's [`JointState`] as the plant's
/// accepted state frame carried it, with the step and time it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ArmState {
    /// Plant step of this state.
    pub step: u64,
    /// Simulated time of this state, s.
    pub sim_time_s: f64,
    /// The shoulder joint (angle, velocity).
    pub joint: JointState,
}

impl ArmState {
    /// The arm's state in an accepted state frame (`None` for a frame without a joint).
    pub fn of(frame: &StateFrame) -> Option<Self> {
        Some(Self {
            step: frame.step,
            sim_time_s: frame.sim_time_s,
            joint: *frame.joints.first()?,
        })
    }
}

impl LoopState for ArmState {
    fn step(&self) -> u64 {
        self.step
    }

    fn sim_time_s(&self) -> f64 {
        self.sim_time_s
    }
}

/// What one tick of the arm's controller saw and did, raw (the recorder turns it into report
/// rows; the runtime's `TickRecord` is the tick's timing).
#[derive(Debug, Clone, Copy)]
pub struct ArmTick {
    /// The state the tick answered.
    pub state: ArmState,
    /// The servo's output (for the safe state: the damping-only torque, zero gains).
    pub output: ServoOutput,
    /// Whether this is the safe state's output.
    pub safe: bool,
}

/// What the control thread sends back: the torque for a plant step, and the record of the tick.
#[derive(Debug, Clone, Copy)]
pub struct ArmCommand {
    /// The plant step whose state this answers (the torque applies from it on).
    pub step: u64,
    /// Shoulder torque, N·m.
    pub torque_nm: f64,
    /// Whether this is the safe state's output.
    pub safe: bool,
    /// The tick as recorded.
    pub record: ArmTick,
}

impl LoopCommand for ArmCommand {
    fn step(&self) -> u64 {
        self.step
    }

    fn is_safe(&self) -> bool {
        self.safe
    }

    fn torques(&self) -> &[f64] {
        core::slice::from_ref(&self.torque_nm)
    }
}

impl LoopController for ArmController {
    type State = ArmState;
    type Command = ArmCommand;

    fn state_of(frame: &StateFrame) -> Option<ArmState> {
        ArmState::of(frame)
    }

    fn tick(&mut self, state: ArmState) -> ArmCommand {
        Self::tick(self, state)
    }

    fn safe(&self, state: ArmState) -> ArmCommand {
        Self::safe(self, state)
    }
}

/// The arm's controller for one run: control-core's [`CoreArm`] and the scenario's targets.
#[derive(Debug, Clone)]
pub struct ArmController {
    core: CoreArm,
    targets: Vec<ArmTarget>,
}

impl ArmController {
    /// The setup of controller `kind` for `scenario` (the fixed gains are tuned here, once).
    /// `state_period_s` is the period at which fresh plant states reach the controller: its
    /// gains are clamped to what a loop sampled at that period integrates stably (ticking faster
    /// than states arrive only repeats the same torque).
    pub fn setup(
        kind: ControllerKind,
        scenario: &Scenario,
        state_period_s: f64,
    ) -> Result<ArmSetup, String> {
        let c = &scenario.controllers;
        let err = |e: ConfigError| e.to_string();
        let (kind, tolerance_rad) = match kind {
            ControllerKind::Analytic => (ArmServoKind::Analytic, c.analytic.tolerance_rad),
            ControllerKind::FixedGain => (
                ArmServoKind::FixedGain(
                    tuned_fixed_gains(scenario, c.fixed_gain.tolerance_rad).map_err(err)?,
                ),
                c.fixed_gain.tolerance_rad,
            ),
            ControllerKind::StaticTiming => (
                ArmServoKind::StaticTiming {
                    time_constants: c.static_timing.time_constants,
                },
                0.0,
            ),
            ControllerKind::AnalyticF32 => (ArmServoKind::AnalyticF32, c.analytic.tolerance_rad),
            ControllerKind::AnalyticFixed => (
                ArmServoKind::AnalyticFixed {
                    gain_decimation: c.fixed_gain_decimation.unwrap_or(DEFAULT_GAIN_DECIMATION),
                },
                c.analytic.tolerance_rad,
            ),
        };
        Ok(ArmSetup {
            kind,
            model: scenario.arm_model(),
            state_period_s,
            control_period_s: scenario.control_period_s(),
            torque_limit_nm: scenario.arm.torque_limit_nm,
            stability_margin: c.stability_margin,
            tolerance_rad,
        })
    }

    /// Build the controller `kind` for `scenario` ([`Self::setup`]).
    pub fn new(
        kind: ControllerKind,
        scenario: &Scenario,
        state_period_s: f64,
    ) -> Result<Self, String> {
        let setup = Self::setup(kind, scenario, state_period_s)?;
        Ok(Self {
            core: CoreArm::new(&setup).map_err(|e| e.to_string())?,
            targets: scenario.arm_targets(),
        })
    }

    /// One control tick on `state`. Never allocates, blocks or panics.
    pub fn tick(&mut self, state: ArmState) -> ArmCommand {
        let out = self.core.tick(&self.targets, state.sim_time_s, state.joint);
        command(state, out, false)
    }

    /// The safe state's output (damping only, torque-limited) for the newest state known.
    pub fn safe(&self, state: ArmState) -> ArmCommand {
        command(state, self.core.safe(state.joint), true)
    }

    /// The gains the servo may use at most: the stable limit of the loop sampled at the state
    /// period, times the scenario's margin.
    pub fn gain_limit(&self) -> GainLimit {
        self.core.gain_limit()
    }
}

/// The command and record of a tick that answered `state` with `output`.
pub fn command(state: ArmState, output: ServoOutput, safe: bool) -> ArmCommand {
    ArmCommand {
        step: state.step,
        torque_nm: output.torque_nm,
        safe,
        record: ArmTick {
            state,
            output,
            safe,
        },
    }
}

/// The fixed gains: the analytic gains for the first target from the initial state at rest
/// (what a careful hand-tuning for the first ball converges to), then never changed.
fn tuned_fixed_gains(
    scenario: &Scenario,
    tolerance_rad: f64,
) -> Result<CriticalGains, ConfigError> {
    let first = scenario
        .targets
        .first()
        .ok_or(ConfigError::Invalid("targets"))?;
    let start = scenario.arm.initial_angle_rad;
    let plan = ArrivalPlan::approach(first.angle_rad, tolerance_rad, start, first.time_s);
    solve_arrival_gains(&ArrivalProblem {
        inertia_kgm2: scenario.arm_model().inertia_about_hinge_kgm2(),
        position_rad: start,
        velocity_rad_s: 0.0,
        setpoint_rad: plan.setpoint_rad,
        arrival_rad: plan.arrival_rad,
        time_to_go_s: first.time_s,
    })
    .map_err(ConfigError::Gain)
}
