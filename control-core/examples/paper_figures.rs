//! Prints the paper's figures 1 and 3 as a table: for one start and a range of initial
//! velocities, where the static-timing method and the analytic gains put the joint at t = 10
//! (target 1). See `control_core::paper` for the set-up.
//!
//! `cargo run --release -p control-core --example paper_figures`

use control_core::gains::GainError;
use control_core::paper::{self, DEADLINE_S, START_RAD, STATIC_TIME_CONSTANTS, TARGET_RAD};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let plan = paper::plan();
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
        let row = paper::sweep_row(f64::from(i) * 0.1)?;
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
    Ok(())
}
