//! `hil run scenarios/robot_push_*.toml --urdf PATH` end to end: real floating-base robots from
//! example-robot-data, read unmodified (found, or installed with pip into a cache, by
//! `scripts/example-robot-data.sh`), standing in the robot plant and pushed, `qp_balance` beside
//! `pd_hold`; and what a robot without the scenario's feet gets.

use std::path::Path;

use e2e::{controller, hil_run, out_dir, report, robots_dir, scenario_copy, workspace_root};
use serde_json::Value;

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// Runs the shipped `file` cut to `impulses` on `urdf` (relative to the robots folder); returns
/// the report of a complete run.
fn run(test: &str, file: &str, impulses: &str, urdf: &str, only: Option<&str>) -> Value {
    run_on(test, file, impulses, &robots_dir().join(urdf), only)
}

/// [`run`] on the URDF at `urdf`.
fn run_on(test: &str, file: &str, impulses: &str, urdf: &Path, only: Option<&str>) -> Value {
    let out = out_dir(test);
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let source = std::fs::read_to_string(workspace_root().join("scenarios").join(file)).unwrap();
    let from = source
        .lines()
        .find(|l| l.starts_with("impulses_ns = "))
        .expect("impulses_ns")
        .to_owned();
    let scenario = scenario_copy(&out, file, &source, &[(&from, impulses)]);
    let (scenario, urdf) = (scenario.to_string_lossy(), urdf.to_string_lossy());
    let mut args = vec![scenario.as_ref(), "--urdf", urdf.as_ref()];
    if let Some(only) = only {
        args.extend(["--only", only]);
    }
    let report_dir = out.join("out");
    let run = hil_run(&args, &report_dir);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let r = report(&report_dir);
    assert_eq!(r["complete"], true, "{}", r["incomplete_reason"]);
    assert_eq!(r["kind"], "robot_push");
    r
}

fn push(c: &Value, impulse: f64) -> &Value {
    c["pushes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| num(&p["impulse_ns"]) == impulse)
        .unwrap_or_else(|| panic!("no push of {impulse} N·s in {c}"))
}

/// `qp_balance` stood at `impulse`: its capture point ended inside the feet, every QP tick
/// solved, its chosen forces in their cones, the plant's within its own.
fn stood_solving_every_tick(c: &Value, impulse: f64) {
    let p = push(c, impulse);
    assert_eq!(p["stood"], true, "{p}");
    assert!(num(&p["capture"]["end_margin_m"]) > 0.0, "{p}");
    let qp = &p["qp"];
    assert_eq!(qp["solved"], qp["ticks"], "{qp}");
    assert!(num(&qp["max_friction_use"]) <= 1.0 + 1e-6, "{qp}");
    assert!(num(&p["feet"]["max_friction_use"]) <= 1.0 + 1e-6, "{p}");
    assert_eq!(p["limited_joint_ticks"], 0, "{p}");
}

/// Talos (50 DoF, flat soles under its domed collision soles): `qp_balance` stands unpushed with
/// its feet still (no lift, under 2 mm of creep) and after 30 N·s; the joint PD hold, its gains
/// bounded by the 200 Hz loop's stability, cannot hold it up at all.
#[test]
fn talos_stands_and_takes_a_push_under_qp_balance_only() {
    let r = run(
        "robot_push_talos",
        "robot_push_talos.toml",
        "impulses_ns = [0.0, 30.0]",
        "talos_data/robots/talos_full_v2.urdf",
        None,
    );
    assert_eq!(r["dof"], 50);
    assert_eq!(r["qp_step"], true);
    let qp = controller(&r, "qp_balance");
    stood_solving_every_tick(qp, 0.0);
    stood_solving_every_tick(qp, 30.0);
    let still = &push(qp, 0.0)["feet"];
    assert_eq!(still["lift_events"], 0, "{still}");
    assert!(num(&still["max_drift_m"]) < 2e-3, "{still}");
    assert_eq!(num(&qp["largest_push_survived_ns"]), 30.0);
    let pd = controller(&r, "pd_hold");
    assert_eq!(push(pd, 0.0)["stood"], false, "{pd}");
    assert!(pd["largest_push_survived_ns"].is_null(), "{pd}");
    // The pushes go beyond what flat feet alone can stop.
    assert!(num(&r["ankle_bound_ns"]) > 0.0);
}

/// The project's humanoid (y up, ball joints as revolute coordinates) on the robot plant: turned
/// z up, standing on its feet and toes; `qp_balance` stands unpushed and after 12 N·s at the
/// torso, solving every tick; the joint PD hold, its gains bounded by the 200 Hz loop's
/// stability with the body in the air, cannot hold it up (as Talos).
#[test]
fn the_humanoid_stands_on_the_robot_plant_and_takes_a_push_under_qp_balance() {
    let r = run_on(
        "robot_push_humanoid15",
        "robot_push_humanoid15.toml",
        "impulses_ns = [0.0, 12.0]",
        &workspace_root().join("models/humanoid15.urdf"),
        None,
    );
    assert_eq!(r["dof"], 34);
    assert_eq!(r["feet"].as_array().unwrap().len(), 4);
    // Placed on its soles: their points on the ground, the body upright in the z-up world.
    assert!(num(&r["foot_points_above_ground_m"]).abs() < 1e-3, "{r}");
    let h = num(&r["com_height_m"]);
    assert!(h > 0.9 && h < 1.3, "{h}");
    let qp = controller(&r, "qp_balance");
    stood_solving_every_tick(qp, 0.0);
    stood_solving_every_tick(qp, 12.0);
    assert!(num(&push(qp, 0.0)["feet"]["max_drift_m"]) < 2e-3, "{qp}");
    let pd = controller(&r, "pd_hold");
    assert_eq!(push(pd, 0.0)["stood"], false, "{pd}");
}

/// Solo-12 on its four point feet: both controllers stand unpushed and after 1 N·s sideways,
/// and `qp_balance` solves every tick.
#[test]
fn solo12_stands_on_four_feet_and_takes_a_push() {
    let r = run(
        "robot_push_solo12",
        "robot_push_solo12.toml",
        "impulses_ns = [0.0, 1.0]",
        "solo_description/robots/solo12.urdf",
        None,
    );
    assert_eq!(r["dof"], 18);
    assert_eq!(r["feet"].as_array().unwrap().len(), 4);
    // The recovery step is for two feet: four are said not to take it.
    assert_eq!(r["qp_step"], false);
    let qp = controller(&r, "qp_balance");
    stood_solving_every_tick(qp, 0.0);
    stood_solving_every_tick(qp, 1.0);
    assert_eq!(push(qp, 0.0)["feet"]["lift_events"], 0);
    for p in controller(&r, "pd_hold")["pushes"].as_array().unwrap() {
        assert_eq!(p["stood"], true, "{p}");
    }
}

/// Solo-12 pelted (`[pelt]`): every run is thrown the eight balls; those that touch the robot
/// are counted once each, and every frame of the tumbling base reads back (its orientation a
/// unit quaternion); `pd_hold`'s stiff stance takes them all standing.
#[test]
fn solo12_pelted_counts_the_balls_that_hit() {
    let r = run(
        "robot_pelted_solo12",
        "robot_pelted_solo12.toml",
        "impulses_ns = [0.0]",
        "solo_description/robots/solo12.urdf",
        None,
    );
    assert_eq!(r["faults"]["rejected_frames"], 0, "{}", r["faults"]);
    for name in ["qp_balance", "pd_hold"] {
        let b = &push(controller(&r, name), 0.0)["balls"];
        assert_eq!(b["thrown"], 8, "{name}: {b}");
        let (hit, before) = (num(&b["hit"]), num(&b["hit_before_fall"]));
        assert!((7.0..=8.0).contains(&hit) && before <= hit, "{name}: {b}");
    }
    let pd = push(controller(&r, "pd_hold"), 0.0);
    assert_eq!(pd["stood"], true, "{pd}");
    assert_eq!(pd["balls"]["hit_before_fall"], pd["balls"]["hit"]);
}

/// G1 (29 joints, feet of four balls each): `qp_balance` stands unpushed and after 10 N·s on
/// its feet where they stand, and after 15 N·s (beyond what it stands without a step) by
/// recovery steps, the swing as long in pendulum time as the humanoid's.
#[test]
fn g1_stands_and_takes_a_push_under_qp_balance() {
    let r = run(
        "robot_push_g1",
        "robot_push_g1.toml",
        "impulses_ns = [0.0, 10.0, 15.0]",
        "g1_description/urdf/g1_29dof_rev_1_0.urdf",
        Some("qp_balance"),
    );
    assert_eq!(r["dof"], 35);
    assert_eq!(r["qp_step"], true);
    let qp = controller(&r, "qp_balance");
    stood_solving_every_tick(qp, 0.0);
    stood_solving_every_tick(qp, 10.0);
    stood_solving_every_tick(qp, 15.0);
    for (impulse, stepped) in [(0.0, false), (10.0, false), (15.0, true)] {
        let account = &push(qp, impulse)["qp"];
        assert_eq!(num(&account["steps"]) > 0.0, stepped, "{account}");
    }
}

/// Robots the scenario does not fit, and a missing file, are refused before any plant starts:
/// exit 2 naming the field, nothing written. G1 under Solo-12's scenario has none of its
/// joints; UR5 is welded to the world.
#[test]
fn robots_the_scenario_does_not_fit_are_refused_naming_the_field() {
    let out = out_dir("robot_push_refused");
    let _ = std::fs::remove_dir_all(&out);
    let scenario = workspace_root().join("scenarios/robot_push_solo12.toml");
    let robots = robots_dir();
    let g1 = robots.join("g1_description/urdf/g1_29dof_rev_1_0.urdf");
    let ur5 = robots.join("ur_description/urdf/ur5_robot.urdf");
    for (urdf, needle) in [
        (g1.as_path(), "field `robot.pose_rad.FL_HAA`: "),
        (ur5.as_path(), "field `robot.urdf`: "),
        (Path::new("/nonexistent/robot.urdf"), "field `robot.urdf`: "),
    ] {
        let run = hil_run(
            &[
                scenario.to_string_lossy().as_ref(),
                "--urdf",
                urdf.to_string_lossy().as_ref(),
            ],
            &out,
        );
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(needle), "{needle}: {stderr}");
        assert!(!out.join("report.json").exists());
    }
}
