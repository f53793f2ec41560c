//! End to end: the firmware profile (issue 11). The default ball-blocking scene driven by the
//! analytic servo in f64, in f32 (the compact f32 Lambert W), and with its torque law in fixed point
//! (gains re-solved in f32 every second tick), each against its own plant process: every variant
//! blocks every ball and arrives within 1e-2 rad, with and without the falling weights.

use std::path::Path;

use e2e::{controller, hil_run, out_dir, report, workspace_root};
use serde_json::Value;

const VARIANTS: [&str; 3] = ["analytic", "analytic_f32", "analytic_fixed"];

fn run(file: &str, out: &Path) -> Value {
    let scenario = workspace_root().join("scenarios").join(file);
    let run = hil_run(&[scenario.to_str().unwrap_or_default()], out);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{file}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let r = report(out);
    assert_eq!(r["complete"], true, "{}", r["incomplete_reason"]);
    r
}

/// Each variant, in the scenario's order: 4/4 blocked, every arrival error known and the worst
/// within 1e-2 rad; returns the worst errors.
fn check(r: &Value) -> Vec<f64> {
    let names: Vec<&str> = r["controllers"]
        .as_array()
        .map(|cs| cs.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, VARIANTS);
    VARIANTS
        .iter()
        .map(|name| {
            let c = controller(r, name);
            assert_eq!(c["blocked"], 4, "{name}: {c:#}");
            let max = c["max_arrival_error_rad"].as_f64().unwrap_or(f64::NAN);
            assert!(max <= 1e-2, "{name}: max arrival error {max} rad");
            let saturated = c["status_counts"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|s| s[0] == "saturated");
            assert!(!saturated, "{name}: the fixed-point law saturated: {c:#}");
            max
        })
        .collect()
}

#[test]
fn every_variant_blocks_every_ball_with_the_weights() {
    let r = run("ball_blocking_firmware.toml", &out_dir("firmware_weights"));
    assert_eq!(r["weights"], true);
    let max = check(&r);
    // f32 follows f64 closely on this job.
    assert!((max[1] - max[0]).abs() <= 1e-3, "{max:?}");
}

#[test]
fn every_variant_blocks_every_ball_without_the_weights() {
    let r = run(
        "ball_blocking_firmware_no_weights.toml",
        &out_dir("firmware_no_weights"),
    );
    assert_eq!(r["weights"], false);
    check(&r);
}

/// An arm whose stable gains do not fit the fixed-point formats: the scenario is refused before
/// any plant starts (exit 2, the controller and the reason named, no output folder).
#[test]
fn an_arm_beyond_the_fixed_point_formats_is_refused_up_front() {
    let dir = out_dir("firmware_heavy_arm");
    let out = dir.join("out");
    let source = std::fs::read_to_string(
        workspace_root()
            .join("scenarios")
            .join("ball_blocking_firmware.toml"),
    )
    .unwrap_or_default();
    let from = "[arm]\nlength_m = 1.0\nthickness_m = 0.06\nmass_kg = 2.0";
    assert!(source.contains(from), "the scenario's [arm] table changed");
    let file = dir.join("heavy_arm.toml");
    std::fs::write(
        &file,
        source.replacen(from, &from.replace("2.0", "100.0"), 1),
    )
    .unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
    let run = hil_run(&[file.to_str().unwrap_or_default()], &out);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(
        err.contains("analytic_fixed") && err.contains("fixed-point"),
        "{err}"
    );
    assert!(!out.exists(), "an output folder was left");
}
