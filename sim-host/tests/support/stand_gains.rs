//! The humanoid's standing PD gains, shared by the humanoid plant's test (`humanoid.rs`) and the
//! robot plant's (`robot.rs`, the same body with its ball joints as revolute coordinates).

/// Gains (kp N·m/rad, kd N·m·s/rad) of the humanoid's joint `name` about the parent's x, y, z
/// axes. Sagittal (z) 1000 / 2 on the trunk and legs; lateral (x) 300 / 1; twist (y) a third;
/// light limbs far less (an explicit PD at dt 5 ms is stable only for ωn·dt < 1 and
/// kd·dt/I < 2 on the body it turns).
pub fn gains(name: &str) -> ([f64; 3], [f64; 3]) {
    let (kp, kd, kx, dx) = (1000.0, 2.0, 300.0, 1.0);
    match name {
        "neck" => ([100.0; 3], [1.0; 3]),
        n if n.ends_with("shoulder") => ([100.0, 100.0, 20.0], [2.0, 2.0, 0.2]),
        n if n.ends_with("elbow") => ([30.0; 3], [0.5; 3]),
        n if n.ends_with("toe") => ([20.0; 3], [0.1; 3]),
        n if n.ends_with("ankle") => ([kx, 0.0, kp], [dx, 0.0, kd]),
        // Waist, hips, knees.
        _ => ([kx, kp / 3.0, kp], [dx, kd / 3.0, kd]),
    }
}
