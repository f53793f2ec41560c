//! One-DoF servos for a fixed-rate control tick: the analytic arrival servo, which re-solves its
//! critically damped gains every tick from the measured state and the time left, and the two
//! baselines of the paper: a fixed-gain PD and the static-timing method of "On the Beat!"
//! (τ = m/λ²·e + 2m/λ·ė with λ = t̂/n).
//!
//! A tick must never allocate, block or panic, whatever the state: non-finite measurements, and
//! finite ones so large that the PD torque overflows f64, give [`ServoStatus::BadState`] and a
//! zero or damping-only torque, never NaN. Every torque is limited to the configured bound and
//! every limit hit is reported in the output, never silently.
//!
//! ```
//! use control_core::servo::{ArrivalPlan, ArrivalServo, JointServo, JointState, ServoConfig};
//! let mut servo = ArrivalServo::new(ServoConfig { inertia_kgm2: 0.67, ..ServoConfig::default() })?;
//! servo.set_plan(ArrivalPlan { setpoint_rad: 1.0, arrival_rad: 0.95, deadline_s: 2.0 }, 0.0)?;
//! let out = servo.tick(0.0, JointState { position_rad: 0.0, velocity_rad_s: 0.0 }, 0.0);
//! assert!(out.torque_nm > 0.0);
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```

use core::fmt;

use crate::gains::{
    ArrivalProblem, Branch, CriticalGains, GainError, GainLimit, Integrator, closest_arrival_gains,
    solve_arrival_gains,
};

/// Measured state of one joint.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct JointState {
    /// Joint angle, rad.
    pub position_rad: f64,
    /// Joint angular velocity, rad/s.
    pub velocity_rad_s: f64,
}

impl JointState {
    fn is_finite(&self) -> bool {
        self.position_rad.is_finite() && self.velocity_rad_s.is_finite()
    }
}

/// Where the joint must be, and when.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArrivalPlan {
    /// The PD setpoint the joint is pulled towards, rad.
    pub setpoint_rad: f64,
    /// The position the joint must have at the deadline, rad.
    pub arrival_rad: f64,
    /// The instant of arrival, s, on the same clock as the `now_s` given to the ticks.
    pub deadline_s: f64,
}

impl ArrivalPlan {
    /// Pass through `target_rad` at `deadline_s` on the way to a setpoint `tolerance_rad` beyond
    /// it, as seen from `from_rad`: the joint arrives from one side, within the tolerance of the
    /// setpoint (docs/ARCHITECTURE.md, "The gain solver": 0 < θ_d/θ₀ < 1). A critically damped motion never reaches its own
    /// setpoint in finite time, so a plan that must be *at* a pose aims slightly beyond it.
    pub fn approach(target_rad: f64, tolerance_rad: f64, from_rad: f64, deadline_s: f64) -> Self {
        let direction = if target_rad >= from_rad { 1.0 } else { -1.0 };
        Self {
            setpoint_rad: target_rad + direction * tolerance_rad.abs(),
            arrival_rad: target_rad,
            deadline_s,
        }
    }
}

/// Why a plan was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlanError {
    /// The setpoint, arrival or deadline is NaN or infinite.
    NonFinite,
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NonFinite => write!(f, "plan has a non-finite setpoint, arrival or deadline"),
        }
    }
}

impl core::error::Error for PlanError {}

/// Why a servo configuration was refused.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum ConfigError {
    /// Inertia, period, torque limit, hold frequency or margin is not finite and positive
    /// (the margin must lie in (0, 1]).
    Invalid(&'static str),
    /// The stability limit cannot be formed.
    Gain(GainError),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Invalid(field) => write!(f, "servo config: {field} must be finite and positive"),
            Self::Gain(e) => write!(f, "servo config: {e}"),
        }
    }
}

impl core::error::Error for ConfigError {}

/// Configuration shared by every servo of this module.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServoConfig {
    /// Moment of inertia about the joint axis, kg·m².
    pub inertia_kgm2: f64,
    /// Control period, s.
    pub period_s: f64,
    /// Largest torque magnitude the joint may apply, N·m.
    pub torque_limit_nm: f64,
    /// How the plant integrates between ticks: sets the stable gain limit.
    pub integrator: Integrator,
    /// Fraction of the stable gain limit the servo may use, in (0, 1].
    pub stability_margin: f64,
    /// Natural frequency of the critically damped hold (after the deadline, with no plan, and
    /// the damping of the safe state), rad/s.
    pub hold_natural_freq_rad_s: f64,
}

impl Default for ServoConfig {
    /// 1 kg·m², 200 Hz, 100 N·m, Rapier's integrator, half the stable limit, 10 rad/s hold.
    fn default() -> Self {
        Self {
            inertia_kgm2: 1.0,
            period_s: 0.005,
            torque_limit_nm: 100.0,
            integrator: Integrator::SemiImplicitEuler,
            stability_margin: 0.5,
            hold_natural_freq_rad_s: 10.0,
        }
    }
}

impl ServoOutput {
    /// What held this output back ([`crate::controller::Limits`]).
    pub fn limits(&self) -> crate::controller::Limits {
        let mut l = crate::controller::Limits {
            torque_limited: u32::from(self.torque_limited),
            ..Default::default()
        };
        match self.status {
            ServoStatus::GainClamped => l.gain_clamped = 1,
            ServoStatus::Infeasible(_) => l.infeasible = 1,
            ServoStatus::Saturated(_) => l.bounded = 1,
            ServoStatus::BadState => l.fallback = true,
            ServoStatus::Idle | ServoStatus::Tracking | ServoStatus::Holding => {}
        }
        l
    }
}

/// What the servo did this tick.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum ServoStatus {
    /// No plan: gravity compensation and the hold damping only.
    Idle,
    /// On its way: the gains arrive on time.
    Tracking,
    /// The arriving gains exceed what the period integrates stably; clamped to the limit.
    GainClamped,
    /// No stable critically damped gain arrives on time (the error says why); the servo uses
    /// the gain of the stable range whose predicted arrival comes closest
    /// ([`closest_arrival_gains`]).
    Infeasible(GainError),
    /// The deadline has passed: critically damped hold about the setpoint.
    Holding,
    /// The measured state, the time or the feed-forward is NaN or infinite, or the state is so
    /// far out that the torque k(s − θ) − γω + feed-forward (or the gain problem behind it) is not
    /// a finite f64: the output is the safe torque (zero if the velocity itself is unusable).
    BadState,
    /// Fixed-point servos only ([`crate::servo_fixed`]): a finite input or intermediate did not
    /// fit its number format and was saturated (which ones: the flags). The torque is the law's
    /// on the saturated values, still within the torque limit; the gain solve's own status is
    /// [`crate::servo_fixed::ArrivalServoFixed::gain_status`].
    Saturated(crate::servo_fixed::FixedSaturation),
}

/// The result of one tick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServoOutput {
    /// Torque to apply, N·m, within the torque limit.
    pub torque_nm: f64,
    /// What the servo did.
    pub status: ServoStatus,
    /// Stiffness used, N·m/rad (0 in the safe state).
    pub stiffness_nm_per_rad: f64,
    /// Damping used, N·m·s/rad.
    pub damping_nms_per_rad: f64,
    /// Whether the torque limit cut the torque this tick.
    pub torque_limited: bool,
    /// The torque before the limit, N·m. Always finite: a request that is not a finite f64 turns
    /// the tick into [`ServoStatus::BadState`], whose request is the safe torque's damping term
    /// −γω (0 for an unusable velocity; if −γω itself overflows, the limit it saturates to, with
    /// `torque_limited` set).
    pub requested_torque_nm: f64,
}

/// The interface the runtime drives: one plan at a time, one tick per control period.
pub trait JointServo {
    /// Replace the plan; `now_s` is when it is issued (the static-timing method needs it).
    fn set_plan(&mut self, plan: ArrivalPlan, now_s: f64) -> Result<(), PlanError>;
    /// One control tick at time `now_s` from the measured `state`, adding `feedforward_nm`
    /// (gravity compensation and other known torques from the model).
    fn tick(&mut self, now_s: f64, state: JointState, feedforward_nm: f64) -> ServoOutput;
    /// The safe state's torque: damping only, torque-limited; zero for an unusable velocity.
    fn safe_torque(&self, state: JointState) -> f64;
}

/// What every servo here shares: the configuration, the stable limit and the hold gains.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Common {
    pub(crate) config: ServoConfig,
    pub(crate) limit: GainLimit,
    pub(crate) hold: CriticalGains,
}

impl Common {
    pub(crate) fn new(config: ServoConfig) -> Result<Self, ConfigError> {
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if !positive(config.inertia_kgm2) {
            return Err(ConfigError::Invalid("inertia_kgm2"));
        }
        if !positive(config.period_s) {
            return Err(ConfigError::Invalid("period_s"));
        }
        if !positive(config.torque_limit_nm) {
            return Err(ConfigError::Invalid("torque_limit_nm"));
        }
        if !positive(config.hold_natural_freq_rad_s) {
            return Err(ConfigError::Invalid("hold_natural_freq_rad_s"));
        }
        if !(positive(config.stability_margin) && config.stability_margin <= 1.0) {
            return Err(ConfigError::Invalid("stability_margin"));
        }
        let limit = GainLimit::new(
            config.inertia_kgm2,
            config.period_s,
            config.integrator,
            config.stability_margin,
        )
        .map_err(ConfigError::Gain)?;
        let hold = CriticalGains::from_damping(
            config.inertia_kgm2,
            2.0 * config.inertia_kgm2 * config.hold_natural_freq_rad_s,
            Branch::Principal,
        )
        .ok_or(ConfigError::Invalid("hold_natural_freq_rad_s"))?
        .clamp_to(&limit)
        .gains;
        Ok(Self {
            config,
            limit,
            hold,
        })
    }

    /// τ = k(s − θ) − γω + feed-forward, limited; the safe state if that is not a finite f64.
    fn pd(
        &self,
        gains: &CriticalGains,
        setpoint_rad: f64,
        state: JointState,
        feedforward_nm: f64,
        status: ServoStatus,
    ) -> ServoOutput {
        let requested = gains.stiffness_nm_per_rad * (setpoint_rad - state.position_rad)
            - gains.damping_nms_per_rad * state.velocity_rad_s
            + feedforward_nm;
        if !requested.is_finite() {
            return self.bad_state(state);
        }
        let (torque, limited) = self.limit_torque(requested);
        ServoOutput {
            torque_nm: torque,
            status,
            stiffness_nm_per_rad: gains.stiffness_nm_per_rad,
            damping_nms_per_rad: gains.damping_nms_per_rad,
            torque_limited: limited,
            requested_torque_nm: requested,
        }
    }

    fn limit_torque(&self, requested: f64) -> (f64, bool) {
        let l = self.config.torque_limit_nm;
        if requested.is_nan() {
            (0.0, true)
        } else if requested > l {
            (l, true)
        } else if requested < -l {
            (-l, true)
        } else {
            (requested, false)
        }
    }

    fn safe_torque(&self, state: JointState) -> f64 {
        self.safe_request(state).0
    }

    /// The safe state's (torque, finite request, limited): damping only, −γω, limited; zero for
    /// an unusable velocity; a request that overflows is reported as the limit it saturates to.
    fn safe_request(&self, state: JointState) -> (f64, f64, bool) {
        if !state.velocity_rad_s.is_finite() {
            return (0.0, 0.0, false);
        }
        let requested = -self.hold.damping_nms_per_rad * state.velocity_rad_s;
        let (torque, limited) = self.limit_torque(requested);
        if requested.is_finite() {
            (torque, requested, limited)
        } else {
            (torque, torque, true)
        }
    }

    /// The output for unusable input: the safe torque, flagged.
    fn bad_state(&self, state: JointState) -> ServoOutput {
        let (torque, requested, limited) = self.safe_request(state);
        ServoOutput {
            torque_nm: torque,
            status: ServoStatus::BadState,
            stiffness_nm_per_rad: 0.0,
            damping_nms_per_rad: self.hold.damping_nms_per_rad,
            torque_limited: limited,
            requested_torque_nm: requested,
        }
    }

    /// Gravity compensation and damping only.
    fn idle(&self, state: JointState, feedforward_nm: f64) -> ServoOutput {
        let damping_only = CriticalGains {
            stiffness_nm_per_rad: 0.0,
            ..self.hold
        };
        self.pd(&damping_only, 0.0, state, feedforward_nm, ServoStatus::Idle)
    }

    /// The arrival servo's gains for `problem` and the status they carry: `solve`'s gains
    /// clamped to the stable limit (Tracking or GainClamped), the hold gains where the problem
    /// is indeterminate, the closest stable arrival where it has no stable solution
    /// (Infeasible), `None` where not even that exists (the caller's safe state). `solve` is
    /// [`solve_arrival_gains`] here, and the reduced-precision solve in
    /// [`crate::servo_fixed`].
    pub(crate) fn arrival_gains(
        &self,
        problem: &ArrivalProblem,
        solve: impl FnOnce(&ArrivalProblem) -> Result<CriticalGains, GainError>,
    ) -> Option<(CriticalGains, ServoStatus)> {
        match solve(problem) {
            Ok(gains) => {
                let (gains, clamped) = self.clamp(gains);
                let status = if clamped {
                    ServoStatus::GainClamped
                } else {
                    ServoStatus::Tracking
                };
                Some((gains, status))
            }
            Err(GainError::Indeterminate) => Some((self.hold, ServoStatus::Tracking)),
            Err(e) => closest_arrival_gains(problem, &self.limit)
                .map(|gains| (gains, ServoStatus::Infeasible(e))),
        }
    }

    fn clamp(&self, gains: CriticalGains) -> (CriticalGains, bool) {
        let c = gains.clamp_to(&self.limit);
        (c.gains, c.acted)
    }
}

pub(crate) fn inputs_finite(now_s: f64, state: &JointState, feedforward_nm: f64) -> bool {
    now_s.is_finite() && state.is_finite() && feedforward_nm.is_finite()
}

pub(crate) fn check_plan(plan: &ArrivalPlan) -> Result<(), PlanError> {
    if plan.setpoint_rad.is_finite() && plan.arrival_rad.is_finite() && plan.deadline_s.is_finite()
    {
        Ok(())
    } else {
        Err(PlanError::NonFinite)
    }
}

/// The analytic arrival servo: every tick it re-solves the critically damped gains that bring
/// the joint from its measured state to the arrival position at the deadline. Undisturbed, the
/// answer does not change; disturbed, it corrects.
#[derive(Debug, Clone, Copy)]
pub struct ArrivalServo {
    common: Common,
    plan: Option<ArrivalPlan>,
    /// With a pose target: the tolerance the setpoint is re-aimed beyond the pose every tick.
    reaim_tolerance_rad: Option<f64>,
}

impl ArrivalServo {
    /// A servo with no plan (it idles: gravity compensation and damping).
    pub fn new(config: ServoConfig) -> Result<Self, ConfigError> {
        Ok(Self {
            common: Common::new(config)?,
            plan: None,
            reaim_tolerance_rad: None,
        })
    }

    /// Pass through `pose_rad` at `deadline_s`, with the setpoint re-aimed every tick
    /// `tolerance_rad` beyond the pose as seen from where the joint is then
    /// ([`ArrivalPlan::approach`] from the measured position). Unlike a fixed plan, a joint that
    /// is pushed past the pose is pulled back to arrive on time from the other side, instead of
    /// settling at the setpoint.
    pub fn set_pose_target(
        &mut self,
        pose_rad: f64,
        tolerance_rad: f64,
        deadline_s: f64,
    ) -> Result<(), PlanError> {
        let plan = ArrivalPlan::approach(pose_rad, tolerance_rad, pose_rad, deadline_s);
        check_plan(&plan)?;
        self.plan = Some(plan);
        self.reaim_tolerance_rad = Some(tolerance_rad.abs());
        Ok(())
    }

    /// The stable gain limit in use.
    pub fn gain_limit(&self) -> GainLimit {
        self.common.limit
    }

    /// The current plan.
    pub fn plan(&self) -> Option<ArrivalPlan> {
        self.plan
    }
}

impl JointServo for ArrivalServo {
    fn set_plan(&mut self, plan: ArrivalPlan, _now_s: f64) -> Result<(), PlanError> {
        check_plan(&plan)?;
        self.plan = Some(plan);
        self.reaim_tolerance_rad = None;
        Ok(())
    }

    fn tick(&mut self, now_s: f64, state: JointState, feedforward_nm: f64) -> ServoOutput {
        let c = &self.common;
        if !inputs_finite(now_s, &state, feedforward_nm) {
            return c.bad_state(state);
        }
        let Some(mut plan) = self.plan else {
            return c.idle(state, feedforward_nm);
        };
        if let Some(tolerance) = self.reaim_tolerance_rad {
            plan = ArrivalPlan::approach(
                plan.arrival_rad,
                tolerance,
                state.position_rad,
                plan.deadline_s,
            );
        }
        let time_to_go_s = plan.deadline_s - now_s;
        if time_to_go_s <= 0.0 {
            return c.pd(
                &c.hold,
                plan.setpoint_rad,
                state,
                feedforward_nm,
                ServoStatus::Holding,
            );
        }
        let problem = ArrivalProblem {
            inertia_kgm2: c.config.inertia_kgm2,
            position_rad: state.position_rad,
            velocity_rad_s: state.velocity_rad_s,
            setpoint_rad: plan.setpoint_rad,
            arrival_rad: plan.arrival_rad,
            time_to_go_s,
        };
        match c.arrival_gains(&problem, solve_arrival_gains) {
            Some((gains, status)) => c.pd(&gains, plan.setpoint_rad, state, feedforward_nm, status),
            None => c.bad_state(state),
        }
    }

    fn safe_torque(&self, state: JointState) -> f64 {
        self.common.safe_torque(state)
    }
}

/// Baseline: PD with gains set once (e.g. tuned to arrive on time from rest for the first
/// target) and never changed; it follows each plan's setpoint and ignores the deadlines.
#[derive(Debug, Clone, Copy)]
pub struct FixedGainServo {
    common: Common,
    gains: CriticalGains,
    clamped: bool,
    plan: Option<ArrivalPlan>,
}

impl FixedGainServo {
    /// A fixed-gain servo; the gains are clamped to the stable limit once, here, and every tick
    /// that uses clamped gains reports [`ServoStatus::GainClamped`].
    pub fn new(config: ServoConfig, gains: CriticalGains) -> Result<Self, ConfigError> {
        let common = Common::new(config)?;
        let (gains, clamped) = common.clamp(gains);
        Ok(Self {
            common,
            gains,
            clamped,
            plan: None,
        })
    }

    /// The gains in use.
    pub fn gains(&self) -> CriticalGains {
        self.gains
    }
}

impl JointServo for FixedGainServo {
    fn set_plan(&mut self, plan: ArrivalPlan, _now_s: f64) -> Result<(), PlanError> {
        check_plan(&plan)?;
        self.plan = Some(plan);
        Ok(())
    }

    fn tick(&mut self, now_s: f64, state: JointState, feedforward_nm: f64) -> ServoOutput {
        let c = &self.common;
        if !inputs_finite(now_s, &state, feedforward_nm) {
            return c.bad_state(state);
        }
        let Some(plan) = self.plan else {
            return c.idle(state, feedforward_nm);
        };
        let status = if self.clamped {
            ServoStatus::GainClamped
        } else {
            ServoStatus::Tracking
        };
        c.pd(
            &self.gains,
            plan.setpoint_rad,
            state,
            feedforward_nm,
            status,
        )
    }

    fn safe_torque(&self, state: JointState) -> f64 {
        self.common.safe_torque(state)
    }
}

/// Baseline: the static-timing method of "On the Beat!" (Allen, Chu, Shapiro, Faloutsos 2007):
/// when a plan is issued at t₀ with t̂ = deadline − t₀, λ = t̂/n and
/// τ = m/λ²·(θ̂ − θ) + 2m/λ·(ω̂ − ω) + feed-forward, with θ̂ the plan's arrival pose and ω̂ = 0.
/// The gains are critically damped and fixed for the whole plan: from rest the joint covers all
/// but (1 + n)e^(−n) of the distance by the deadline, from any other state it does not.
#[derive(Debug, Clone, Copy)]
pub struct StaticTimingServo {
    common: Common,
    time_constants: f64,
    plan: Option<(ArrivalPlan, CriticalGains, bool)>,
}

impl StaticTimingServo {
    /// A static-timing servo with `time_constants` = n > 0 time constants per plan.
    pub fn new(config: ServoConfig, time_constants: f64) -> Result<Self, ConfigError> {
        if !(time_constants.is_finite() && time_constants > 0.0) {
            return Err(ConfigError::Invalid("time_constants"));
        }
        Ok(Self {
            common: Common::new(config)?,
            time_constants,
            plan: None,
        })
    }

    /// The critically damped gains of the method for a plan lasting `duration_s`:
    /// k = m/λ², γ = 2m/λ, λ = t̂/n.
    pub fn gains_for(&self, duration_s: f64) -> Option<CriticalGains> {
        let lambda = duration_s / self.time_constants;
        CriticalGains::from_damping(
            self.common.config.inertia_kgm2,
            2.0 * self.common.config.inertia_kgm2 / lambda,
            Branch::Principal,
        )
    }
}

impl JointServo for StaticTimingServo {
    /// Fixes λ from the time between `now_s` and the deadline; a plan whose deadline is not
    /// after `now_s` holds with the hold gains.
    fn set_plan(&mut self, plan: ArrivalPlan, now_s: f64) -> Result<(), PlanError> {
        check_plan(&plan)?;
        if !now_s.is_finite() {
            return Err(PlanError::NonFinite);
        }
        let (gains, clamped) = match self.gains_for(plan.deadline_s - now_s) {
            Some(g) => self.common.clamp(g),
            None => (self.common.hold, false),
        };
        self.plan = Some((plan, gains, clamped));
        Ok(())
    }

    fn tick(&mut self, now_s: f64, state: JointState, feedforward_nm: f64) -> ServoOutput {
        let c = &self.common;
        if !inputs_finite(now_s, &state, feedforward_nm) {
            return c.bad_state(state);
        }
        let Some((plan, gains, clamped)) = self.plan else {
            return c.idle(state, feedforward_nm);
        };
        let status = if clamped {
            ServoStatus::GainClamped
        } else {
            ServoStatus::Tracking
        };
        c.pd(&gains, plan.arrival_rad, state, feedforward_nm, status)
    }

    fn safe_torque(&self, state: JointState) -> f64 {
        self.common.safe_torque(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn config() -> ServoConfig {
        ServoConfig {
            inertia_kgm2: 0.67,
            period_s: 0.005,
            torque_limit_nm: 1e4,
            ..ServoConfig::default()
        }
    }

    /// Integrate the servo on a pure 1-DoF inertia, exactly between ticks (torque held).
    fn run<S: JointServo>(
        servo: &mut S,
        m: f64,
        mut x: f64,
        mut v: f64,
        until_s: f64,
        h: f64,
    ) -> (f64, f64) {
        let steps = (until_s / h).round() as usize;
        for i in 0..steps {
            let t = i as f64 * h;
            let out = servo.tick(
                t,
                JointState {
                    position_rad: x,
                    velocity_rad_s: v,
                },
                0.0,
            );
            (x, v) = crate::closed_form::held_torque_step(x, v, out.torque_nm / m, h);
        }
        (x, v)
    }

    #[test]
    fn arrival_servo_arrives_from_motion_on_a_pure_inertia() {
        let cfg = config();
        for v0 in [-0.5, -0.2, 0.0, 0.3, 1.0] {
            let mut servo = ArrivalServo::new(cfg).unwrap();
            let plan = ArrivalPlan::approach(1.0, 0.05, 0.0, 2.0);
            servo.set_plan(plan, 0.0).unwrap();
            let (x, _) = run(&mut servo, cfg.inertia_kgm2, 0.0, v0, 2.0, cfg.period_s);
            assert!((x - 1.0).abs() < 2e-3, "v0 {v0}: arrived at {x}");
        }
    }

    /// Re-solving from states on the planned (closed-form) path: every re-solve still arrives at
    /// the same place at the same instant; on the soft branch the gain does not change. (From
    /// rest only the stiff W₋₁ gain arrives; once the joint moves towards the setpoint the soft
    /// W₀ gain arrives too, and the servo switches to it: softest that still arrives on time.)
    #[test]
    fn undisturbed_replanning_still_arrives_and_keeps_the_soft_gain() {
        let cfg = config();
        let m = cfg.inertia_kgm2;
        for (x0, v0, arrival) in [(1.0, 0.0, 0.05), (1.0, -0.5, 0.55)] {
            let mut servo = ArrivalServo::new(cfg).unwrap();
            let plan = ArrivalPlan {
                setpoint_rad: 0.0,
                arrival_rad: arrival,
                deadline_s: 1.0,
            };
            servo.set_plan(plan, 0.0).unwrap();
            let first = servo.tick(
                0.0,
                JointState {
                    position_rad: x0,
                    velocity_rad_s: v0,
                },
                0.0,
            );
            let g = first.damping_nms_per_rad;
            for t in [0.1, 0.4, 0.7, 0.95] {
                let x = crate::closed_form::critically_damped_position(m, g, x0, v0, t);
                let v = crate::closed_form::critically_damped_velocity(m, g, x0, v0, t);
                let later = servo.tick(
                    t,
                    JointState {
                        position_rad: x,
                        velocity_rad_s: v,
                    },
                    0.0,
                );
                let end = crate::closed_form::critically_damped_position(
                    m,
                    later.damping_nms_per_rad,
                    x,
                    v,
                    1.0 - t,
                );
                assert!((end - arrival).abs() < 1e-9, "t {t}: arrives at {end}");
                let solved = crate::gains::solve_arrival_gains(&ArrivalProblem {
                    inertia_kgm2: m,
                    position_rad: x0,
                    velocity_rad_s: v0,
                    setpoint_rad: 0.0,
                    arrival_rad: arrival,
                    time_to_go_s: 1.0,
                })
                .unwrap();
                if solved.branch == Branch::Principal {
                    assert!((later.damping_nms_per_rad - g).abs() < 1e-9 * g, "t {t}");
                }
            }
        }
    }

    /// A joint pushed past the pose (and moving further away) is brought back to the pose on
    /// time by a pose target, from either side.
    #[test]
    fn a_pose_target_recovers_from_being_pushed_past_the_pose() {
        let cfg = config();
        for (x0, v0) in [(1.2, 1.0), (0.8, -1.0), (1.0, 2.0)] {
            let mut servo = ArrivalServo::new(cfg).unwrap();
            servo.set_pose_target(1.0, 0.05, 1.0).unwrap();
            let (x, _) = run(&mut servo, cfg.inertia_kgm2, x0, v0, 1.0, cfg.period_s);
            assert!((x - 1.0).abs() < 2e-3, "from ({x0}, {v0}) arrived at {x}");
        }
    }

    #[test]
    fn past_the_deadline_it_holds() {
        let mut servo = ArrivalServo::new(config()).unwrap();
        servo
            .set_plan(
                ArrivalPlan {
                    setpoint_rad: 1.0,
                    arrival_rad: 0.95,
                    deadline_s: 1.0,
                },
                0.0,
            )
            .unwrap();
        let out = servo.tick(1.5, JointState::default(), 0.0);
        assert_eq!(out.status, ServoStatus::Holding);
        assert!(out.torque_nm > 0.0);
    }

    #[test]
    fn infeasible_plans_are_reported_and_still_give_a_bounded_torque() {
        let mut servo = ArrivalServo::new(config()).unwrap();
        // From rest at 0 with setpoint 1, arriving at −0.5 (further out than the start) is beyond
        // every critically damped motion: unreachable, and the fallback holds the peak (u = 0
        // from rest: the softest gain).
        servo
            .set_plan(
                ArrivalPlan {
                    setpoint_rad: 1.0,
                    arrival_rad: -0.5,
                    deadline_s: 1.0,
                },
                0.0,
            )
            .unwrap();
        let out = servo.tick(0.0, JointState::default(), 0.0);
        assert!(matches!(
            out.status,
            ServoStatus::Infeasible(GainError::Unreachable { .. })
        ));
        assert!(out.torque_nm.is_finite() && out.torque_nm >= 0.0);
        // Arriving past the setpoint from rest is a crossing that needs c < −1: no stable gain;
        // the fallback is the stiffest stable gain (closest to the setpoint side).
        servo
            .set_plan(
                ArrivalPlan {
                    setpoint_rad: 1.0,
                    arrival_rad: 2.0,
                    deadline_s: 1.0,
                },
                0.0,
            )
            .unwrap();
        let out = servo.tick(0.0, JointState::default(), 0.0);
        assert!(matches!(
            out.status,
            ServoStatus::Infeasible(GainError::NoStableGain { .. })
        ));
        assert_eq!(
            out.damping_nms_per_rad,
            servo.gain_limit().max_damping_nms_per_rad
        );
    }

    #[test]
    fn near_the_deadline_gains_are_clamped_and_said_so() {
        let mut servo = ArrivalServo::new(config()).unwrap();
        servo
            .set_plan(
                ArrivalPlan {
                    setpoint_rad: 1.0,
                    arrival_rad: 0.999,
                    deadline_s: 1.0,
                },
                0.0,
            )
            .unwrap();
        let out = servo.tick(0.9999, JointState::default(), 0.0);
        assert_eq!(out.status, ServoStatus::GainClamped);
        assert!(out.damping_nms_per_rad <= servo.gain_limit().max_damping_nms_per_rad);
    }

    #[test]
    fn torque_limit_is_reported() {
        let mut servo = ArrivalServo::new(ServoConfig {
            torque_limit_nm: 1.0,
            ..config()
        })
        .unwrap();
        servo
            .set_plan(
                ArrivalPlan {
                    setpoint_rad: 1.0,
                    arrival_rad: 0.95,
                    deadline_s: 0.2,
                },
                0.0,
            )
            .unwrap();
        let out = servo.tick(0.0, JointState::default(), 0.0);
        assert!(out.torque_limited);
        assert_eq!(out.torque_nm, 1.0);
        assert!(out.requested_torque_nm > 1.0);
    }

    #[test]
    fn bad_state_gives_the_safe_torque() {
        let mut servo = ArrivalServo::new(config()).unwrap();
        let out = servo.tick(
            0.0,
            JointState {
                position_rad: f64::NAN,
                velocity_rad_s: 1.0,
            },
            0.0,
        );
        assert_eq!(out.status, ServoStatus::BadState);
        assert!(out.torque_nm < 0.0, "damping opposes the motion");
        let out = servo.tick(
            0.0,
            JointState {
                position_rad: 0.0,
                velocity_rad_s: f64::INFINITY,
            },
            0.0,
        );
        assert_eq!(out.torque_nm, 0.0);
        assert!(
            servo
                .set_plan(
                    ArrivalPlan {
                        setpoint_rad: f64::NAN,
                        arrival_rad: 0.0,
                        deadline_s: 1.0
                    },
                    0.0
                )
                .is_err()
        );
    }

    #[test]
    fn bad_configs_are_named() {
        assert_eq!(
            ArrivalServo::new(ServoConfig {
                period_s: 0.0,
                ..config()
            })
            .err(),
            Some(ConfigError::Invalid("period_s"))
        );
        assert_eq!(
            ArrivalServo::new(ServoConfig {
                stability_margin: 1.5,
                ..config()
            })
            .err(),
            Some(ConfigError::Invalid("stability_margin"))
        );
        assert!(StaticTimingServo::new(config(), 0.0).is_err());
    }

    #[test]
    fn huge_finite_states_are_bad_states_with_finite_requests() {
        // θ0 = 1e308, ω0 = −1e308 about setpoint 0: the gain problem is fine (no stable gain),
        // but k(s − θ) − γω = −inf + inf is NaN. Also +inf requests, and the coasting position
        // 2e308 that the gain solver cannot report.
        for (x, v, s, a) in [
            (1e308, -1e308, 0.0, 0.0),
            (1e308, -1e308, 0.0, 0.5),
            (1e308, 1e308, 0.0, 0.0),
            (-1e308, 1e308, 1e308, 1e308),
            (f64::MAX, -f64::MAX, -f64::MAX, 0.0),
        ] {
            let mut servo = ArrivalServo::new(config()).unwrap();
            let plan = ArrivalPlan {
                setpoint_rad: s,
                arrival_rad: a,
                deadline_s: 1.0,
            };
            servo.set_plan(plan, 0.0).unwrap();
            let state = JointState {
                position_rad: x,
                velocity_rad_s: v,
            };
            let out = servo.tick(0.0, state, 0.0);
            assert_eq!(out.status, ServoStatus::BadState, "{x:e} {v:e}: {out:?}");
            assert!(out.requested_torque_nm.is_finite(), "{out:?}");
            assert_eq!(out.torque_nm, servo.safe_torque(state));
            // The safe torque damps the motion (saturated: −γω overflows nothing here, but
            // exceeds the limit).
            assert_eq!(out.torque_nm, -v.signum() * config().torque_limit_nm);
            assert!(out.torque_limited);
        }
    }

    #[test]
    fn static_timing_and_fixed_gains_flag_overflowing_requests_too() {
        let cfg = config();
        let plan = ArrivalPlan {
            setpoint_rad: -1e308,
            arrival_rad: 0.0,
            deadline_s: 1.0,
        };
        let state = JointState {
            position_rad: 1e308,
            velocity_rad_s: 1e308,
        };
        let g = CriticalGains::from_damping(cfg.inertia_kgm2, 5.0, Branch::Principal).unwrap();
        let mut fixed = FixedGainServo::new(cfg, g).unwrap();
        fixed.set_plan(plan, 0.0).unwrap();
        let out = fixed.tick(0.0, state, 0.0);
        assert_eq!(out.status, ServoStatus::BadState);
        assert!(out.requested_torque_nm.is_finite());
        let mut stat = StaticTimingServo::new(cfg, 5.0).unwrap();
        stat.set_plan(plan, 0.0).unwrap();
        let out = stat.tick(0.0, state, 1e308);
        assert!(out.requested_torque_nm.is_finite() && out.torque_nm.is_finite());
    }

    #[test]
    fn static_timing_from_rest_covers_all_but_its_fraction() {
        let cfg = ServoConfig {
            period_s: 0.001,
            ..config()
        };
        let mut servo = StaticTimingServo::new(cfg, 5.0).unwrap();
        servo
            .set_plan(
                ArrivalPlan {
                    setpoint_rad: 1.0,
                    arrival_rad: 1.0,
                    deadline_s: 2.0,
                },
                0.0,
            )
            .unwrap();
        let (x, _) = run(&mut servo, cfg.inertia_kgm2, 0.0, 0.0, 2.0, cfg.period_s);
        let expected = 1.0 - 6.0 * (-5.0f64).exp();
        assert!((x - expected).abs() < 2e-3, "{x} vs {expected}");
    }

    /// Any f64: arbitrary bit patterns (NaN payloads, ±∞, subnormals, ±0), the extremes, and
    /// ordinary magnitudes that make the mixtures interesting.
    fn any_bits() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<u64>().prop_map(f64::from_bits),
            prop::sample::select(vec![
                f64::NAN,
                -f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::MAX,
                -f64::MAX,
                f64::MIN_POSITIVE,
                -f64::MIN_POSITIVE,
                5e-324,
                -5e-324,
                1e-310,
                0.0,
                -0.0,
                1e308,
                -1e308,
            ]),
            -10.0f64..10.0,
            (-300.0f64..300.0).prop_map(|e| 10f64.powf(e)),
            (-300.0f64..300.0).prop_map(|e| -(10f64.powf(e))),
        ]
    }

    /// What every output must satisfy, for any servo: finite torque within the limit, a finite
    /// request, the limit flag saying whether the torque is the request, and `BadState` for
    /// non-finite inputs (with the safe torque, no stiffness).
    fn check_output<S: JointServo>(
        servo: &S,
        out: &ServoOutput,
        inputs_finite: bool,
        state: JointState,
    ) -> Result<(), TestCaseError> {
        let limit = config().torque_limit_nm;
        prop_assert!(
            out.torque_nm.is_finite() && out.torque_nm.abs() <= limit,
            "{out:?}"
        );
        prop_assert!(out.requested_torque_nm.is_finite(), "{out:?}");
        prop_assert!(out.stiffness_nm_per_rad.is_finite() && out.stiffness_nm_per_rad >= 0.0);
        prop_assert!(out.damping_nms_per_rad.is_finite() && out.damping_nms_per_rad > 0.0);
        if out.torque_limited {
            prop_assert!(out.requested_torque_nm.abs() >= limit, "{out:?}");
            prop_assert_eq!(out.torque_nm, limit.copysign(out.requested_torque_nm));
        } else {
            prop_assert_eq!(out.torque_nm, out.requested_torque_nm);
        }
        if !inputs_finite {
            prop_assert_eq!(out.status, ServoStatus::BadState);
        }
        if out.status == ServoStatus::BadState {
            prop_assert_eq!(out.stiffness_nm_per_rad, 0.0);
            prop_assert_eq!(out.torque_nm, servo.safe_torque(state));
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        /// Arbitrary f64 bit patterns everywhere: no panic, finite torques and requests, and
        /// statuses consistent with the inputs and the gains (the arrival servo's gains lie in
        /// its stable range, at its limit exactly when clamped; it holds only after the
        /// deadline; it idles only without a plan).
        #[test]
        fn ticks_report_consistently_for_any_bits(
            now in any_bits(), x in any_bits(), v in any_bits(), ff in any_bits(),
            s in any_bits(), a in any_bits(), d in any_bits(),
        ) {
            let cfg = config();
            let state = JointState { position_rad: x, velocity_rad_s: v };
            let plan = ArrivalPlan { setpoint_rad: s, arrival_rad: a, deadline_s: d };
            let finite = now.is_finite() && x.is_finite() && v.is_finite() && ff.is_finite();
            let mut arrival = ArrivalServo::new(cfg).unwrap();
            let planned = arrival.set_plan(plan, 0.0).is_ok();
            let out = arrival.tick(now, state, ff);
            check_output(&arrival, &out, finite, state)?;
            let max = arrival.gain_limit().max_damping_nms_per_rad;
            let floor = crate::gains::MIN_FALLBACK_FRACTION * max;
            let k_of = |g: f64| cfg.inertia_kgm2 * (g / (2.0 * cfg.inertia_kgm2)).powi(2);
            match out.status {
                ServoStatus::Idle => prop_assert!(!planned),
                ServoStatus::Holding => prop_assert!(planned && d - now <= 0.0),
                ServoStatus::GainClamped => prop_assert_eq!(out.damping_nms_per_rad, max),
                ServoStatus::Tracking | ServoStatus::Infeasible(_) => {
                    prop_assert!(planned && d - now > 0.0);
                    let g = out.damping_nms_per_rad;
                    // Solved gains may be arbitrarily soft; the fallback's are at least γ_min.
                    let above = if out.status == ServoStatus::Tracking {
                        g > 0.0
                    } else {
                        g >= floor
                    };
                    prop_assert!(above && g <= max, "γ {g} outside the range up to {max}");
                    let k = out.stiffness_nm_per_rad;
                    prop_assert!((k - k_of(g)).abs() <= 1e-12 * (k_of(g) + f64::MIN_POSITIVE), "k {k} for γ {g}");
                }
                ServoStatus::BadState => {}
                ServoStatus::Saturated(_) => prop_assert!(false, "an f64 servo saturated"),
            }
            if let ServoStatus::Infeasible(e) = out.status {
                prop_assert!(e != GainError::Indeterminate);
            }
            let g = CriticalGains::from_damping(cfg.inertia_kgm2, 5.0, Branch::Principal).unwrap();
            let mut fixed = FixedGainServo::new(cfg, g).unwrap();
            let _ = fixed.set_plan(plan, 0.0);
            let out = fixed.tick(now, state, ff);
            check_output(&fixed, &out, finite, state)?;
            let mut stat = StaticTimingServo::new(cfg, 5.0).unwrap();
            let _ = stat.set_plan(plan, 0.0);
            let out = stat.tick(now, state, ff);
            check_output(&stat, &out, finite, state)?;
        }
    }

    proptest! {
        /// No input makes any servo panic or return a non-finite or over-limit torque.
        #[test]
        fn ticks_never_panic_and_stay_limited(
            now in any::<f64>(), x in any::<f64>(), v in any::<f64>(), ff in any::<f64>(),
            s in any::<f64>(), a in any::<f64>(), d in any::<f64>(),
        ) {
            let cfg = config();
            let state = JointState { position_rad: x, velocity_rad_s: v };
            let plan = ArrivalPlan { setpoint_rad: s, arrival_rad: a, deadline_s: d };
            let mut arrival = ArrivalServo::new(cfg).unwrap();
            let fixed_gains = CriticalGains::from_damping(cfg.inertia_kgm2, 5.0, Branch::Principal).unwrap();
            let mut fixed = FixedGainServo::new(cfg, fixed_gains).unwrap();
            let mut stat = StaticTimingServo::new(cfg, 5.0).unwrap();
            let outs = [
                { let _ = arrival.set_plan(plan, 0.0); arrival.tick(now, state, ff) },
                { let _ = fixed.set_plan(plan, 0.0); fixed.tick(now, state, ff) },
                { let _ = stat.set_plan(plan, 0.0); stat.tick(now, state, ff) },
            ];
            for out in outs {
                prop_assert!(out.torque_nm.is_finite());
                prop_assert!(out.requested_torque_nm.is_finite());
                prop_assert!(out.torque_nm.abs() <= cfg.torque_limit_nm);
            }
        }
    }
}
