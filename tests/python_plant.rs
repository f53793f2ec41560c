//! The example plant of `examples/python_plant/` (standard-library Python 3, written from
//! docs/PROTOCOL.md alone) in place of the real one: `hil` accepts every frame it sends, runs the
//! ball-blocking scene to its end, and the analytic servo arrives at every target.

use std::os::unix::fs::PermissionsExt as _;
use std::process::Command;

use e2e::{controller, hil, out_dir, report, workspace_root};

/// The largest arrival error accepted from the analytic servo on the Python plant, rad.
///
/// Measured: 1.20e-4, 2.22e-4, 1.91e-4, 2.59e-4 rad at the four targets, the same bits on every
/// run (lockstep is deterministic, and the plant's arithmetic is IEEE doubles throughout). Almost
/// all of it is the plant's integrator: semi-implicit Euler moves the angle by α·dt²/2 per step
/// more than the zero-order-hold motion the servo plans for (a plant that integrates each step's
/// constant acceleration exactly arrives within 1e-9 rad). The bound leaves a margin of about 2
/// over the largest measured error, for a last-bit difference in `math.cos` between C libraries,
/// and stays below what a wrong plant reaches: the same plant without gravity arrives 9.1e-4 rad
/// off (the servo re-plans every tick, so a model error shows only faintly at arrival), which a
/// bound of 1e-3 would let through.
const MAX_ARRIVAL_ERROR_RAD: f64 = 5e-4;

/// Steps of the scene: `end_time_s / dt_s`, rounded, read from the `scene.json` hil wrote.
fn scene_steps(scene: &serde_json::Value) -> (u64, f64) {
    let dt = scene["dt_s"].as_f64().unwrap_or(f64::NAN);
    let end = scene["end_time_s"].as_f64().unwrap_or(f64::NAN);
    ((end / dt).round() as u64, dt)
}

#[test]
fn the_python_example_plant_runs_the_ball_blocking_scene_without_balls() {
    let python = Command::new("python3").arg("--version").output();
    assert!(
        python.as_ref().is_ok_and(|o| o.status.success()),
        "python3 is needed to run examples/python_plant/plant.py (through its `#!/usr/bin/env \
         python3` line) but `python3 --version` failed: {python:?}"
    );
    let plant = workspace_root().join("examples/python_plant/plant.py");
    // Git may not keep the executable bit; hil executes the plant directly.
    let mut mode = std::fs::metadata(&plant)
        .unwrap_or_else(|e| panic!("{}: {e}", plant.display()))
        .permissions();
    mode.set_mode(mode.mode() | 0o755);
    std::fs::set_permissions(&plant, mode)
        .unwrap_or_else(|e| panic!("cannot make {} executable: {e}", plant.display()));

    let out = out_dir("python_plant");
    let run = hil()
        .env("HIL_SIM_HOST", &plant)
        .arg("run")
        .arg(workspace_root().join("scenarios/ball_blocking_no_weights.toml"))
        .args(["--only", "analytic", "--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap_or_else(|e| panic!("cannot run hil: {e}"));
    assert!(
        run.status.success(),
        "hil with the Python plant: {}\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );

    let r = report(&out);
    assert_eq!(r["complete"], true, "{:#}", r["incomplete_reason"]);
    let faults = &r["faults"];
    assert_eq!(faults["plant_lost"], false, "{faults:#}");
    // No state frame refused by hil (link or clock), no torque frame refused by the plant, and
    // the plant exited cleanly after its final state.
    assert_eq!(faults["rejected_frames"], 0, "{faults:#}");
    assert_eq!(faults["plant_rejected_frames"], 0, "{faults:#}");
    assert_eq!(faults["plant_exit"], serde_json::Value::Null, "{faults:#}");

    let scene_text = std::fs::read_to_string(out.join("scene.json")).unwrap_or_default();
    let scene: serde_json::Value =
        serde_json::from_str(&scene_text).unwrap_or_else(|e| panic!("scene.json is not JSON: {e}"));
    let (steps, dt) = scene_steps(&scene);
    assert_eq!(steps, 800, "4 s at 5 ms");
    let analytic = controller(&r, "analytic");
    // One tick per state before the last: states 0..steps−1, the final state ends the run.
    assert_eq!(analytic["ticks"], steps, "{analytic:#}");
    // The plant ignores the balls: nothing touches the arm, so no ball counts as blocked.
    assert_eq!(analytic["blocked"], 0, "{analytic:#}");
    let errors: Vec<f64> = analytic["arrival_error_rad"]
        .as_array()
        .map(|a| a.iter().map(|e| e.as_f64().unwrap_or(f64::NAN)).collect())
        .unwrap_or_default();
    assert_eq!(errors.len(), 4, "{analytic:#}");
    for (i, e) in errors.iter().enumerate() {
        assert!(
            *e <= MAX_ARRIVAL_ERROR_RAD,
            "target {i}: arrival error {e} rad > {MAX_ARRIVAL_ERROR_RAD} (all: {errors:?})"
        );
    }

    // Every step is the arm model's semi-implicit Euler step from the state before it, driven by
    // the torque hil answered that state with: the plant applies torque k during step k → k + 1
    // (no step of lag) and reports what it computed. trajectory.csv prints floats exactly.
    let arm = &scene["arm"];
    let value = |name: &str| arm[name].as_f64().unwrap_or(f64::NAN);
    let (m, l, a, g) = (
        value("mass_kg"),
        value("length_m"),
        value("thickness_m"),
        value("gravity_m_s2"),
    );
    let inertia = m * (l * l / 3.0 + a * a / 12.0);
    let csv = std::fs::read_to_string(out.join("trajectory.csv")).unwrap_or_default();
    let rows: Vec<[f64; 3]> = csv
        .lines()
        .skip(1)
        .map(|line| {
            let f: Vec<f64> = line
                .split(',')
                .skip(3)
                .take(3)
                .map(|x| x.parse().unwrap_or(f64::NAN))
                .collect();
            [f[0], f[1], f[2]]
        })
        .collect();
    assert_eq!(rows.len() as u64, steps, "one trajectory row per tick");
    let [theta0, omega0, _] = rows[0];
    assert_eq!(
        (theta0, omega0),
        (value("initial_angle_rad"), value("initial_velocity_rad_s"))
    );
    for (k, w) in rows.windows(2).enumerate() {
        let [[theta, omega, tau], [next_theta, next_omega, _]] = [w[0], w[1]];
        let omega_1 = omega + dt * (tau - m * g * 0.5 * l * theta.cos()) / inertia;
        let theta_1 = theta + dt * omega_1;
        assert!(
            (omega_1 - next_omega).abs() <= 1e-9 && (theta_1 - next_theta).abs() <= 1e-9,
            "step {k} → {}: expected ({theta_1}, {omega_1}), the plant sent ({next_theta}, {next_omega})",
            k + 1
        );
    }
}
