//! Closed-form motion of a joint under critically damped PD control, without physics: the
//! reference that the gain solver's promises are checked against, and the ODE behind the paper's
//! figures 1 and 3.
//!
//! Never allocates or panics; non-finite inputs give non-finite outputs.

/// Offset from the setpoint at time `t_s` of a joint of inertia m (kg·m²) that starts `offset_rad`
/// from the setpoint with velocity `velocity_rad_s`, under critically damped PD with damping γ
/// (k = γ²/(4m)): θ(t) = (θ₀ + t(ω₀ + aθ₀))e^(−at), a = γ/(2m).
pub fn critically_damped_position(
    inertia_kgm2: f64,
    damping_nms_per_rad: f64,
    offset_rad: f64,
    velocity_rad_s: f64,
    t_s: f64,
) -> f64 {
    let a = damping_nms_per_rad / (2.0 * inertia_kgm2);
    (offset_rad + t_s * (velocity_rad_s + a * offset_rad)) * libm::exp(-a * t_s)
}

/// Velocity at time `t_s` of the same motion: θ'(t) = (ω₀ − a t (ω₀ + aθ₀))e^(−at).
pub fn critically_damped_velocity(
    inertia_kgm2: f64,
    damping_nms_per_rad: f64,
    offset_rad: f64,
    velocity_rad_s: f64,
    t_s: f64,
) -> f64 {
    let a = damping_nms_per_rad / (2.0 * inertia_kgm2);
    (velocity_rad_s - a * t_s * (velocity_rad_s + a * offset_rad)) * libm::exp(-a * t_s)
}

/// One step of `h_s` of a pure inertia under a torque held constant over the step (the
/// zero-order hold of a sampled controller), integrated exactly: acceleration a = τ/m,
/// x ← x + h·v + h²a/2, v ← v + h·a. Returns (position, velocity).
pub fn held_torque_step(
    position_rad: f64,
    velocity_rad_s: f64,
    acceleration_rad_s2: f64,
    h_s: f64,
) -> (f64, f64) {
    (
        position_rad + h_s * velocity_rad_s + 0.5 * h_s * h_s * acceleration_rad_s2,
        velocity_rad_s + h_s * acceleration_rad_s2,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn position_and_velocity_agree_with_a_finite_difference() {
        let (m, g, x0, v0) = (0.7, 3.1, 0.4, -1.3);
        for i in 0..50 {
            let t = f64::from(i) * 0.1;
            let h = 1e-6;
            let fd = (critically_damped_position(m, g, x0, v0, t + h)
                - critically_damped_position(m, g, x0, v0, t - h))
                / (2.0 * h);
            assert!((fd - critically_damped_velocity(m, g, x0, v0, t)).abs() < 1e-7);
        }
    }

    #[test]
    fn a_held_torque_step_is_exact_for_constant_acceleration() {
        // x(t) = 1 + 2t + 1.5t², v(t) = 2 + 3t, over ten steps of 0.1 s.
        let (mut x, mut v) = (1.0, 2.0);
        for _ in 0..10 {
            (x, v) = held_torque_step(x, v, 3.0, 0.1);
        }
        assert!((x - 4.5).abs() < 1e-12 && (v - 5.0).abs() < 1e-12);
    }

    #[test]
    fn starts_where_it_is() {
        assert_eq!(critically_damped_position(1.0, 2.0, 0.3, 5.0, 0.0), 0.3);
        assert_eq!(critically_damped_velocity(1.0, 2.0, 0.3, 5.0, 0.0), 5.0);
    }
}
