//! The analytic arrival servo computed in f32 (feature `micromath`, which gates the f32 path): what
//! [`crate::servo::ArrivalServo`] does — the gains re-solved every tick from the measured state
//! and the time left, the setpoint re-aimed with a pose target, the stable-gain clamp, the
//! closest-arrival fallback, the torque limit and the safe state — but every step in f32 through
//! [`crate::gains_f32`], as on a microcontroller with a single-precision FPU.
//!
//! The [`JointServo`] boundary stays f64 so the runtime drives it like the f64 servo. Inputs are
//! rounded to f32 on entry (a firmware that reads its sensors in f32) and results widened on exit;
//! the time left, deadline − now, is formed in f64 first and then rounded (a firmware keeps its
//! clock as an integer tick count, so the difference is exact there too). A finite f64 input that
//! does not fit f32 (|v| > 3.4e38) is as unusable as a NaN: [`ServoStatus::BadState`]. Must never
//! allocate, block or panic, and never returns NaN.
//!
//! ```
//! use control_core::servo::{JointServo, JointState, ServoConfig};
//! use control_core::servo_f32::ArrivalServoF32;
//! let mut servo = ArrivalServoF32::new(ServoConfig { inertia_kgm2: 0.67, ..ServoConfig::default() })?;
//! servo.set_pose_target(1.0, 0.05, 2.0)?;
//! let out = servo.tick(0.0, JointState { position_rad: 0.0, velocity_rad_s: 0.0 }, 0.0);
//! assert!(out.torque_nm > 0.0);
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```

use crate::gains::{Branch, GainError};
use crate::gains_f32::{
    ArrivalProblemF32, CriticalGainsF32, GainLimitF32, closest_arrival_gains_f32,
    solve_arrival_gains_f32,
};
use crate::servo::{
    ArrivalPlan, ArrivalServo, ConfigError, JointServo, JointState, PlanError, ServoConfig,
    ServoOutput, ServoStatus,
};

/// A plan in f32 (the deadline stays f64: it is compared with the runtime's clock).
#[derive(Debug, Clone, Copy, PartialEq)]
struct PlanF32 {
    setpoint_rad: f32,
    arrival_rad: f32,
    deadline_s: f64,
}

/// The arrival servo in f32, its gains from [`crate::gains_f32`] (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct ArrivalServoF32 {
    config: ServoConfig,
    torque_limit_nm: f32,
    inertia_kgm2: f32,
    limit: GainLimitF32,
    hold: CriticalGainsF32,
    plan: Option<PlanF32>,
    /// With a pose target: the tolerance the setpoint is re-aimed beyond the pose every tick.
    reaim_tolerance_rad: Option<f32>,
}

/// f64 → f32, rounding to nearest (|v| > f32::MAX becomes ±∞, which callers treat as unusable).
#[inline]
#[allow(clippy::cast_possible_truncation)]
fn narrow(v: f64) -> f32 {
    v as f32
}

/// f32 ↔ [`ArrivalPlan::approach`]: the setpoint `tolerance` beyond `target` as seen from `from`.
fn approach(target_rad: f32, tolerance_rad: f32, from_rad: f32) -> f32 {
    let direction = if target_rad >= from_rad { 1.0 } else { -1.0 };
    target_rad + direction * tolerance_rad.abs()
}

impl ArrivalServoF32 {
    /// A servo with no plan, from the same configuration as [`ArrivalServo::new`] and with its
    /// refusals; also refused ([`ConfigError::Invalid`]) is a configuration whose values are not
    /// finite and positive once rounded to f32.
    pub fn new(config: ServoConfig) -> Result<Self, ConfigError> {
        // The f64 servo's validation, so both refuse the same configurations.
        ArrivalServo::new(config)?;
        let positive = |v: f32| v.is_finite() && v > 0.0;
        let inertia = narrow(config.inertia_kgm2);
        let period = narrow(config.period_s);
        let torque_limit = narrow(config.torque_limit_nm);
        let hold_freq = narrow(config.hold_natural_freq_rad_s);
        let margin = narrow(config.stability_margin);
        for (v, name) in [
            (inertia, "inertia_kgm2"),
            (period, "period_s"),
            (torque_limit, "torque_limit_nm"),
            (hold_freq, "hold_natural_freq_rad_s"),
            (margin, "stability_margin"),
        ] {
            if !positive(v) {
                return Err(ConfigError::Invalid(name));
            }
        }
        let limit = GainLimitF32::new(inertia, period, config.integrator, margin.min(1.0))
            .map_err(ConfigError::Gain)?;
        let hold =
            CriticalGainsF32::from_damping(inertia, 2.0 * inertia * hold_freq, Branch::Principal)
                .ok_or(ConfigError::Invalid("hold_natural_freq_rad_s"))?
                .clamp_to(&limit)
                .0;
        Ok(Self {
            config,
            torque_limit_nm: torque_limit,
            inertia_kgm2: inertia,
            limit,
            hold,
            plan: None,
            reaim_tolerance_rad: None,
        })
    }

    /// Pass through `pose_rad` at `deadline_s`, the setpoint re-aimed every tick `tolerance_rad`
    /// beyond the pose as seen from the measured position (as [`ArrivalServo::set_pose_target`]).
    pub fn set_pose_target(
        &mut self,
        pose_rad: f64,
        tolerance_rad: f64,
        deadline_s: f64,
    ) -> Result<(), PlanError> {
        let pose = narrow(pose_rad);
        let tolerance = narrow(tolerance_rad).abs();
        let plan = PlanF32 {
            setpoint_rad: approach(pose, tolerance, pose),
            arrival_rad: pose,
            deadline_s,
        };
        check_plan(&plan)?;
        self.plan = Some(plan);
        self.reaim_tolerance_rad = Some(tolerance);
        Ok(())
    }

    /// The configuration the servo was built from.
    pub fn config(&self) -> ServoConfig {
        self.config
    }

    /// The stable gain limit in use (f32).
    pub fn gain_limit(&self) -> GainLimitF32 {
        self.limit
    }

    /// τ = k(s − θ) − γω + feed-forward in f32, limited; the safe state if not a finite f32.
    fn pd(
        &self,
        gains: &CriticalGainsF32,
        setpoint_rad: f32,
        state: (f32, f32),
        feedforward_nm: f32,
        status: ServoStatus,
    ) -> ServoOutput {
        let (position, velocity) = state;
        let requested = gains.stiffness_nm_per_rad * (setpoint_rad - position)
            - gains.damping_nms_per_rad * velocity
            + feedforward_nm;
        if !requested.is_finite() {
            return self.bad_state(velocity);
        }
        let (torque, limited) = self.limit_torque(requested);
        ServoOutput {
            torque_nm: f64::from(torque),
            status,
            stiffness_nm_per_rad: f64::from(gains.stiffness_nm_per_rad),
            damping_nms_per_rad: f64::from(gains.damping_nms_per_rad),
            torque_limited: limited,
            requested_torque_nm: f64::from(requested),
        }
    }

    fn limit_torque(&self, requested: f32) -> (f32, bool) {
        let l = self.torque_limit_nm;
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

    /// (torque, finite request, limited) of the safe state: −γω limited; 0 for an unusable ω.
    fn safe_request(&self, velocity: f32) -> (f32, f32, bool) {
        if !velocity.is_finite() {
            return (0.0, 0.0, false);
        }
        let requested = -self.hold.damping_nms_per_rad * velocity;
        let (torque, limited) = self.limit_torque(requested);
        if requested.is_finite() {
            (torque, requested, limited)
        } else {
            (torque, torque, true)
        }
    }

    fn bad_state(&self, velocity: f32) -> ServoOutput {
        let (torque, requested, limited) = self.safe_request(velocity);
        ServoOutput {
            torque_nm: f64::from(torque),
            status: ServoStatus::BadState,
            stiffness_nm_per_rad: 0.0,
            damping_nms_per_rad: f64::from(self.hold.damping_nms_per_rad),
            torque_limited: limited,
            requested_torque_nm: f64::from(requested),
        }
    }
}

fn check_plan(plan: &PlanF32) -> Result<(), PlanError> {
    if plan.setpoint_rad.is_finite() && plan.arrival_rad.is_finite() && plan.deadline_s.is_finite()
    {
        Ok(())
    } else {
        Err(PlanError::NonFinite)
    }
}

impl JointServo for ArrivalServoF32 {
    fn set_plan(&mut self, plan: ArrivalPlan, _now_s: f64) -> Result<(), PlanError> {
        let plan = PlanF32 {
            setpoint_rad: narrow(plan.setpoint_rad),
            arrival_rad: narrow(plan.arrival_rad),
            deadline_s: plan.deadline_s,
        };
        check_plan(&plan)?;
        self.plan = Some(plan);
        self.reaim_tolerance_rad = None;
        Ok(())
    }

    fn tick(&mut self, now_s: f64, state: JointState, feedforward_nm: f64) -> ServoOutput {
        let position = narrow(state.position_rad);
        let velocity = narrow(state.velocity_rad_s);
        let feedforward = narrow(feedforward_nm);
        if !(now_s.is_finite()
            && position.is_finite()
            && velocity.is_finite()
            && feedforward.is_finite())
        {
            return self.bad_state(velocity);
        }
        let s = (position, velocity);
        let Some(mut plan) = self.plan else {
            let damping_only = CriticalGainsF32 {
                stiffness_nm_per_rad: 0.0,
                ..self.hold
            };
            return self.pd(&damping_only, 0.0, s, feedforward, ServoStatus::Idle);
        };
        if let Some(tolerance) = self.reaim_tolerance_rad {
            plan.setpoint_rad = approach(plan.arrival_rad, tolerance, position);
        }
        let time_to_go_s = narrow(plan.deadline_s - now_s);
        if time_to_go_s.is_nan() || time_to_go_s <= 0.0 || time_to_go_s == f32::INFINITY {
            // Past the deadline (or so far before it that the time left is not a finite f32:
            // then hold too rather than solve with an unusable time).
            return self.pd(
                &self.hold,
                plan.setpoint_rad,
                s,
                feedforward,
                ServoStatus::Holding,
            );
        }
        let problem = ArrivalProblemF32 {
            inertia_kgm2: self.inertia_kgm2,
            position_rad: position,
            velocity_rad_s: velocity,
            setpoint_rad: plan.setpoint_rad,
            arrival_rad: plan.arrival_rad,
            time_to_go_s,
        };
        match solve_arrival_gains_f32(&problem) {
            Ok(gains) => {
                let (gains, clamped) = gains.clamp_to(&self.limit);
                let status = if clamped {
                    ServoStatus::GainClamped
                } else {
                    ServoStatus::Tracking
                };
                self.pd(&gains, plan.setpoint_rad, s, feedforward, status)
            }
            Err(GainError::Indeterminate) => self.pd(
                &self.hold,
                plan.setpoint_rad,
                s,
                feedforward,
                ServoStatus::Tracking,
            ),
            Err(e) => match closest_arrival_gains_f32(&problem, &self.limit) {
                Some(gains) => self.pd(
                    &gains,
                    plan.setpoint_rad,
                    s,
                    feedforward,
                    ServoStatus::Infeasible(e),
                ),
                None => self.bad_state(velocity),
            },
        }
    }

    fn safe_torque(&self, state: JointState) -> f64 {
        f64::from(self.safe_request(narrow(state.velocity_rad_s)).0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ServoConfig {
        ServoConfig {
            inertia_kgm2: 0.67,
            ..ServoConfig::default()
        }
    }

    /// Relative difference of two gains.
    fn rel(a: f64, b: f64) -> f64 {
        (a - b).abs() / b.abs().max(1e-12)
    }

    /// The f32 servo's gains against the f64 servo's over a grid of ball-blocking-like problems:
    /// inertia 0.67 kg·m², times to go 0.005–2 s, positions and poses ±2 rad, velocities
    /// ±10 rad/s, tolerance 0.05 rad. Prints the figures; bounds the median and the 99th
    /// percentile of the relative difference of γ where both track with the same status.
    #[test]
    fn gains_match_the_f64_servo_on_a_ball_blocking_grid() {
        let mut diffs = std::vec::Vec::new();
        let (mut same_status, mut total, mut worst) = (0usize, 0usize, (0.0f64, String::new()));
        let mut coasting_cases = 0usize;
        let times = [
            0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0,
        ];
        let angles = [-2.0, -1.3, -0.7, -0.2, 0.0, 0.3, 0.9, 1.5, 2.0];
        let velocities = [-10.0, -4.0, -1.0, -0.1, 0.0, 0.5, 2.0, 6.0, 10.0];
        for &td in &times {
            for &pose in &angles {
                for &theta in &angles {
                    for &omega in &velocities {
                        let mut s64 = ArrivalServo::new(config()).unwrap();
                        let mut s32 = ArrivalServoF32::new(config()).unwrap();
                        s64.set_pose_target(pose, 0.05, td).unwrap();
                        s32.set_pose_target(pose, 0.05, td).unwrap();
                        let st = JointState {
                            position_rad: theta,
                            velocity_rad_s: omega,
                        };
                        let a = s64.tick(0.0, st, 0.0);
                        let b = s32.tick(0.0, st, 0.0);
                        total += 1;
                        assert!(b.torque_nm.is_finite());
                        let same = core::mem::discriminant(&a.status)
                            == core::mem::discriminant(&b.status);
                        if same {
                            same_status += 1;
                        }
                        // Where the coasting motion itself arrives (r = 1 + c, hit exactly by
                        // this grid), every tiny gain arrives and which one is "softest" is
                        // rounding: counted apart, not compared.
                        let coasting = a.damping_nms_per_rad.min(b.damping_nms_per_rad) < 1e-3;
                        if same && matches!(a.status, ServoStatus::Tracking) && coasting {
                            coasting_cases += 1;
                        } else if same && matches!(a.status, ServoStatus::Tracking) {
                            let d = rel(b.damping_nms_per_rad, a.damping_nms_per_rad);
                            if d > worst.0 {
                                worst = (d, format!("td {td} pose {pose} θ {theta} ω {omega}"));
                            }
                            diffs.push(d);
                        }
                    }
                }
            }
        }
        diffs.sort_by(f64::total_cmp);
        let pct = |p: f64| {
            let i = ((diffs.len() - 1) as f64 * p).round() as usize;
            diffs[i]
        };
        let mean = diffs.iter().sum::<f64>() / diffs.len() as f64;
        println!(
            "f32 vs f64 servo: {total} problems, same status {same_status}; tracking in both: {} \
             — relative difference of γ: median {:.2e}, mean {:.2e}, p99 {:.2e}, max {:.2e} ({}); \
             {coasting_cases} more where the coast arrives (γ < 1e-3 in one: not compared)",
            diffs.len(),
            pct(0.5),
            mean,
            pct(0.99),
            worst.0,
            worst.1
        );
        assert!(diffs.len() > 1000);
        assert!(same_status * 100 >= total * 97, "{same_status}/{total}");
        assert!(pct(0.5) < 1e-3, "median {}", pct(0.5));
        assert!(pct(0.99) < 2e-2, "p99 {}", pct(0.99));
        assert!(worst.0 < 1e-2, "max {:?}", worst);
        assert!(coasting_cases * 100 <= total, "{coasting_cases}");
    }

    #[test]
    fn refuses_what_the_f64_servo_refuses_and_f32_overflow() {
        let mut bad = config();
        bad.period_s = 0.0;
        assert!(ArrivalServoF32::new(bad).is_err());
        let mut tiny = config();
        tiny.inertia_kgm2 = 1e-60; // positive in f64, zero in f32
        assert_eq!(
            ArrivalServoF32::new(tiny).unwrap_err(),
            ConfigError::Invalid("inertia_kgm2")
        );
    }

    #[test]
    fn bad_inputs_give_the_safe_state_never_nan() {
        let mut s = ArrivalServoF32::new(config()).unwrap();
        s.set_pose_target(1.0, 0.05, 1.0).unwrap();
        for (p, v, f) in [
            (f64::NAN, 0.0, 0.0),
            (0.0, f64::INFINITY, 0.0),
            (1e300, 0.0, 0.0),
            (0.0, 1e39, 0.0),
            (0.0, 0.0, f64::NAN),
        ] {
            let out = s.tick(
                0.0,
                JointState {
                    position_rad: p,
                    velocity_rad_s: v,
                },
                f,
            );
            assert_eq!(out.status, ServoStatus::BadState);
            assert!(out.torque_nm.is_finite() && out.requested_torque_nm.is_finite());
        }
        let out = s.tick(5.0, JointState::default(), 0.0);
        assert_eq!(out.status, ServoStatus::Holding);
    }

    /// Closed loop on a pure inertia (semi-implicit Euler at 200 Hz, as Rapier): both servos
    /// reach the pose on time; prints the arrival errors.
    #[test]
    fn arrives_on_time_like_the_f64_servo() {
        fn run<S: JointServo>(servo: &mut S, m: f64, theta0: f64, omega0: f64, td: f64) -> f64 {
            let h = 0.005;
            let (mut th, mut om) = (theta0, omega0);
            let steps = (td / h).round() as usize;
            for i in 0..steps {
                let out = servo.tick(
                    i as f64 * h,
                    JointState {
                        position_rad: th,
                        velocity_rad_s: om,
                    },
                    0.0,
                );
                om += h * out.torque_nm / m;
                th += h * om;
            }
            th
        }
        for (theta0, omega0, pose, td) in [(0.0, 0.0, 1.2, 0.6), (1.0, -3.0, -1.0, 0.8)] {
            let mut s64 = ArrivalServo::new(config()).unwrap();
            let mut s32 = ArrivalServoF32::new(config()).unwrap();
            s64.set_pose_target(pose, 0.05, td).unwrap();
            s32.set_pose_target(pose, 0.05, td).unwrap();
            let e64 = run(&mut s64, 0.67, theta0, omega0, td) - pose;
            let e32 = run(&mut s32, 0.67, theta0, omega0, td) - pose;
            println!("pose {pose} in {td} s: arrival error f64 {e64:.2e} rad, f32 {e32:.2e} rad");
            assert!(e32.abs() < 1e-2, "{e32}");
        }
    }
}
