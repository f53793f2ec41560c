//! The controller of the ball-blocking arm, the same in lockstep and in real time: it sequences
//! the targets (each plan is set while the arm still moves from the last), feeds gravity forward
//! from the model, and runs one of the three servos. Each tick returns an [`ArmCommand`]: the
//! torque for the plant and a [`TickRecord`] of what the tick saw and did; turning records into
//! report rows is the recorder's job, not the controller's.
//!
//! [`ArmController::tick`] runs on the control thread in real-time mode: it never allocates,
//! blocks or panics (everything it needs is built before the run starts).

use control_core::frames::StateFrame;
use control_core::gains::{ArrivalProblem, CriticalGains, GainLimit, solve_arrival_gains};
use control_core::model::ArmModel;
use control_core::servo::{
    ArrivalPlan, ArrivalServo, ConfigError, FixedGainServo, JointServo, JointState, ServoConfig,
    ServoOutput, ServoStatus, StaticTimingServo,
};
use control_core::servo_f32::ArrivalServoF32;
use control_core::servo_fixed::{ArrivalServoFixed, DEFAULT_GAIN_DECIMATION};

use super::scenario::{Scenario, Target};
use super::session::{LoopCommand, LoopController, LoopState};

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
    AnalyticF32Micromath,
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
        Self::AnalyticF32Micromath,
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
            Self::AnalyticF32Micromath => "analytic_f32_micromath",
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

/// What one tick saw and did, raw (the recorder turns it into report rows).
#[derive(Debug, Clone, Copy)]
pub struct TickRecord {
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
    pub record: TickRecord,
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

/// The three servos behind one type, without boxing.
#[derive(Debug, Clone, Copy)]
enum Servo {
    Analytic(ArrivalServo),
    Fixed(FixedGainServo),
    Static(StaticTimingServo),
    F32(ArrivalServoF32),
    FixedPoint(ArrivalServoFixed),
}

impl Servo {
    fn as_dyn(&mut self) -> &mut dyn JointServo {
        match self {
            Self::Analytic(s) => s,
            Self::Fixed(s) => s,
            Self::Static(s) => s,
            Self::F32(s) => s,
            Self::FixedPoint(s) => s,
        }
    }

    fn as_ref(&self) -> &dyn JointServo {
        match self {
            Self::Analytic(s) => s,
            Self::Fixed(s) => s,
            Self::Static(s) => s,
            Self::F32(s) => s,
            Self::FixedPoint(s) => s,
        }
    }
}

/// The arm's controller for one run.
#[derive(Debug, Clone)]
pub struct ArmController {
    servo: Servo,
    model: ArmModel,
    targets: Vec<Target>,
    tolerance_rad: f64,
    /// Index of the target being planned for; `None` before the first tick.
    current: Option<usize>,
    half_period_s: f64,
    gain_limit: GainLimit,
}

impl ArmController {
    /// Build the controller `kind` for `scenario` (the fixed gains are tuned here, once).
    /// `state_period_s` is the period at which fresh plant states reach the controller: its
    /// gains are clamped to what a loop sampled at that period integrates stably (ticking faster
    /// than states arrive only repeats the same torque).
    pub fn new(
        kind: ControllerKind,
        scenario: &Scenario,
        state_period_s: f64,
    ) -> Result<Self, String> {
        let model = scenario.arm_model();
        let config = ServoConfig {
            inertia_kgm2: model.inertia_about_hinge_kgm2(),
            period_s: state_period_s,
            torque_limit_nm: scenario.arm.torque_limit_nm,
            stability_margin: scenario.controllers.stability_margin,
            ..ServoConfig::default()
        };
        let gain_limit = GainLimit::new(
            config.inertia_kgm2,
            config.period_s,
            config.integrator,
            config.stability_margin,
        )
        .map_err(|e| ConfigError::Gain(e).to_string())?;
        let c = &scenario.controllers;
        let err = |e: ConfigError| e.to_string();
        let (servo, tolerance_rad) = match kind {
            ControllerKind::Analytic => (
                Servo::Analytic(ArrivalServo::new(config).map_err(err)?),
                c.analytic.tolerance_rad,
            ),
            ControllerKind::FixedGain => (
                Servo::Fixed(
                    FixedGainServo::new(
                        config,
                        tuned_fixed_gains(scenario, c.fixed_gain.tolerance_rad).map_err(err)?,
                    )
                    .map_err(err)?,
                ),
                c.fixed_gain.tolerance_rad,
            ),
            ControllerKind::StaticTiming => (
                Servo::Static(
                    StaticTimingServo::new(config, c.static_timing.time_constants).map_err(err)?,
                ),
                0.0,
            ),
            ControllerKind::AnalyticF32Micromath => (
                Servo::F32(ArrivalServoF32::new(config).map_err(err)?),
                c.analytic.tolerance_rad,
            ),
            ControllerKind::AnalyticFixed => (
                Servo::FixedPoint(
                    ArrivalServoFixed::new(
                        config,
                        c.fixed_gain_decimation.unwrap_or(DEFAULT_GAIN_DECIMATION),
                    )
                    .map_err(|e| e.to_string())?,
                ),
                c.analytic.tolerance_rad,
            ),
        };
        Ok(Self {
            servo,
            model,
            targets: scenario.targets.clone(),
            tolerance_rad,
            current: None,
            half_period_s: 0.5 * scenario.control_period_s(),
            gain_limit,
        })
    }

    /// One control tick on `state`. Never allocates, blocks or panics.
    pub fn tick(&mut self, state: ArmState) -> ArmCommand {
        let now = state.sim_time_s;
        self.advance_plan(now, state.joint.position_rad);
        // Gravity compensation from the model (weights and knocks are not in the model).
        let feedforward = -self.model.gravity_torque_nm(state.joint.position_rad);
        let out = self.servo.as_dyn().tick(now, state.joint, feedforward);
        self.command(state, out, false)
    }

    /// The safe state's output (damping only, torque-limited) for the newest state known.
    pub fn safe(&self, state: ArmState) -> ArmCommand {
        let torque = self.servo.as_ref().safe_torque(state.joint);
        let output = ServoOutput {
            torque_nm: torque,
            requested_torque_nm: torque,
            stiffness_nm_per_rad: 0.0,
            damping_nms_per_rad: 0.0,
            status: ServoStatus::Holding,
            torque_limited: false,
        };
        self.command(state, output, true)
    }

    /// The gains the servo may use at most: the stable limit of the loop sampled at the state
    /// period, times the scenario's margin.
    pub fn gain_limit(&self) -> GainLimit {
        self.gain_limit
    }

    /// Switch to the next target once the current one's instant has come (the arm still moves).
    fn advance_plan(&mut self, now: f64, angle_rad: f64) {
        let next = match self.current {
            None => 0,
            Some(i) if i + 1 < self.targets.len() => match self.targets.get(i) {
                Some(t) if now > t.time_s - self.half_period_s => i + 1,
                _ => return,
            },
            Some(_) => return,
        };
        let Some(target) = self.targets.get(next).copied() else {
            return;
        };
        let set = match &mut self.servo {
            // The analytic servo re-aims its setpoint every tick from the measured position.
            Servo::Analytic(s) => {
                s.set_pose_target(target.angle_rad, self.tolerance_rad, target.time_s)
            }
            Servo::F32(s) => s.set_pose_target(target.angle_rad, self.tolerance_rad, target.time_s),
            Servo::FixedPoint(s) => {
                s.set_pose_target(target.angle_rad, self.tolerance_rad, target.time_s)
            }
            other => other.as_dyn().set_plan(
                ArrivalPlan::approach(
                    target.angle_rad,
                    self.tolerance_rad,
                    angle_rad,
                    target.time_s,
                ),
                now,
            ),
        };
        // A plan from a checked scenario is always finite; if not, keep the previous one.
        if set.is_ok() {
            self.current = Some(next);
        }
    }

    fn command(&self, state: ArmState, output: ServoOutput, safe: bool) -> ArmCommand {
        ArmCommand {
            step: state.step,
            torque_nm: output.torque_nm,
            safe,
            record: TickRecord {
                state,
                output,
                safe,
            },
        }
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
