//! The single-joint experiment behind figures 1 and 3 of "Pose Control in Dynamic Conditions",
//! reproduced from the ODE alone (no physics engine): the same start position, a range of initial
//! velocities, and the pose θ = 1 required at t = 10.
//!
//! The paper gives θ(10) = 1.045 for the static method from rest but not its start or its n. A
//! critically damped motion from rest never passes its target, so the start lies above it:
//! θ₀ = 2, and n solves (1 + n)e^(−n) = 0.045, i.e. n = 4.87. The analytic servo aims at a
//! setpoint 0.05 below the pose and must be *at* the pose at t = 10 (it arrives from above). Each
//! row gives, for one initial velocity:
//! - the static method's θ(10) in closed form (its gains are fixed when the plan is issued),
//! - the analytic gains solved once at t = 0 and their closed-form θ(10) (the paper's Fig. 3),
//! - both servos ticking at 200 Hz on a pure inertia integrated exactly between ticks (torque
//!   held), the analytic one re-solving every tick.
//!
//! Moved here from `control-core`: the paper's experiment is an application of the core, not
//! part of it. `hil paper` prints the table.

use control_core::closed_form::{critically_damped_position, held_torque_step};
use control_core::gains::{ArrivalProblem, CriticalGains, GainError, solve_arrival_gains};
use control_core::servo::{
    ArrivalPlan, ArrivalServo, ConfigError, JointServo, JointState, ServoConfig, StaticTimingServo,
};

/// Start position, rad.
pub const START_RAD: f64 = 2.0;
/// The pose required at [`DEADLINE_S`], rad.
pub const TARGET_RAD: f64 = 1.0;
/// The instant of the pose, s.
pub const DEADLINE_S: f64 = 10.0;
/// The analytic servo's setpoint lies this far beyond the pose, rad.
pub const TOLERANCE_RAD: f64 = 0.05;
/// The static method's number of time constants: (1 + n)e^(−n) = 0.045 gives the paper's 1.045.
pub const STATIC_TIME_CONSTANTS: f64 = 4.87;
/// Inertia of the joint, kg·m².
pub const INERTIA_KGM2: f64 = 1.0;
/// Control period of the simulated servos, s.
pub const PERIOD_S: f64 = 0.005;

/// One initial velocity's outcome.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepRow {
    /// Initial velocity, rad/s.
    pub velocity_rad_s: f64,
    /// Static method, closed form: θ(10), rad.
    pub static_closed_form_rad: f64,
    /// Analytic gains solved once at t = 0, or why there are none.
    pub analytic_gains: Result<CriticalGains, GainError>,
    /// Their closed-form θ(10), rad (NaN when there are no gains).
    pub analytic_closed_form_rad: f64,
    /// Static servo ticking at 200 Hz: θ(10), rad.
    pub static_servo_rad: f64,
    /// Analytic servo re-solving every tick at 200 Hz: θ(10), rad.
    pub analytic_servo_rad: f64,
}

/// The plan both servos get.
pub fn plan() -> ArrivalPlan {
    ArrivalPlan::approach(TARGET_RAD, TOLERANCE_RAD, START_RAD, DEADLINE_S)
}

fn config() -> ServoConfig {
    ServoConfig {
        inertia_kgm2: INERTIA_KGM2,
        period_s: PERIOD_S,
        torque_limit_nm: 1e6,
        ..ServoConfig::default()
    }
}

/// Tick `servo` from (`START_RAD`, `velocity_rad_s`) until the deadline on a pure inertia,
/// integrating exactly between ticks with the torque held; returns θ at the deadline.
fn simulate<S: JointServo>(servo: &mut S, velocity_rad_s: f64) -> f64 {
    let (mut x, mut v) = (START_RAD, velocity_rad_s);
    let h = PERIOD_S;
    let mut t = 0.0;
    let mut tick: u32 = 0;
    while t < DEADLINE_S - 0.5 * h {
        let out = servo.tick(
            t,
            JointState {
                position_rad: x,
                velocity_rad_s: v,
            },
            0.0,
        );
        (x, v) = held_torque_step(x, v, out.torque_nm / INERTIA_KGM2, h);
        tick += 1;
        t = f64::from(tick) * h;
    }
    x
}

/// The outcome for one initial velocity.
pub fn sweep_row(velocity_rad_s: f64) -> Result<SweepRow, ConfigError> {
    let plan = plan();
    let mut static_servo = StaticTimingServo::new(config(), STATIC_TIME_CONSTANTS)?;
    let _ = static_servo.set_plan(plan, 0.0);
    let static_damping = static_servo
        .gains_for(DEADLINE_S)
        .map_or(f64::NAN, |g| g.damping_nms_per_rad);
    let static_closed_form_rad = TARGET_RAD
        + critically_damped_position(
            INERTIA_KGM2,
            static_damping,
            START_RAD - TARGET_RAD,
            velocity_rad_s,
            DEADLINE_S,
        );
    let analytic_gains = solve_arrival_gains(&ArrivalProblem {
        inertia_kgm2: INERTIA_KGM2,
        position_rad: START_RAD,
        velocity_rad_s,
        setpoint_rad: plan.setpoint_rad,
        arrival_rad: plan.arrival_rad,
        time_to_go_s: DEADLINE_S,
    });
    let analytic_closed_form_rad = match analytic_gains {
        Ok(g) => {
            plan.setpoint_rad
                + critically_damped_position(
                    INERTIA_KGM2,
                    g.damping_nms_per_rad,
                    START_RAD - plan.setpoint_rad,
                    velocity_rad_s,
                    DEADLINE_S,
                )
        }
        Err(_) => f64::NAN,
    };
    let mut analytic_servo = ArrivalServo::new(config())?;
    let _ = analytic_servo.set_plan(plan, 0.0);
    Ok(SweepRow {
        velocity_rad_s,
        static_closed_form_rad,
        analytic_gains,
        analytic_closed_form_rad,
        static_servo_rad: simulate(&mut static_servo, velocity_rad_s),
        analytic_servo_rad: simulate(&mut analytic_servo, velocity_rad_s),
    })
}

/// `hil paper`: the sweep as a table on stdout.
pub fn print_table() -> std::process::ExitCode {
    let plan = plan();
    println!(
        "start θ0 = {START_RAD} rad, pose {TARGET_RAD} rad required at t = {DEADLINE_S} s; \
         static n = {STATIC_TIME_CONSTANTS}; analytic setpoint {} rad",
        plan.setpoint_rad
    );
    println!(
        "{:>8} | {:>12} {:>12} | {:>12} {:>16} {:>12}",
        "ω0 rad/s", "static θ(10)", "static@200Hz", "analytic γ", "analytic θ(10)", "arrival@200Hz"
    );
    for i in -5..=10 {
        let row = match sweep_row(f64::from(i) * 0.1) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("hil paper: {e}");
                return std::process::ExitCode::FAILURE;
            }
        };
        let (gamma, closed) = match row.analytic_gains {
            Ok(g) => (
                format!("{:.6}", g.damping_nms_per_rad),
                format!("{:.12}", row.analytic_closed_form_rad),
            ),
            Err(GainError::Unreachable { limit_rad }) => (
                "unreachable".to_string(),
                format!("(reach ≤ {limit_rad:.4})"),
            ),
            Err(e) => ("infeasible".to_string(), format!("{e}")),
        };
        println!(
            "{:>8.2} | {:>12.5} {:>12.5} | {:>12} {:>16} {:>12.6}",
            row.velocity_rad_s,
            row.static_closed_form_rad,
            row.static_servo_rad,
            gamma,
            closed,
            row.analytic_servo_rad
        );
    }
    std::process::ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sweep of the figures: −0.5 … 1.0 rad/s.
    fn velocities() -> impl Iterator<Item = f64> {
        (-5..=10).map(|i| f64::from(i) * 0.1)
    }

    #[test]
    fn static_method_lands_near_the_target_only_from_rest() {
        let rest = sweep_row(0.0).unwrap();
        assert!(
            (rest.static_closed_form_rad - 1.045).abs() < 5e-4,
            "{rest:?}"
        );
        // Moving away, its miss grows with the speed, and exceeds 0.1 rad by 1 rad/s.
        let mut last = (rest.static_closed_form_rad - TARGET_RAD).abs();
        for v in velocities().filter(|v| *v > 0.0) {
            let miss = (sweep_row(v).unwrap().static_closed_form_rad - TARGET_RAD).abs();
            assert!(miss > last, "v {v}: {miss} after {last}");
            last = miss;
        }
        assert!(last > 0.1);
    }

    #[test]
    fn analytic_gains_hit_the_pose_for_every_feasible_velocity() {
        let c_of = |v: f64| DEADLINE_S * v / (START_RAD - plan().setpoint_rad);
        let r = (TARGET_RAD - plan().setpoint_rad) / (START_RAD - plan().setpoint_rad);
        let mut feasible = 0;
        for v in velocities() {
            let row = sweep_row(v).unwrap();
            // The table: from the same side, feasible iff r ≤ e^c (here always r < 1 + c or
            // moving towards).
            if r <= c_of(v).exp() {
                feasible += 1;
                assert!(row.analytic_gains.is_ok(), "v {v}: {row:?}");
                assert!(
                    (row.analytic_closed_form_rad - TARGET_RAD).abs() < 1e-12,
                    "{row:?}"
                );
                // Re-solving every tick on the sampled loop arrives within 1e-3 rad.
                assert!(
                    (row.analytic_servo_rad - TARGET_RAD).abs() < 1e-3,
                    "{row:?}"
                );
            } else {
                assert!(
                    matches!(row.analytic_gains, Err(GainError::Unreachable { .. })),
                    "v {v}: {row:?}"
                );
            }
        }
        assert!(feasible >= 13, "{feasible}");
    }
}
