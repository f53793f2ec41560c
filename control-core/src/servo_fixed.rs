//! The arrival servo's torque law in fixed point, for microcontrollers without a double-precision
//! FPU (issue 11, the firmware profile): τ = sat(k·(θ_set − θ) − γ·ω + ff) in 32-bit fixed-point
//! operands with 64-bit products, the gains re-solved at a lower rate in reduced precision and
//! handed to the loop.
//!
//! It must never panic, never produce a torque outside the limit, and never saturate anything
//! silently: every conversion into a fixed-point format is checked, every sum saturates, and
//! whatever saturated is reported in [`ServoStatus::Saturated`].
//!
//! ```
//! use control_core::servo::{JointServo, JointState, ServoConfig, ServoStatus};
//! use control_core::servo_fixed::{ArrivalServoFixed, DEFAULT_GAIN_DECIMATION};
//! let config = ServoConfig { inertia_kgm2: 0.667, torque_limit_nm: 1000.0, ..ServoConfig::default() };
//! let mut servo = ArrivalServoFixed::new(config, DEFAULT_GAIN_DECIMATION)?;
//! servo.set_pose_target(0.5, 0.05, 1.0)?;
//! let out = servo.tick(0.0, JointState { position_rad: -0.8, velocity_rad_s: 0.0 }, 0.0);
//! assert_eq!(out.status, ServoStatus::Tracking);
//! assert!(out.torque_nm > 0.0 && out.torque_nm <= 1000.0);
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
//!
//! # The boundary
//!
//! [`ArrivalServoFixed`] implements [`JointServo`], so it takes f64 like every servo: the state,
//! the feed-forward and the plan are converted to fixed point on entry (rounded to nearest),
//! which models a firmware that reads its sensors into fixed point. The tick's clock stays an
//! f64 (a firmware would count ticks): it is only compared with the deadline and handed to the
//! gain solve. Non-finite inputs never reach a conversion: a NaN or infinite state, time or
//! feed-forward gives the safe output (damping only, zero for an unusable velocity) and
//! [`ServoStatus::BadState`], as in [`ArrivalServo`](crate::servo::ArrivalServo). Subnormal
//! inputs round to zero (that is quantisation, not saturation, and is not flagged).
//!
//! # Formats
//!
//! Chosen from the ball-blocking arm (1 m, 2 kg: m = 0.667 kg·m² about the shoulder, 200 Hz,
//! semi-implicit Euler, torque limit 1000 N·m, angles within ±π, velocities up to ~20 rad/s).
//! The stable limit of the sampled loop is γ_max = β·m/h with β = 4(√2 − 1), k_max = γ_max²/(4m)
//! = β²m/(4h²): 221 N·m·s/rad and 1.83e4 N·m/rad at margin 1 (the scene uses 0.8: 177 and
//! 1.17e4). Every operand is a 32-bit word, so each product is one 32×32→64 multiply (`SMULL`
//! on a Cortex-M3/M4; I32F32 × I32F32 would need a 64×64→128 sequence), and every product and
//! sum is an I32F32 word.
//!
//! | quantity | arm scene range | format | resolution | range (headroom) |
//! |---|---|---|---|---|
//! | angle θ, setpoint, pose, tolerance | ±π rad | I4F28 | 3.7e-9 rad | ±8 rad (2.5×) |
//! | error θ_set − θ | ±(2π + 0.05) rad | I4F28 | 3.7e-9 rad | ±8 rad (1.26×) |
//! | velocity ω | ±20 rad/s | I8F24 | 6.0e-8 rad/s | ±128 rad/s (6.4×) |
//! | stiffness k | 0 … 1.83e4 N·m/rad | I20F12 | 2.4e-4 N·m/rad | 5.2e5 (29×) |
//! | damping γ | 0 … 221 N·m·s/rad | I14F18 | 3.8e-6 N·m·s/rad | 8192 (37×) |
//! | k·(θ_set − θ) | ±1.2e5 N·m | I32F32 (from I24F40) | 2.3e-10 N·m | ±2.1e9 N·m |
//! | γ·ω | ±4.4e3 N·m | I32F32 (from I22F42) | 2.3e-10 N·m | ±2.1e9 N·m |
//! | feed-forward, request, torque, limit | ±1000 N·m (limit) | I32F32 | 2.3e-10 N·m | ±2.1e9 N·m |
//!
//! The gain formats bound the joints this servo accepts: at 200 Hz, margin 1, k_max fits I20F12
//! up to m ≈ 19 kg·m² and γ_max fits I14F18 up to m ≈ 24 kg·m² (k_max and γ_max scale as m/h²
//! and m/h). [`ArrivalServoFixed::new`] refuses a configuration whose stable limit, hold gains
//! or torque limit do not fit (or quantise to zero), so accepted gains never saturate. The
//! products cannot saturate: |k·e| < 2¹⁹·2³ and |γ·ω| < 2¹³·2⁷ are far inside I32F32; only the
//! feed-forward (any finite f64) can push the sum out of I32F32.
//!
//! Why not I16F16 for states: its 1.5e-5 rad step times k_max is 0.28 N·m of torque noise, and
//! k·e (up to 1.2e5 N·m) would overflow an I16F16 torque; why not I32F32 everywhere: 64×64-bit
//! products, and a resolution (2.3e-10 rad) no encoder has.
//!
//! # Saturation
//!
//! Each of these saturates to the format's bound and sets its flag in
//! [`FixedSaturation`]; a tick with any flag set reports [`ServoStatus::Saturated`] (the gain
//! solve's own status is then [`ArrivalServoFixed::gain_status`]) and its torque is the law's on
//! the saturated values, within the torque limit:
//!
//! - `position`, `velocity`, `feedforward`: a finite input outside its format.
//! - `setpoint`: a plan's setpoint, arrival, pose or tolerance outside ±8 rad (a plan is taken,
//!   since [`PlanError`] has no range variant, and flagged on every tick it is used), or the
//!   re-aimed setpoint pose ± tolerance leaving ±8 rad.
//! - `error`: θ_set − θ outside ±8 rad (both in range, on opposite sides beyond ±4 rad).
//! - `gains`: a solved gain outside its format (cannot happen for an accepted configuration:
//!   the gains are clamped to the stable limit, which was checked to fit; kept so that no
//!   conversion can saturate unreported).
//! - `request`: k·e − γω + ff outside I32F32 (only through the feed-forward).
//!
//! The torque limit is applied in I32F32 (the limit rounded down into the format) and reported
//! in `torque_limited` as usual. In [`ServoStatus::BadState`] and
//! [`JointServo::safe_torque`] the safe torque −γ_hold·ω uses the velocity saturated into I8F24:
//! beyond ±128 rad/s it brakes with γ_hold·128 N·m (before the limit) and is not flagged.
//!
//! # Gains at a lower rate
//!
//! Every `gain_decimation` ticks (and on the first tick of each plan) the gains are re-solved
//! from the fixed-point state, the setpoint re-aimed in fixed point, and the time to go, rounded
//! to f32, by [`solve_gains_f32`] (the place where an f32 solver plugs in), clamped to the
//! stable limit (or the closest stable arrival when there is no stable solution, as
//! [`ArrivalServo`](crate::servo::ArrivalServo) does), rounded to f32 and converted to fixed
//! point. The ticks between use those gains with the setpoint re-aimed in fixed point every
//! tick; after the deadline the hold gains are used at once. At 200 Hz,
//! [`DEFAULT_GAIN_DECIMATION`] = 4 re-solves at 50 Hz.
//!
//! The effect: an undisturbed critically damped motion is the same motion whichever instant its
//! gains were solved at, so between re-solves the gains are (up to rounding) what a re-solve
//! would give. A disturbance (a weight landing) is corrected up to `gain_decimation − 1` ticks
//! (15 ms at 4) late, by the old gains in the meantime; and near the deadline, where the
//! arriving gains grow fast, the gains lag by up to that much and the limit clamp comes up to
//! that much later. The decimation is per servo, configurable, and 1 re-solves every tick.
//!
//! # Quantisation
//!
//! With the same gains, the fixed-point request differs from the exact law
//! k·(θ_set − θ) − γω + ff on the same f64 inputs by at most
//! `k·3·2⁻²⁹ + γ·2⁻²⁵ + 3·2⁻³²` N·m (the re-aimed setpoint carries the rounding of pose and
//! tolerance, θ its own, each ≤ 2⁻²⁹; ω ≤ 2⁻²⁵; the feed-forward ≤ 2⁻³³ and two products
//! truncated by < 2⁻³² each): at the scene's k_max, γ_max that is 1.1e-4 N·m
//! ([`law_quantisation_bound_nm`], tested on a grid of arm states). Against
//! [`ArrivalServo`](crate::servo::ArrivalServo) the gains differ too: the f32 rounding of the
//! solve's inputs and outputs and the gain formats (2⁻¹³ N·m/rad, 2⁻¹⁹ N·m·s/rad, half a
//! step each), so |Δτ| ≤ law bound + |θ_set − θ|·|Δk| + |ω|·|Δγ|. Measured on a grid of
//! 13 500 arm states (`agrees_with_the_f64_servo_on_the_arm_grid`: angles over ±π, ±20 rad/s,
//! the scene's poses, 5 ms to 0.7 s to go): the law stays within 0.66 of its bound; the gains
//! agree within one format step plus 2.3e-5 relative (the worst at one tick to go); the largest
//! torque difference is 3.8e-3 N·m; and 3 states get another status, where the f64 solve finds
//! an ill-conditioned, essentially zero gain (γ ≈ 2e-15 from θ = 0, ω = −10 rad/s towards
//! −0.25 rad in 20 ms) that the f32-rounded problem does not have (it clamps instead). A pose
//! within half an angle step of θ may be re-aimed to the other side.
//!
//! Those figures are for the f64 solve given the problem rounded to f32 (the build without the
//! `micromath` feature). With `micromath` the gains come from the f32 solver
//! (`gains_f32`), whose Lambert W inherits micromath's `ln` error: on the same grid the
//! gains then agree within 1.97e-2 relative (the worst at one tick to go) and the torques within
//! 0.47 N·m; the law's own bound is unchanged. On the ball-blocking job (`hil run
//! scenarios/ball_blocking_firmware.toml`) both give the same arrival errors to three digits.
//!
//! # Cost
//!
//! `cargo bench -p control-core --bench servo_fixed` (this machine, x86-64, under load ~3 on 2
//! cores; ns per tick, medians over 256 arm states): f64 [`ArrivalServo`](crate::servo::ArrivalServo)
//! 100; fixed point at decimation 4: 70; at decimation 1: 167 (the f32-rounded solve and its
//! conversions); the fixed-point law alone (between solves): 38, most of it the checked f64 →
//! fixed conversions at the boundary. These are host figures; on an MCU without a
//! double-precision FPU the ratios differ and are not measured here.

use core::fmt;

use fixed::traits::{Fixed, ToFixed};
use fixed::types::{I4F28, I8F24, I14F18, I20F12, I32F32};

use crate::gains::{ArrivalProblem, CriticalGains, GainError, GainLimit};
use crate::servo::{
    ArrivalPlan, Common, ConfigError, JointServo, JointState, PlanError, ServoConfig, ServoOutput,
    ServoStatus, check_plan, inputs_finite,
};

/// Angles, setpoints, tolerances and the angle error, rad: ±8 rad in steps of 3.7e-9 rad.
pub type AngleFx = I4F28;
/// Angular velocity, rad/s: ±128 rad/s in steps of 6.0e-8 rad/s.
pub type VelocityFx = I8F24;
/// Stiffness k, N·m/rad: up to 5.2e5 in steps of 2.4e-4.
pub type StiffnessFx = I20F12;
/// Damping γ, N·m·s/rad: up to 8192 in steps of 3.8e-6.
pub type DampingFx = I14F18;
/// Torques, the feed-forward, the products and the limit, N·m: ±2.1e9 in steps of 2.3e-10.
pub type TorqueFx = I32F32;

/// Gains re-solved every 4th tick: 50 Hz at a 200 Hz tick.
pub const DEFAULT_GAIN_DECIMATION: u32 = 4;

/// Which quantities saturated into their fixed-point format this tick (module docs,
/// "Saturation"). Any flag set makes the tick's status [`ServoStatus::Saturated`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FixedSaturation {
    /// The measured angle was outside ±8 rad.
    pub position: bool,
    /// The measured velocity was outside ±128 rad/s.
    pub velocity: bool,
    /// The plan's setpoint, arrival, pose or tolerance, or the re-aimed setpoint, was outside
    /// ±8 rad.
    pub setpoint: bool,
    /// θ_set − θ was outside ±8 rad.
    pub error: bool,
    /// The feed-forward was outside ±2.1e9 N·m.
    pub feedforward: bool,
    /// A solved gain was outside its format (not reachable with an accepted configuration).
    pub gains: bool,
    /// k·e − γω + ff was outside ±2.1e9 N·m.
    pub request: bool,
}

impl FixedSaturation {
    /// Whether anything saturated.
    pub fn any(&self) -> bool {
        self.position
            || self.velocity
            || self.setpoint
            || self.error
            || self.feedforward
            || self.gains
            || self.request
    }
}

/// Why a fixed-point servo could not be built.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum FixedConfigError {
    /// The configuration is refused by every servo ([`ConfigError`]).
    Config(ConfigError),
    /// `gain_decimation` is 0 (1 re-solves every tick).
    ZeroDecimation,
    /// A value the configuration implies does not fit its fixed-point format, or quantises to
    /// zero in it (module docs, "Formats").
    OutOfFormat {
        /// Which value: `torque_limit_nm`, `max_stiffness_nm_per_rad`, `max_damping_nms_per_rad`
        /// or `hold_damping_nms_per_rad`.
        field: &'static str,
        /// Its value.
        value: f64,
    },
}

impl fmt::Display for FixedConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => e.fmt(f),
            Self::ZeroDecimation => write!(f, "fixed-point servo: gain_decimation must be ≥ 1"),
            Self::OutOfFormat { field, value } => write!(
                f,
                "fixed-point servo: {field} = {value} does not fit its fixed-point format"
            ),
        }
    }
}

impl core::error::Error for FixedConfigError {}

impl From<ConfigError> for FixedConfigError {
    fn from(e: ConfigError) -> Self {
        Self::Config(e)
    }
}

/// `value` in the format `F`, rounded to nearest; outside the format it saturates and sets
/// `saturated`; NaN gives zero and sets it (never reached: callers check finiteness first).
fn to_fixed<F: Fixed, S: ToFixed + Copy + PartialEq>(value: S, saturated: &mut bool) -> F {
    // NaN is the one value unequal to itself: `saturating_from_num` would panic on it.
    #[allow(clippy::eq_op)]
    if value != value {
        *saturated = true;
        return F::ZERO;
    }
    match F::checked_from_num(value) {
        Some(v) => v,
        None => {
            *saturated = true;
            F::saturating_from_num(value)
        }
    }
}

/// a − b in `F`, saturating and flagging.
fn sub_flagged<F: Fixed>(a: F, b: F, saturated: &mut bool) -> F {
    a.checked_sub(b).unwrap_or_else(|| {
        *saturated = true;
        a.saturating_sub(b)
    })
}

/// a + b in `F`, saturating and flagging.
fn add_flagged<F: Fixed>(a: F, b: F, saturated: &mut bool) -> F {
    a.checked_add(b).unwrap_or_else(|| {
        *saturated = true;
        a.saturating_add(b)
    })
}

/// The gain solve of the slow loop, in f32.
///
/// With the `micromath` feature this is the f32 solver (`gains_f32`: Lambert W and the
/// solve computed in f32, exp/ln from micromath), given the problem rounded to f32. Without it,
/// an f32 solver is modelled: the problem is rounded to f32, solved by the f64
/// [`crate::gains::solve_arrival_gains`], and the gains rounded to f32.
pub fn solve_gains_f32(problem: &ArrivalProblem) -> Result<CriticalGains, GainError> {
    #[cfg(feature = "micromath")]
    {
        let p = round_problem_to_f32(problem);
        let narrow = |v: f64| v as f32;
        let gains =
            crate::gains_f32::solve_arrival_gains_f32(&crate::gains_f32::ArrivalProblemF32 {
                inertia_kgm2: narrow(p.inertia_kgm2),
                position_rad: narrow(p.position_rad),
                velocity_rad_s: narrow(p.velocity_rad_s),
                setpoint_rad: narrow(p.setpoint_rad),
                arrival_rad: narrow(p.arrival_rad),
                time_to_go_s: narrow(p.time_to_go_s),
            })?;
        Ok(CriticalGains {
            stiffness_nm_per_rad: f64::from(gains.stiffness_nm_per_rad),
            damping_nms_per_rad: f64::from(gains.damping_nms_per_rad),
            branch: gains.branch,
        })
    }
    #[cfg(not(feature = "micromath"))]
    {
        let gains = crate::gains::solve_arrival_gains(&round_problem_to_f32(problem))?;
        Ok(CriticalGains {
            stiffness_nm_per_rad: round_to_f32(gains.stiffness_nm_per_rad),
            damping_nms_per_rad: round_to_f32(gains.damping_nms_per_rad),
            branch: gains.branch,
        })
    }
}

fn round_to_f32(v: f64) -> f64 {
    // A float-to-float cast: rounds to nearest, never panics (out of range gives ±∞).
    f64::from(v as f32)
}

fn round_problem_to_f32(p: &ArrivalProblem) -> ArrivalProblem {
    ArrivalProblem {
        inertia_kgm2: round_to_f32(p.inertia_kgm2),
        position_rad: round_to_f32(p.position_rad),
        velocity_rad_s: round_to_f32(p.velocity_rad_s),
        setpoint_rad: round_to_f32(p.setpoint_rad),
        arrival_rad: round_to_f32(p.arrival_rad),
        time_to_go_s: round_to_f32(p.time_to_go_s),
    }
}

/// The bound (module docs, "Quantisation") on |fixed-point request − exact law| for gains
/// `stiffness_nm_per_rad`, `damping_nms_per_rad` (those the fixed-point servo used, as its output
/// reports them), N·m.
pub fn law_quantisation_bound_nm(stiffness_nm_per_rad: f64, damping_nms_per_rad: f64) -> f64 {
    // Half a step of each format: the rounding to nearest on entry.
    let angle = 0.5 * AngleFx::DELTA.to_num::<f64>();
    let velocity = 0.5 * VelocityFx::DELTA.to_num::<f64>();
    let torque = TorqueFx::DELTA.to_num::<f64>();
    stiffness_nm_per_rad.abs() * 3.0 * angle + damping_nms_per_rad.abs() * velocity + 3.0 * torque
}

/// Critically damped gains in their fixed-point formats.
#[derive(Debug, Clone, Copy, PartialEq)]
struct FixedGains {
    stiffness: StiffnessFx,
    damping: DampingFx,
}

impl FixedGains {
    /// Rounded to f32, then into the formats (saturating, flagged).
    fn from_f32(gains: &CriticalGains, saturated: &mut bool) -> Self {
        Self {
            stiffness: to_fixed(gains.stiffness_nm_per_rad as f32, saturated),
            damping: to_fixed(gains.damping_nms_per_rad as f32, saturated),
        }
    }
}

/// A plan in fixed point.
#[derive(Debug, Clone, Copy)]
struct FixedPlan {
    /// As given (for [`ArrivalServoFixed::plan`]).
    given: ArrivalPlan,
    setpoint: AngleFx,
    arrival: AngleFx,
    /// With a pose target: the tolerance the setpoint is re-aimed beyond the pose every tick.
    reaim: Option<AngleFx>,
    /// Whether a value of the plan saturated on entry.
    saturated: bool,
}

/// What the last gain solve gave.
#[derive(Debug, Clone, Copy)]
enum Solved {
    Gains(FixedGains, ServoStatus, bool),
    /// No gain at all (the safe state until the next solve).
    Safe,
}

/// The arrival servo with its torque law in fixed point and its gains re-solved every
/// `gain_decimation` ticks (module docs).
#[derive(Debug, Clone, Copy)]
pub struct ArrivalServoFixed {
    common: Common,
    gain_decimation: u32,
    torque_limit: TorqueFx,
    hold: FixedGains,
    plan: Option<FixedPlan>,
    solved: Option<Solved>,
    ticks_since_solve: u32,
    gain_status: ServoStatus,
}

impl ArrivalServoFixed {
    /// A servo with no plan (it idles: feed-forward and hold damping), re-solving its gains
    /// every `gain_decimation` ticks ([`DEFAULT_GAIN_DECIMATION`] at 200 Hz: 50 Hz).
    ///
    /// Refused: what [`ArrivalServo::new`](crate::servo::ArrivalServo::new) refuses, a zero
    /// decimation, and a torque limit, stable gain limit or hold damping that does not fit its
    /// format or quantises to zero (module docs, "Formats").
    pub fn new(config: ServoConfig, gain_decimation: u32) -> Result<Self, FixedConfigError> {
        let common = Common::new(config)?;
        if gain_decimation == 0 {
            return Err(FixedConfigError::ZeroDecimation);
        }
        let fits = |field: &'static str, value: f64, positive: bool| {
            let out = FixedConfigError::OutOfFormat { field, value };
            let mut saturated = false;
            let fx: TorqueFx = to_fixed(value, &mut saturated);
            (!(saturated || positive && fx == TorqueFx::ZERO))
                .then_some(fx)
                .ok_or(out)
        };
        // The limit, rounded down into the format, so that no torque exceeds the f64 limit.
        let mut torque_limit = fits("torque_limit_nm", config.torque_limit_nm, true)?;
        if torque_limit.to_num::<f64>() > config.torque_limit_nm {
            torque_limit -= TorqueFx::DELTA;
        }
        if torque_limit == TorqueFx::ZERO {
            return Err(FixedConfigError::OutOfFormat {
                field: "torque_limit_nm",
                value: config.torque_limit_nm,
            });
        }
        let limit = common.limit;
        let mut saturated = false;
        let max = FixedGains::from_f32(
            &CriticalGains {
                stiffness_nm_per_rad: limit.max_stiffness_nm_per_rad,
                damping_nms_per_rad: limit.max_damping_nms_per_rad,
                branch: common.hold.branch,
            },
            &mut saturated,
        );
        if saturated || max.stiffness == StiffnessFx::ZERO {
            return Err(FixedConfigError::OutOfFormat {
                field: "max_stiffness_nm_per_rad",
                value: limit.max_stiffness_nm_per_rad,
            });
        }
        if max.damping == DampingFx::ZERO {
            return Err(FixedConfigError::OutOfFormat {
                field: "max_damping_nms_per_rad",
                value: limit.max_damping_nms_per_rad,
            });
        }
        // Within the limit, so it fits; zero only for a vanishing hold.
        let hold = FixedGains::from_f32(&common.hold, &mut saturated);
        if saturated || hold.damping == DampingFx::ZERO {
            return Err(FixedConfigError::OutOfFormat {
                field: "hold_damping_nms_per_rad",
                value: common.hold.damping_nms_per_rad,
            });
        }
        Ok(Self {
            common,
            gain_decimation,
            torque_limit,
            hold,
            plan: None,
            solved: None,
            ticks_since_solve: 0,
            gain_status: ServoStatus::Idle,
        })
    }

    /// Pass through `pose_rad` at `deadline_s`, with the setpoint re-aimed every tick, in fixed
    /// point, `tolerance_rad` beyond the pose as seen from the measured position (as
    /// [`ArrivalServo::set_pose_target`](crate::servo::ArrivalServo::set_pose_target)). A pose
    /// or tolerance outside ±8 rad is taken saturated and flagged on every tick.
    pub fn set_pose_target(
        &mut self,
        pose_rad: f64,
        tolerance_rad: f64,
        deadline_s: f64,
    ) -> Result<(), PlanError> {
        let given = ArrivalPlan::approach(pose_rad, tolerance_rad, pose_rad, deadline_s);
        check_plan(&given)?;
        let mut saturated = false;
        let arrival = to_fixed(pose_rad, &mut saturated);
        let tolerance = to_fixed(tolerance_rad.abs(), &mut saturated);
        self.replace_plan(FixedPlan {
            given,
            setpoint: to_fixed(given.setpoint_rad, &mut saturated),
            arrival,
            reaim: Some(tolerance),
            saturated,
        });
        Ok(())
    }

    /// The stable gain limit in use.
    pub fn gain_limit(&self) -> GainLimit {
        self.common.limit
    }

    /// The current plan, as given.
    pub fn plan(&self) -> Option<ArrivalPlan> {
        self.plan.map(|p| p.given)
    }

    /// Every how many ticks the gains are re-solved.
    pub fn gain_decimation(&self) -> u32 {
        self.gain_decimation
    }

    /// The status of the gains in use: the last solve's (Tracking, GainClamped, Infeasible,
    /// BadState when it found no gain), or Idle, Holding, BadState for the last tick's state.
    /// Unlike the tick's status it is never [`ServoStatus::Saturated`].
    pub fn gain_status(&self) -> ServoStatus {
        self.gain_status
    }

    /// The torque limit as the loop applies it (rounded down into I32F32), N·m.
    pub fn torque_limit_nm(&self) -> f64 {
        self.torque_limit.to_num()
    }

    fn replace_plan(&mut self, plan: FixedPlan) {
        self.plan = Some(plan);
        self.solved = None;
    }

    fn limit(&self, requested: TorqueFx) -> (TorqueFx, bool) {
        let l = self.torque_limit;
        if requested > l {
            (l, true)
        } else if requested < -l {
            (-l, true)
        } else {
            (requested, false)
        }
    }

    /// The safe torque −γ_hold·ω in fixed point: (torque, request, limited); zero for an
    /// unusable velocity.
    fn safe_request(&self, velocity_rad_s: f64) -> (TorqueFx, TorqueFx, bool) {
        if !velocity_rad_s.is_finite() {
            return (TorqueFx::ZERO, TorqueFx::ZERO, false);
        }
        // Saturated into I8F24 (module docs: not flagged in the safe state).
        let omega: VelocityFx = to_fixed(velocity_rad_s, &mut false);
        let damping: TorqueFx = self.hold.damping.wide_mul(omega).saturating_to_num();
        let requested = damping.saturating_neg();
        let (torque, limited) = self.limit(requested);
        (torque, requested, limited)
    }

    fn bad_state(&mut self, state: JointState) -> ServoOutput {
        self.gain_status = ServoStatus::BadState;
        let (torque, requested, limited) = self.safe_request(state.velocity_rad_s);
        ServoOutput {
            torque_nm: torque.to_num(),
            status: ServoStatus::BadState,
            stiffness_nm_per_rad: 0.0,
            damping_nms_per_rad: self.hold.damping.to_num(),
            torque_limited: limited,
            requested_torque_nm: requested.to_num(),
        }
    }

    /// τ = sat(k·(θ_set − θ) − γ·ω + ff), every step in fixed point.
    #[allow(clippy::too_many_arguments)]
    fn law(
        &self,
        gains: FixedGains,
        setpoint: AngleFx,
        theta: AngleFx,
        omega: VelocityFx,
        feedforward: TorqueFx,
        status: ServoStatus,
        mut saturation: FixedSaturation,
    ) -> ServoOutput {
        let error = sub_flagged(setpoint, theta, &mut saturation.error);
        // I20F12 × I4F28 = I24F40 and I14F18 × I8F24 = I22F42, exact in 64 bits; into I32F32
        // by dropping fractional bits (rounding towards −∞), never out of range.
        let spring: TorqueFx = gains.stiffness.wide_mul(error).saturating_to_num();
        let damper: TorqueFx = gains.damping.wide_mul(omega).saturating_to_num();
        let requested = sub_flagged(spring, damper, &mut saturation.request);
        let requested = add_flagged(requested, feedforward, &mut saturation.request);
        let (torque, limited) = self.limit(requested);
        ServoOutput {
            torque_nm: torque.to_num(),
            status: if saturation.any() {
                ServoStatus::Saturated(saturation)
            } else {
                status
            },
            stiffness_nm_per_rad: gains.stiffness.to_num(),
            damping_nms_per_rad: gains.damping.to_num(),
            torque_limited: limited,
            requested_torque_nm: requested.to_num(),
        }
    }

    /// The slow loop: gains for the fixed-point state, re-aimed setpoint and time to go.
    fn solve(
        &self,
        plan: &FixedPlan,
        setpoint: AngleFx,
        theta: AngleFx,
        omega: VelocityFx,
        time_to_go_s: f64,
    ) -> Solved {
        let problem = ArrivalProblem {
            inertia_kgm2: self.common.config.inertia_kgm2,
            position_rad: theta.to_num(),
            velocity_rad_s: omega.to_num(),
            setpoint_rad: setpoint.to_num(),
            arrival_rad: plan.arrival.to_num(),
            time_to_go_s,
        };
        match self
            .common
            .arrival_gains(&round_problem_to_f32(&problem), solve_gains_f32)
        {
            Some((gains, status)) => {
                let mut saturated = false;
                let gains = FixedGains::from_f32(&gains, &mut saturated);
                Solved::Gains(gains, status, saturated)
            }
            None => Solved::Safe,
        }
    }
}

impl JointServo for ArrivalServoFixed {
    /// A setpoint or arrival outside ±8 rad is taken saturated and flagged on every tick.
    fn set_plan(&mut self, plan: ArrivalPlan, _now_s: f64) -> Result<(), PlanError> {
        check_plan(&plan)?;
        let mut saturated = false;
        self.replace_plan(FixedPlan {
            given: plan,
            setpoint: to_fixed(plan.setpoint_rad, &mut saturated),
            arrival: to_fixed(plan.arrival_rad, &mut saturated),
            reaim: None,
            saturated,
        });
        Ok(())
    }

    fn tick(&mut self, now_s: f64, state: JointState, feedforward_nm: f64) -> ServoOutput {
        if !inputs_finite(now_s, &state, feedforward_nm) {
            return self.bad_state(state);
        }
        let mut saturation = FixedSaturation::default();
        let theta: AngleFx = to_fixed(state.position_rad, &mut saturation.position);
        let omega: VelocityFx = to_fixed(state.velocity_rad_s, &mut saturation.velocity);
        let feedforward: TorqueFx = to_fixed(feedforward_nm, &mut saturation.feedforward);
        let Some(plan) = self.plan else {
            self.gain_status = ServoStatus::Idle;
            let damping_only = FixedGains {
                stiffness: StiffnessFx::ZERO,
                ..self.hold
            };
            let idle = ServoStatus::Idle;
            return self.law(
                damping_only,
                theta,
                theta,
                omega,
                feedforward,
                idle,
                saturation,
            );
        };
        saturation.setpoint |= plan.saturated;
        let setpoint = match plan.reaim {
            Some(tolerance) if plan.arrival >= theta => {
                add_flagged(plan.arrival, tolerance, &mut saturation.setpoint)
            }
            Some(tolerance) => sub_flagged(plan.arrival, tolerance, &mut saturation.setpoint),
            None => plan.setpoint,
        };
        let time_to_go_s = plan.given.deadline_s - now_s;
        if time_to_go_s <= 0.0 {
            self.gain_status = ServoStatus::Holding;
            let holding = ServoStatus::Holding;
            return self.law(
                self.hold,
                setpoint,
                theta,
                omega,
                feedforward,
                holding,
                saturation,
            );
        }
        let solved = match self.solved {
            Some(solved) if self.ticks_since_solve < self.gain_decimation => solved,
            _ => {
                let solved = self.solve(&plan, setpoint, theta, omega, time_to_go_s);
                self.solved = Some(solved);
                self.ticks_since_solve = 0;
                solved
            }
        };
        self.ticks_since_solve = self.ticks_since_solve.saturating_add(1);
        match solved {
            Solved::Gains(gains, status, gains_saturated) => {
                self.gain_status = status;
                saturation.gains = gains_saturated;
                self.law(
                    gains,
                    setpoint,
                    theta,
                    omega,
                    feedforward,
                    status,
                    saturation,
                )
            }
            Solved::Safe => self.bad_state(state),
        }
    }

    fn safe_torque(&self, state: JointState) -> f64 {
        self.safe_request(state.velocity_rad_s).0.to_num()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gains::Integrator;
    use crate::servo::ArrivalServo;
    use proptest::prelude::*;

    /// The ball-blocking arm: 1 m, 2 kg (m = 0.6673 kg·m²), 200 Hz, 1000 N·m, margin 0.8.
    fn arm() -> ServoConfig {
        ServoConfig {
            inertia_kgm2: 2.0 * (1.0 + 0.06 * 0.06) / 12.0 + 0.5,
            period_s: 0.005,
            torque_limit_nm: 1000.0,
            integrator: Integrator::SemiImplicitEuler,
            stability_margin: 0.8,
            hold_natural_freq_rad_s: 10.0,
        }
    }

    fn state(position_rad: f64, velocity_rad_s: f64) -> JointState {
        JointState {
            position_rad,
            velocity_rad_s,
        }
    }

    fn saturation(out: &ServoOutput) -> FixedSaturation {
        match out.status {
            ServoStatus::Saturated(s) => s,
            _ => FixedSaturation::default(),
        }
    }

    #[test]
    fn the_arm_scene_fits_its_formats() {
        let servo = ArrivalServoFixed::new(arm(), DEFAULT_GAIN_DECIMATION).unwrap();
        assert!(servo.torque_limit_nm() <= 1000.0 && servo.torque_limit_nm() > 999.999_999);
        let limit = servo.gain_limit();
        // Margin 1 is the scene's worst case: 1.83e4 N·m/rad, 221 N·m·s/rad.
        let edge = ArrivalServoFixed::new(
            ServoConfig {
                stability_margin: 1.0,
                ..arm()
            },
            1,
        )
        .unwrap();
        let edge = edge.gain_limit();
        assert!((edge.max_stiffness_nm_per_rad - 18_317.6).abs() < 0.1);
        assert!((edge.max_damping_nms_per_rad - 221.11).abs() < 0.01);
        assert!(edge.max_stiffness_nm_per_rad * 28.0 < StiffnessFx::MAX.to_num::<f64>());
        assert!(edge.max_damping_nms_per_rad * 37.0 < DampingFx::MAX.to_num::<f64>());
        assert!(limit.max_stiffness_nm_per_rad < edge.max_stiffness_nm_per_rad);
    }

    #[test]
    fn configurations_outside_the_formats_are_refused_and_named() {
        let refused = |config: ServoConfig, decimation: u32| {
            ArrivalServoFixed::new(config, decimation).unwrap_err()
        };
        assert_eq!(refused(arm(), 0), FixedConfigError::ZeroDecimation);
        let field = |e: FixedConfigError| match e {
            FixedConfigError::OutOfFormat { field, .. } => field,
            other => panic!("{other:?}"),
        };
        let with = |f: &dyn Fn(&mut ServoConfig)| {
            let mut c = arm();
            f(&mut c);
            c
        };
        assert_eq!(
            field(refused(with(&|c| c.torque_limit_nm = 3e9), 4)),
            "torque_limit_nm"
        );
        assert_eq!(
            field(refused(with(&|c| c.torque_limit_nm = 1e-12), 4)),
            "torque_limit_nm"
        );
        assert_eq!(
            field(refused(with(&|c| c.torque_limit_nm = f64::MAX), 4)),
            "torque_limit_nm"
        );
        // k_max ∝ m/h²: a 100 kg·m² joint, or a 20 kHz loop, is beyond I20F12.
        assert_eq!(
            field(refused(with(&|c| c.inertia_kgm2 = 100.0), 4)),
            "max_stiffness_nm_per_rad"
        );
        assert_eq!(
            field(refused(with(&|c| c.period_s = 5e-5), 4)),
            "max_stiffness_nm_per_rad"
        );
        // Vanishing inertia: the stable limit quantises to zero.
        assert_eq!(
            field(refused(with(&|c| c.inertia_kgm2 = 1e-12), 4)),
            "max_stiffness_nm_per_rad"
        );
        assert!(matches!(
            refused(with(&|c| c.inertia_kgm2 = f64::NAN), 4),
            FixedConfigError::Config(ConfigError::Invalid("inertia_kgm2"))
        ));
        // The edge of the format at 200 Hz, margin 1: m ≈ 19 kg·m² fits, 19.2 does not.
        let margin1 = |m: f64| ServoConfig {
            inertia_kgm2: m,
            stability_margin: 1.0,
            ..arm()
        };
        assert!(ArrivalServoFixed::new(margin1(19.0), 1).is_ok());
        assert!(ArrivalServoFixed::new(margin1(19.2), 1).is_err());
        // Extreme but representable: the smallest and largest limits, u32::MAX decimation.
        assert!(ArrivalServoFixed::new(with(&|c| c.torque_limit_nm = 2e9), u32::MAX).is_ok());
        assert!(ArrivalServoFixed::new(with(&|c| c.torque_limit_nm = 1e-9), 1).is_ok());
    }

    #[test]
    fn the_range_edges_are_computed_without_saturation() {
        let mut servo = ArrivalServoFixed::new(arm(), 1).unwrap();
        let edge = 8.0 - 1e-8;
        // Deepest in range: pose at the top edge minus the tolerance, the arm at the bottom
        // edge... the error then leaves ±8 rad (tested below); here both ends of the range on the
        // same side, the fastest representable velocity, and the clamped (largest) gains.
        servo.set_pose_target(edge - 0.05, 0.05, 1.0).unwrap();
        for (x, v) in [
            (edge, 127.99),
            (0.0, -127.99),
            (edge, -127.99),
            (0.5, 127.99),
        ] {
            let out = servo.tick(0.999, state(x, v), 0.0);
            assert!(!saturation(&out).any(), "({x}, {v}): {out:?}");
            assert!(out.torque_nm.abs() <= 1000.0 && out.requested_torque_nm.is_finite());
            assert!(out.status != ServoStatus::BadState);
        }
        // The largest gains on the largest error the scene has (2π + 0.05 rad): 1.2e5 N·m
        // requested in range, cut to the limit.
        let mut servo = ArrivalServoFixed::new(
            ServoConfig {
                stability_margin: 1.0,
                ..arm()
            },
            1,
        )
        .unwrap();
        servo
            .set_pose_target(core::f64::consts::PI, 0.05, 1.0)
            .unwrap();
        let out = servo.tick(0.999_9, state(-core::f64::consts::PI, -20.0), 0.0);
        assert_eq!(out.status, ServoStatus::GainClamped);
        let expected = out.stiffness_nm_per_rad * (2.0 * core::f64::consts::PI + 0.05)
            + out.damping_nms_per_rad * 20.0;
        assert!((out.requested_torque_nm - expected).abs() < 1e-3, "{out:?}");
        assert!(out.requested_torque_nm > 1.1e5);
        assert_eq!((out.torque_nm, out.torque_limited), (1000.0, true));
    }

    #[test]
    fn inputs_beyond_the_formats_saturate_and_say_so() {
        let mut servo = ArrivalServoFixed::new(arm(), 1).unwrap();
        servo.set_pose_target(0.5, 0.05, 1.0).unwrap();
        let flags = |servo: &mut ArrivalServoFixed, x: f64, v: f64, ff: f64| {
            let out = servo.tick(0.5, state(x, v), ff);
            assert!(out.torque_nm.abs() <= 1000.0, "{out:?}");
            assert!(out.requested_torque_nm.is_finite());
            (saturation(&out), out)
        };
        let (s, out) = flags(&mut servo, 8.5, 0.0, 0.0);
        assert!(s.position && !s.velocity && !s.error, "{s:?}");
        assert!(out.torque_nm < 0.0);
        let (s, out) = flags(&mut servo, -8.5, 0.0, 0.0);
        assert!(s.position, "{s:?}");
        assert!(out.torque_nm > 0.0);
        let (s, out) = flags(&mut servo, 0.0, 300.0, 0.0);
        assert!(s.velocity && !s.position, "{s:?}");
        assert!(out.torque_nm < 0.0);
        let (s, _) = flags(&mut servo, 0.0, -1e300, 0.0);
        assert!(s.velocity, "{s:?}");
        // (The spring term then pushes the saturated sum over the edge too.)
        let (s, out) = flags(&mut servo, 0.0, 0.0, 1e12);
        assert!(s.feedforward && s.request, "{s:?}");
        assert_eq!((out.torque_nm, out.torque_limited), (1000.0, true));
        let (s, out) = flags(&mut servo, 0.0, 0.0, -f64::MAX);
        assert!(s.feedforward, "{s:?}");
        assert_eq!(out.torque_nm, -1000.0);
        // A feed-forward at the top of I32F32 plus a positive spring term: the sum saturates.
        let top = TorqueFx::MAX.to_num::<f64>() - 1.0;
        let (s, out) = flags(&mut servo, -3.0, 0.0, top);
        assert!(s.request && !s.feedforward, "{s:?}");
        assert_eq!(out.requested_torque_nm, TorqueFx::MAX.to_num::<f64>());
        assert_eq!(out.torque_nm, 1000.0);
        // In range on both sides, but 15.9 rad apart: the error saturates (towards the pose).
        servo.set_pose_target(7.9, 0.05, 1.0).unwrap();
        let (s, out) = flags(&mut servo, -7.9, 0.0, 0.0);
        assert!(s.error && !s.position && !s.setpoint, "{s:?}");
        assert!(out.torque_nm > 0.0);
        // A pose re-aimed beyond +8 rad.
        servo.set_pose_target(7.99, 0.05, 1.0).unwrap();
        let (s, _) = flags(&mut servo, 7.0, 0.0, 0.0);
        assert!(s.setpoint, "{s:?}");
        // A plan outside the format is taken, and flagged on every tick.
        servo
            .set_plan(
                ArrivalPlan {
                    setpoint_rad: 9.0,
                    arrival_rad: 8.9,
                    deadline_s: 1.0,
                },
                0.0,
            )
            .unwrap();
        for t in [0.1, 0.2, 1.5] {
            let out = servo.tick(t, state(0.0, 0.0), 0.0);
            assert!(saturation(&out).setpoint, "{out:?}");
            assert!(out.torque_nm > 0.0);
        }
        assert_eq!(servo.gain_status(), ServoStatus::Holding);
    }

    #[test]
    fn non_finite_inputs_give_the_safe_state() {
        let mut servo = ArrivalServoFixed::new(arm(), 4).unwrap();
        servo.set_pose_target(0.5, 0.05, 1.0).unwrap();
        let hold = servo.hold.damping.to_num::<f64>();
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            for (now, x, v, ff) in [
                (bad, 0.0, 2.0, 0.0),
                (0.0, bad, 2.0, 0.0),
                (0.0, 0.0, 2.0, bad),
            ] {
                let out = servo.tick(now, state(x, v), ff);
                assert_eq!(out.status, ServoStatus::BadState);
                assert_eq!(servo.gain_status(), ServoStatus::BadState);
                assert!((out.torque_nm + 2.0 * hold).abs() < 1e-6, "{out:?}");
                assert_eq!(out.stiffness_nm_per_rad, 0.0);
            }
            let out = servo.tick(0.0, state(0.0, bad), 0.0);
            assert_eq!((out.status, out.torque_nm), (ServoStatus::BadState, 0.0));
            assert_eq!(servo.safe_torque(state(0.0, bad)), 0.0);
            assert_eq!(
                servo.set_pose_target(bad, 0.05, 1.0),
                Err(PlanError::NonFinite)
            );
            assert_eq!(
                servo.set_pose_target(0.5, 0.05, bad),
                Err(PlanError::NonFinite)
            );
        }
        // The safe torque of a velocity beyond the format brakes with the format's bound.
        let safe = servo.safe_torque(state(0.0, 1e9));
        assert_eq!(safe, -1000.0);
        let safe = servo.safe_torque(state(0.0, 1.0));
        assert!((safe + hold).abs() < 1e-6);
    }

    #[test]
    fn subnormal_inputs_round_to_zero_unflagged() {
        let tiny = f64::from_bits(1);
        let mut a = ArrivalServoFixed::new(arm(), 1).unwrap();
        let mut b = a;
        a.set_pose_target(0.5, 0.05, 1.0).unwrap();
        b.set_pose_target(0.5, 0.05, 1.0).unwrap();
        let out_a = a.tick(tiny, state(-tiny, 1e-310), -1e-310);
        let out_b = b.tick(0.0, state(0.0, 0.0), 0.0);
        assert_eq!(out_a, out_b);
        assert_eq!(out_a.status, ServoStatus::Tracking);
    }

    #[test]
    fn gains_are_re_solved_every_decimation_ticks_and_on_a_new_plan() {
        let mut servo = ArrivalServoFixed::new(arm(), 4).unwrap();
        servo.set_pose_target(0.5, 0.05, 1.0).unwrap();
        let mut gains = [0.0; 9];
        for (i, g) in gains.iter_mut().enumerate() {
            // A state that changes every tick (a push each tick).
            let t = i as f64 * 0.005;
            let out = servo.tick(t, state(-0.8 + 0.01 * i as f64, 0.5 * i as f64), 0.0);
            *g = out.damping_nms_per_rad;
        }
        assert!(gains[0] == gains[1] && gains[1] == gains[2] && gains[2] == gains[3]);
        assert!(gains[4] != gains[3]);
        assert!(gains[4] == gains[5] && gains[5] == gains[6] && gains[6] == gains[7]);
        assert!(gains[8] != gains[7]);
        // A new plan re-solves at once.
        servo.set_pose_target(-0.6, 0.05, 1.7).unwrap();
        let out = servo.tick(0.045, state(0.0, 0.0), 0.0);
        assert!(out.damping_nms_per_rad != gains[8]);
        // Past the deadline: the hold gains at once.
        let out = servo.tick(1.7, state(-0.6, 0.0), 0.0);
        assert_eq!(out.status, ServoStatus::Holding);
        assert_eq!(out.damping_nms_per_rad, servo.hold.damping.to_num::<f64>());
    }

    #[test]
    fn idle_is_feedforward_and_hold_damping() {
        let mut servo = ArrivalServoFixed::new(arm(), 4).unwrap();
        let out = servo.tick(0.0, state(0.3, 1.0), 5.0);
        assert_eq!(out.status, ServoStatus::Idle);
        assert_eq!(out.stiffness_nm_per_rad, 0.0);
        let hold = servo.hold.damping.to_num::<f64>();
        assert!((out.torque_nm - (5.0 - hold)).abs() < 1e-6);
    }

    /// On a grid of arm states (angles over ±π, velocities up to ±20 rad/s, the scene's poses,
    /// times to go from 5 ms to 0.7 s, gravity-sized feed-forwards), one tick of each servo
    /// from the same plan: the fixed-point request is within [`law_quantisation_bound_nm`] of
    /// the exact law with the gains it used; where both servos report the same status (all but a
    /// handful of ill-conditioned states), the gains agree to one step of their format plus 5e-5
    /// relative (the f32 rounding of the solve's inputs and outputs) and the torques to that
    /// bound plus |e|·|Δk| + |ω|·|Δγ|.
    #[test]
    fn agrees_with_the_f64_servo_on_the_arm_grid() {
        let cfg = arm();
        let (mut worst_law, mut worst_gain, mut worst_torque) = (0.0f64, 0.0f64, 0.0f64);
        let (mut compared, mut differing_status) = (0usize, 0usize);
        let pi = core::f64::consts::PI;
        for i in 0..=24 {
            let x = -pi + 2.0 * pi * f64::from(i) / 24.0;
            for j in 0..=8 {
                let v = -20.0 + 5.0 * f64::from(j);
                for pose in [-0.6, -0.2, 0.5, 0.9] {
                    for time_to_go in [0.005, 0.02, 0.1, 0.35, 0.7] {
                        for ff in [-13.0, 0.0, 9.5] {
                            let mut fixed = ArrivalServoFixed::new(cfg, 1).unwrap();
                            fixed.set_pose_target(pose, 0.05, time_to_go).unwrap();
                            let mut reference = ArrivalServo::new(cfg).unwrap();
                            reference.set_pose_target(pose, 0.05, time_to_go).unwrap();
                            let out = fixed.tick(0.0, state(x, v), ff);
                            let want = reference.tick(0.0, state(x, v), ff);
                            let (k, g) = (out.stiffness_nm_per_rad, out.damping_nms_per_rad);
                            let setpoint = if pose >= x { pose + 0.05 } else { pose - 0.05 };
                            let e = setpoint - x;
                            let law = k * e - g * v + ff;
                            let bound = law_quantisation_bound_nm(k, g);
                            let off = (out.requested_torque_nm - law).abs();
                            assert!(off <= bound, "({x}, {v}, {pose}): {off} > {bound}");
                            worst_law = worst_law.max(off / bound);
                            let same = match (out.status, want.status) {
                                (ServoStatus::Infeasible(a), ServoStatus::Infeasible(b)) => {
                                    core::mem::discriminant(&a) == core::mem::discriminant(&b)
                                }
                                (a, b) => a == b,
                            };
                            if !same {
                                differing_status += 1;
                                continue;
                            }
                            compared += 1;
                            let dk = (k - want.stiffness_nm_per_rad).abs();
                            let dg = (g - want.damping_nms_per_rad).abs();
                            // Beyond one step of each gain format, relative to the gain.
                            let k_step = StiffnessFx::DELTA.to_num::<f64>();
                            let g_step = DampingFx::DELTA.to_num::<f64>();
                            let rel = ((dg - g_step).max(0.0) / want.damping_nms_per_rad)
                                .max((dk - k_step).max(0.0) / want.stiffness_nm_per_rad);
                            worst_gain = worst_gain.max(rel);
                            let dt = (out.requested_torque_nm - want.requested_torque_nm).abs();
                            let tbound = bound
                                + e.abs() * dk
                                + v.abs() * dg
                                + 1e-9 * want.requested_torque_nm.abs();
                            assert!(
                                dt <= tbound,
                                "({x}, {v}, {pose}, {time_to_go}): {dt} > {tbound}"
                            );
                            worst_torque = worst_torque.max(dt);
                        }
                    }
                }
            }
        }
        std::println!(
            "law: worst {worst_law} of the bound; gains: worst relative {worst_gain:e}; torque: worst {worst_torque:e} N·m; {compared} compared, {differing_status} with another status"
        );
        // Measured with the f64 solve rounded to f32: 2.3e-5 (one tick to go), 3 of 13 500
        // states with another status (module docs, "Quantisation"). With the `micromath`
        // feature the gains come from the f32 solver, whose Lambert W (micromath's ln) is off
        // by up to ~3.8e3 f32 ulp in its log region (`gains_f32` docs): measured 1.97e-2 on this
        // grid, at the problems with one tick to go, where the gain is most sensitive.
        let gain_bound = if cfg!(feature = "micromath") {
            2.5e-2
        } else {
            5e-5
        };
        assert!(worst_gain <= gain_bound, "{worst_gain}");
        assert!(differing_status <= 10, "{differing_status} of {compared}");
    }

    /// Any f64: arbitrary bit patterns (NaN payloads, infinities, subnormals), the edges of the
    /// formats, and the arm's ranges.
    fn any_value() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<u64>().prop_map(f64::from_bits),
            prop::sample::select(vec![
                0.0,
                -0.0,
                f64::MIN_POSITIVE,
                5e-324,
                f64::MAX,
                f64::MIN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
                8.0,
                -8.0,
                7.999_999_999,
                128.0,
                -128.0,
                2_147_483_648.0,
                -2_147_483_648.0,
            ]),
            -10.0f64..10.0,
            -200.0f64..200.0,
        ]
    }

    /// Valid and extreme configurations (most of them refused, which must not panic either).
    fn any_config() -> impl Strategy<Value = ServoConfig> {
        let positive = prop_oneof![(-12.0f64..12.0).prop_map(|e| 10f64.powf(e)), any_value(),];
        (
            positive.clone(),
            prop_oneof![
                Just(0.005),
                (-6.0f64..0.0).prop_map(|e| 10f64.powf(e)),
                any_value()
            ],
            positive.clone(),
            prop_oneof![Just(0.8), 0.0f64..=1.0, any_value()],
            positive,
        )
            .prop_map(|(m, h, limit, margin, hold)| ServoConfig {
                inertia_kgm2: m,
                period_s: h,
                torque_limit_nm: limit,
                integrator: Integrator::SemiImplicitEuler,
                stability_margin: margin,
                hold_natural_freq_rad_s: hold,
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        /// Any configuration, plan and sequence of inputs: construction refuses or succeeds, no
        /// tick panics, every torque and request is finite, every torque within the configured
        /// limit, a non-finite input gives BadState and a saturated one says so.
        #[test]
        fn never_panics_and_stays_within_the_limit(
            config in prop_oneof![Just(arm()).boxed(), any_config().boxed()],
            decimation in prop_oneof![1u32..6, Just(u32::MAX), Just(0)],
            pose in any_value(), tolerance in any_value(), deadline in any_value(),
            pose_target in any::<bool>(),
            ticks in prop::collection::vec(
                (any_value(), any_value(), any_value(), any_value()), 1..8),
        ) {
            let Ok(mut servo) = ArrivalServoFixed::new(config, decimation) else {
                return Ok(());
            };
            let limit = config.torque_limit_nm;
            let planned = if pose_target {
                servo.set_pose_target(pose, tolerance, deadline).is_ok()
            } else {
                let plan = ArrivalPlan { setpoint_rad: pose + tolerance, arrival_rad: pose, deadline_s: deadline };
                servo.set_plan(plan, 0.0).is_ok()
            };
            let setpoint = if pose_target { pose + tolerance.abs() } else { pose + tolerance };
            prop_assert_eq!(planned, pose.is_finite() && setpoint.is_finite() && deadline.is_finite());
            for (now, x, v, ff) in ticks {
                let out = servo.tick(now, state(x, v), ff);
                prop_assert!(out.torque_nm.is_finite() && out.torque_nm.abs() <= limit, "{:?}", out);
                prop_assert!(out.requested_torque_nm.is_finite(), "{:?}", out);
                prop_assert!(out.stiffness_nm_per_rad.is_finite() && out.damping_nms_per_rad.is_finite());
                prop_assert_eq!(out.torque_limited, out.torque_nm != out.requested_torque_nm || out.requested_torque_nm.abs() > limit);
                let finite = now.is_finite() && x.is_finite() && v.is_finite() && ff.is_finite();
                if !finite {
                    prop_assert_eq!(out.status, ServoStatus::BadState);
                }
                if finite && (x.abs() > 8.0 || v.abs() > 128.0 || ff.abs() > 2_147_483_648.0) {
                    prop_assert!(matches!(out.status, ServoStatus::Saturated(_) | ServoStatus::BadState), "{:?}", out);
                }
                let safe = servo.safe_torque(state(x, v));
                prop_assert!(safe.is_finite() && safe.abs() <= limit);
            }
        }
    }

    /// Integrate a servo on a pure inertia, exactly between ticks (torque held).
    fn run<S: JointServo>(servo: &mut S, m: f64, x0: f64, v0: f64, until_s: f64) -> f64 {
        let (mut x, mut v) = (x0, v0);
        let h = 0.005;
        let steps = (until_s / h).round() as usize;
        for i in 0..steps {
            let out = servo.tick(i as f64 * h, state(x, v), 0.0);
            (x, v) = crate::closed_form::held_torque_step(x, v, out.torque_nm / m, h);
        }
        x
    }

    /// Decimated gains still arrive: pose targets from rest and from motion on the arm's
    /// inertia, within 2e-3 rad like the f64 servo, and within 1e-3 rad of where it arrives.
    #[test]
    fn arrives_on_a_pure_inertia_like_the_f64_servo() {
        let cfg = arm();
        for decimation in [1, 4, 8] {
            for (x0, v0, pose, t) in [
                (-0.8, 0.0, 0.5, 1.0),
                (0.5, 2.0, -0.6, 0.7),
                (1.2, -1.0, 0.9, 1.0),
            ] {
                let mut fixed = ArrivalServoFixed::new(cfg, decimation).unwrap();
                fixed.set_pose_target(pose, 0.05, t).unwrap();
                let mut f64_servo = ArrivalServo::new(cfg).unwrap();
                f64_servo.set_pose_target(pose, 0.05, t).unwrap();
                let xf = run(&mut fixed, cfg.inertia_kgm2, x0, v0, t);
                let xd = run(&mut f64_servo, cfg.inertia_kgm2, x0, v0, t);
                assert!(
                    (xf - pose).abs() < 2e-3,
                    "D {decimation} ({x0}, {v0}): at {xf}"
                );
                assert!((xf - xd).abs() < 1e-3, "D {decimation}: {xf} vs f64 {xd}");
            }
        }
    }
}
