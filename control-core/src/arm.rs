//! The ball-blocking arm's controller: one hinge that must be at a sequence of poses at given
//! instants. It sequences the targets (each plan is set while the arm still moves from the last),
//! feeds gravity forward from the [`ArmModel`], and runs one of five servos. The same type runs on
//! the host's control thread and inside the firmware: a host build and a Cortex-M build give
//! bit-identical torques.
//!
//! The targets are the caller's (a slice passed to every tick), so the controller's size does not
//! depend on how many there are. It never allocates, blocks or panics.
//!
//! With the feature `arm-f32-only` (which implies `micromath`) only the f32 servo is built in:
//! a firmware for a small part then links no f64 Lambert W tables; the other kinds are refused
//! with [`ArmSetupError::Unavailable`].
// The f32-only build leaves the other servos' imports and the plan's inputs unused.
#![cfg_attr(feature = "arm-f32-only", allow(unused_imports, unused_variables))]

use crate::controller::{Controller, Limits};
use core::fmt;

use crate::gains::{CriticalGains, GainLimit};
use crate::model::ArmModel;
use crate::servo::{
    ArrivalPlan, ArrivalServo, ConfigError, FixedGainServo, JointServo, JointState, ServoConfig,
    ServoOutput, ServoStatus, StaticTimingServo,
};
#[cfg(feature = "micromath")]
use crate::servo_f32::ArrivalServoF32;
use crate::servo_fixed::{ArrivalServoFixed, FixedConfigError};

/// One target: the arm must be at `angle_rad` at `time_s`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ArmTarget {
    /// The instant, s.
    pub time_s: f64,
    /// The pose, rad.
    pub angle_rad: f64,
}

/// Which servo drives the arm.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArmServoKind {
    /// The analytic arrival servo in f64, re-aiming every tick.
    Analytic,
    /// Fixed gains (tuned once by the caller), never changed.
    FixedGain(CriticalGains),
    /// The static-timing method of "On the Beat!": gains from the plan's interval and this many
    /// time constants.
    StaticTiming {
        /// Time constants per interval.
        time_constants: f64,
    },
    /// The analytic arrival servo in f32 with micromath's `exp`/`ln` (feature `micromath`).
    AnalyticF32,
    /// The analytic servo's torque law in fixed point, gains re-solved in f32 every
    /// `gain_decimation` ticks.
    AnalyticFixed {
        /// Ticks between gain solves (≥ 1).
        gain_decimation: u32,
    },
}

/// Everything the arm's controller is built from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArmSetup {
    /// The servo.
    pub kind: ArmServoKind,
    /// The arm's mass properties (gravity feed-forward, inertia).
    pub model: ArmModel,
    /// The period at which fresh states reach the controller, s (the gains are clamped to what
    /// a loop sampled at this period integrates stably).
    pub state_period_s: f64,
    /// The control period, s: a target is switched to the next one half a period before its
    /// instant.
    pub control_period_s: f64,
    /// Largest torque magnitude, N·m.
    pub torque_limit_nm: f64,
    /// Fraction of the stable gain limit the servo may use, in (0, 1].
    pub stability_margin: f64,
    /// How far beyond each pose the servo aims, rad.
    pub tolerance_rad: f64,
}

/// Why an [`ArmSetup`] was refused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArmSetupError {
    /// The servo's configuration (inertia, period, torque limit, margin, gains).
    Servo(ConfigError),
    /// The fixed-point servo's configuration.
    Fixed(FixedConfigError),
    /// The servo is not in this build: the f32 servo without the `micromath` feature, or any
    /// other with `arm-f32-only`.
    Unavailable,
    /// The control period or the tolerance is not finite (the period: and positive).
    Invalid(&'static str),
}

impl ArmSetupError {
    /// The error's kind as a number, for a mailbox (1 servo, 2 fixed point, 3 unavailable in
    /// this build, 4 invalid).
    pub fn code(&self) -> u32 {
        match self {
            Self::Servo(_) => 1,
            Self::Fixed(_) => 2,
            Self::Unavailable => 3,
            Self::Invalid(_) => 4,
        }
    }
}

impl fmt::Display for ArmSetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Servo(e) => write!(f, "{e}"),
            Self::Fixed(e) => write!(f, "{e}"),
            Self::Unavailable => write!(
                f,
                "this servo is not in this build (the f32 servo needs the `micromath` feature; \
                 `arm-f32-only` builds only the f32 servo)"
            ),
            Self::Invalid(field) => write!(f, "arm setup: {field} is out of range"),
        }
    }
}

impl core::error::Error for ArmSetupError {}

/// The five servos behind one type, without boxing. With the feature `arm-f32-only` only the
/// f32 servo is compiled (a build for a small part: no f64 Lambert W tables are linked).
#[derive(Debug, Clone, Copy)]
enum Servo {
    #[cfg(not(feature = "arm-f32-only"))]
    Analytic(ArrivalServo),
    #[cfg(not(feature = "arm-f32-only"))]
    Fixed(FixedGainServo),
    #[cfg(not(feature = "arm-f32-only"))]
    Static(StaticTimingServo),
    #[cfg(feature = "micromath")]
    F32(ArrivalServoF32),
    #[cfg(not(feature = "arm-f32-only"))]
    FixedPoint(ArrivalServoFixed),
}

impl Servo {
    fn as_dyn(&mut self) -> &mut dyn JointServo {
        match self {
            #[cfg(not(feature = "arm-f32-only"))]
            Self::Analytic(s) => s,
            #[cfg(not(feature = "arm-f32-only"))]
            Self::Fixed(s) => s,
            #[cfg(not(feature = "arm-f32-only"))]
            Self::Static(s) => s,
            #[cfg(feature = "micromath")]
            Self::F32(s) => s,
            #[cfg(not(feature = "arm-f32-only"))]
            Self::FixedPoint(s) => s,
        }
    }

    fn as_ref(&self) -> &dyn JointServo {
        match self {
            #[cfg(not(feature = "arm-f32-only"))]
            Self::Analytic(s) => s,
            #[cfg(not(feature = "arm-f32-only"))]
            Self::Fixed(s) => s,
            #[cfg(not(feature = "arm-f32-only"))]
            Self::Static(s) => s,
            #[cfg(feature = "micromath")]
            Self::F32(s) => s,
            #[cfg(not(feature = "arm-f32-only"))]
            Self::FixedPoint(s) => s,
        }
    }
}

/// The arm's controller for one run.
#[derive(Debug, Clone, Copy)]
pub struct ArmController {
    servo: Servo,
    model: ArmModel,
    tolerance_rad: f64,
    /// Index of the target being planned for; `None` before the first tick.
    current: Option<usize>,
    half_period_s: f64,
    gain_limit: GainLimit,
}

impl ArmController {
    /// Build the controller of `setup`.
    pub fn new(setup: &ArmSetup) -> Result<Self, ArmSetupError> {
        if !(setup.control_period_s.is_finite() && setup.control_period_s > 0.0) {
            return Err(ArmSetupError::Invalid("control_period_s"));
        }
        if !setup.tolerance_rad.is_finite() {
            return Err(ArmSetupError::Invalid("tolerance_rad"));
        }
        let config = ServoConfig {
            inertia_kgm2: setup.model.inertia_about_hinge_kgm2(),
            period_s: setup.state_period_s,
            torque_limit_nm: setup.torque_limit_nm,
            stability_margin: setup.stability_margin,
            ..ServoConfig::default()
        };
        let gain_limit = GainLimit::new(
            config.inertia_kgm2,
            config.period_s,
            config.integrator,
            config.stability_margin,
        )
        .map_err(|e| ArmSetupError::Servo(ConfigError::Gain(e)))?;
        let servo_err = ArmSetupError::Servo;
        let servo = match setup.kind {
            #[cfg(not(feature = "arm-f32-only"))]
            ArmServoKind::Analytic => {
                Servo::Analytic(ArrivalServo::new(config).map_err(servo_err)?)
            }
            #[cfg(not(feature = "arm-f32-only"))]
            ArmServoKind::FixedGain(gains) => {
                Servo::Fixed(FixedGainServo::new(config, gains).map_err(servo_err)?)
            }
            #[cfg(not(feature = "arm-f32-only"))]
            ArmServoKind::StaticTiming { time_constants } => {
                Servo::Static(StaticTimingServo::new(config, time_constants).map_err(servo_err)?)
            }
            #[cfg(feature = "micromath")]
            ArmServoKind::AnalyticF32 => {
                Servo::F32(ArrivalServoF32::new(config).map_err(servo_err)?)
            }
            #[cfg(not(feature = "micromath"))]
            ArmServoKind::AnalyticF32 => return Err(ArmSetupError::Unavailable),
            #[cfg(not(feature = "arm-f32-only"))]
            ArmServoKind::AnalyticFixed { gain_decimation } => Servo::FixedPoint(
                ArrivalServoFixed::new(config, gain_decimation).map_err(ArmSetupError::Fixed)?,
            ),
            #[cfg(feature = "arm-f32-only")]
            _ => return Err(ArmSetupError::Unavailable),
        };
        Ok(Self {
            servo,
            model: setup.model,
            tolerance_rad: setup.tolerance_rad,
            current: None,
            half_period_s: 0.5 * setup.control_period_s,
            gain_limit,
        })
    }

    /// One control tick at `now_s` on the measured `joint`, towards `targets` (in increasing time
    /// order; the same slice every tick). Never allocates, blocks or panics.
    pub fn tick(&mut self, targets: &[ArmTarget], now_s: f64, joint: JointState) -> ServoOutput {
        self.advance_plan(targets, now_s, joint.position_rad);
        // Gravity compensation from the model (weights and knocks are not in the model).
        let feedforward = -self.model.gravity_torque_nm(joint.position_rad);
        self.servo.as_dyn().tick(now_s, joint, feedforward)
    }

    /// The safe state's output for `joint`: damping only, torque-limited, zero gains.
    pub fn safe(&self, joint: JointState) -> ServoOutput {
        let torque = self.servo.as_ref().safe_torque(joint);
        ServoOutput {
            torque_nm: torque,
            requested_torque_nm: torque,
            stiffness_nm_per_rad: 0.0,
            damping_nms_per_rad: 0.0,
            status: ServoStatus::Holding,
            torque_limited: false,
        }
    }

    /// The gains the servo may use at most: the stable limit of the loop sampled at the state
    /// period, times the margin.
    pub fn gain_limit(&self) -> GainLimit {
        self.gain_limit
    }

    /// The index of the target being planned for (`None` before the first tick).
    pub fn current_target(&self) -> Option<usize> {
        self.current
    }

    /// Switch to the next target once the current one's instant has come (the arm still moves).
    fn advance_plan(&mut self, targets: &[ArmTarget], now: f64, angle_rad: f64) {
        let next = match self.current {
            None => 0,
            Some(i) if i + 1 < targets.len() => match targets.get(i) {
                Some(t) if now > t.time_s - self.half_period_s => i + 1,
                _ => return,
            },
            Some(_) => return,
        };
        let Some(target) = targets.get(next).copied() else {
            return;
        };
        let set = match &mut self.servo {
            // The analytic servos re-aim their setpoint every tick from the measured position.
            #[cfg(not(feature = "arm-f32-only"))]
            Servo::Analytic(s) => {
                s.set_pose_target(target.angle_rad, self.tolerance_rad, target.time_s)
            }
            #[cfg(feature = "micromath")]
            Servo::F32(s) => s.set_pose_target(target.angle_rad, self.tolerance_rad, target.time_s),
            #[cfg(not(feature = "arm-f32-only"))]
            Servo::FixedPoint(s) => {
                s.set_pose_target(target.angle_rad, self.tolerance_rad, target.time_s)
            }
            #[cfg(not(feature = "arm-f32-only"))]
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
        // A non-finite target keeps the previous plan (the caller checks its targets).
        if set.is_ok() {
            self.current = Some(next);
        }
    }
}

/// What [`ArmController::tick`] reads, as one value for [`Controller`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArmInput<'a> {
    /// The targets, in increasing time order (the same slice every tick).
    pub targets: &'a [ArmTarget],
    /// Now, s.
    pub now_s: f64,
    /// The measured joint.
    pub joint: JointState,
}

impl Controller<ArmInput<'_>> for ArmController {
    type Command = ServoOutput;
    type Error = core::convert::Infallible;

    fn tick(&mut self, input: &ArmInput<'_>) -> Result<ServoOutput, Self::Error> {
        Ok(ArmController::tick(
            self,
            input.targets,
            input.now_s,
            input.joint,
        ))
    }

    fn limits(command: &ServoOutput) -> Limits {
        command.limits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(kind: ArmServoKind) -> ArmSetup {
        ArmSetup {
            kind,
            model: ArmModel {
                length_m: 1.0,
                thickness_m: 0.06,
                mass_kg: 2.0,
                gravity_m_s2: 9.8,
            },
            state_period_s: 0.005,
            control_period_s: 0.005,
            torque_limit_nm: 1000.0,
            stability_margin: 0.8,
            tolerance_rad: 0.05,
        }
    }

    const TARGETS: [ArmTarget; 2] = [
        ArmTarget {
            time_s: 1.0,
            angle_rad: 0.5,
        },
        ArmTarget {
            time_s: 1.7,
            angle_rad: -0.6,
        },
    ];

    /// Integrate the arm's hinge (no gravity in the plant: the feed-forward cancels the model's)
    /// under each servo and check it passes each target near its instant.
    #[test]
    fn every_servo_reaches_the_first_target_and_switches_to_the_next() {
        let kinds = [
            ArmServoKind::Analytic,
            ArmServoKind::StaticTiming {
                time_constants: 5.0,
            },
            ArmServoKind::AnalyticFixed { gain_decimation: 1 },
        ];
        for kind in kinds {
            let s = setup(kind);
            let inertia = s.model.inertia_about_hinge_kgm2();
            let mut c = ArmController::new(&s).expect("valid setup");
            let mut joint = JointState {
                position_rad: -0.8,
                velocity_rad_s: 0.0,
            };
            let mut at_first = None;
            for step in 0..400 {
                let now = step as f64 * 0.005;
                let out = c.tick(&TARGETS, now, joint);
                assert!(out.torque_nm.is_finite());
                let gravity = s.model.gravity_torque_nm(joint.position_rad);
                joint.velocity_rad_s += 0.005 * (out.torque_nm + gravity) / inertia;
                joint.position_rad += 0.005 * joint.velocity_rad_s;
                if (now - 1.0).abs() < 1e-9 {
                    at_first = Some(joint.position_rad);
                }
            }
            let at_first = at_first.expect("t = 1 s was simulated");
            assert!((at_first - 0.5).abs() < 0.06, "{kind:?}: {at_first}");
            assert_eq!(c.current_target(), Some(1), "{kind:?}");
        }
    }

    #[test]
    fn bad_setups_are_refused() {
        let mut s = setup(ArmServoKind::Analytic);
        s.control_period_s = f64::NAN;
        assert_eq!(
            ArmController::new(&s).err(),
            Some(ArmSetupError::Invalid("control_period_s"))
        );
        let mut s = setup(ArmServoKind::Analytic);
        s.model.mass_kg = -1.0;
        assert!(matches!(
            ArmController::new(&s),
            Err(ArmSetupError::Servo(_))
        ));
        let s = setup(ArmServoKind::AnalyticFixed { gain_decimation: 0 });
        assert!(matches!(
            ArmController::new(&s),
            Err(ArmSetupError::Fixed(_))
        ));
    }

    #[test]
    fn the_safe_state_only_damps() {
        let c = ArmController::new(&setup(ArmServoKind::Analytic)).expect("valid setup");
        let out = c.safe(JointState {
            position_rad: 0.3,
            velocity_rad_s: 1.0,
        });
        assert!(out.torque_nm < 0.0);
        assert_eq!(out.stiffness_nm_per_rad, 0.0);
    }
}
