//! `hil run scenarios/pose_tour.toml [--urdf PATH]` end to end: the real `hil` and robot plant
//! processes on the default arm and on real robot descriptions from example-robot-data, read
//! unmodified (found, or installed with pip into a cache, by `scripts/example-robot-data.sh`);
//! and what a bad `--urdf` gets.

use std::path::Path;
use std::process::Command;

use e2e::{controller, hil_run, out_dir, report, robots_dir, workspace_root};
use serde_json::Value;

fn scenario() -> String {
    workspace_root()
        .join("scenarios/pose_tour.toml")
        .to_string_lossy()
        .into_owned()
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// A complete tour: exit 0, the three controllers in order, `arrival` through every keyframe
/// within 1e-2 rad and none unreachable; returns the report.
fn tour(urdf: Option<&Path>, out: &Path) -> Value {
    tour_up(urdf, None, out)
}

/// [`tour`] with `--up-axis` when `up` is given.
fn tour_up(urdf: Option<&Path>, up: Option<&str>, out: &Path) -> Value {
    let scenario = scenario();
    let mut args = vec![scenario.as_str()];
    let urdf = urdf.map(|p| p.to_string_lossy().into_owned());
    if let Some(u) = &urdf {
        args.extend(["--urdf", u.as_str()]);
    }
    if let Some(up) = up {
        args.extend(["--up-axis", up]);
    }
    let run = hil_run(&args, out);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let r = report(out);
    assert_eq!(r["complete"], true, "{}", r["incomplete_reason"]);
    assert_eq!(r["kind"], "pose_tour");
    let names: Vec<&str> = r["controllers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["arrival", "single_link", "composite"]);
    let keyframes = r["keyframes"].as_array().unwrap().len();
    assert_eq!(keyframes, 8);
    assert!(
        r.get("unreachable_keyframes").is_none(),
        "{}",
        r["unreachable_keyframes"]
    );
    let arrival = controller(&r, "arrival");
    assert!(num(&arrival["max_arrival_error_rad"]) < 1e-2, "{arrival}");
    assert_eq!(arrival["keyframes_within_1e_2_rad"], 8);
    assert_eq!(arrival["model_error_ticks"], 0);
    assert_eq!(arrival["torque_limited_joint_ticks"], 0);
    // The beat controllers' gains are set by the segment, not the time left: they do not
    // arrive on time (the comparison the tour is for).
    for name in ["single_link", "composite"] {
        assert!(num(&controller(&r, name)["max_arrival_error_rad"]) > 1e-2);
    }
    // The model's composite inertias agree with the plant's mass matrix along the motion.
    let check = &r["inertia_check"];
    assert!(num(&check["samples"]) > 100.0, "{check}");
    r
}

#[test]
fn the_default_arm_tours_its_keyframes() {
    let r = tour(None, &out_dir("pose_tour_arm3"));
    assert_eq!(r["joints"].as_array().unwrap().len(), 3);
    // Both sides load arm3.urdf: Rapier's f32 mass matrix within 1e-5 of the f64 tree's.
    assert!(
        num(&r["inertia_check"]["max_rel_diff"]) < 1e-5,
        "{}",
        r["inertia_check"]
    );
}

#[test]
fn real_arms_load_unmodified_and_arrival_reaches_every_keyframe() {
    let robots = robots_dir();
    // The Panda: 7 arm joints and 2 prismatic fingers, the second a <mimic> of the first,
    // collision meshes (STL) loaded as convex hulls.
    let panda = tour(
        Some(&robots.join("panda_description/urdf/panda.urdf")),
        &out_dir("pose_tour_panda"),
    );
    assert_eq!(panda["joints"].as_array().unwrap().len(), 9);
    let notes = panda["notes"].to_string();
    assert!(
        notes.contains("panda_finger_joint2") && notes.contains("independent"),
        "{notes}"
    );
    // UR5: fixed joints (base_link-base_fixed_joint, ee_fixed_joint, …) merged.
    let ur5 = tour(
        Some(&robots.join("ur_description/urdf/ur5_robot.urdf")),
        &out_dir("pose_tour_ur5"),
    );
    assert_eq!(ur5["joints"].as_array().unwrap().len(), 6);
    assert!(
        num(&ur5["inertia_check"]["max_rel_diff"]) < 1e-4,
        "{}",
        ur5["inertia_check"]
    );
}

#[test]
fn joint_losses_are_compensated_and_massless_links_load() {
    let robots = robots_dir();
    // xArm7: every joint damped (2 – 10 N·m·s/rad) and with 1 N·m of dry friction, which the
    // plant applies and every controller compensates; uncompensated, `arrival` reaches 0/8.
    let xarm = tour(
        Some(&robots.join("xarm_description/urdf/xarm7.urdf")),
        &out_dir("pose_tour_xarm7"),
    );
    assert_eq!(xarm["joints"].as_array().unwrap().len(), 7);
    // human.urdf: hips, spine, shoulders and wrists are revolute joints chained through links
    // without <inertial>: massless bodies in the model and in Rapier's multibody, noted.
    let human = tour(
        Some(&robots.join("human_description/robots/human.urdf")),
        &out_dir("pose_tour_human"),
    );
    assert_eq!(human["joints"].as_array().unwrap().len(), 36);
    let notes = human["notes"].to_string();
    assert!(
        notes.contains("massless moving bodies") && notes.contains("left_upperleg_virtual"),
        "{notes}"
    );
    assert!(
        num(&human["inertia_check"]["max_rel_diff"]) < 1e-4,
        "{}",
        human["inertia_check"]
    );
    // The single-link law's gains come from the joint's own body, which a massless link does
    // not have: every tick a model error, counted, the safe state in its place.
    let single = controller(&human, "single_link");
    assert_eq!(single["model_error_ticks"], single["ticks"], "{single}");
    assert_eq!(controller(&human, "composite")["model_error_ticks"], 0);
}

#[test]
fn the_humanoid_s_ball_joints_tour_as_revolute_coordinates() {
    // models/humanoid15.urdf (y up): six ball joints as three revolute coordinates each, the
    // ankles as two, through massless links, noted; the arm's composite inertias against
    // Rapier's mass matrix along the tour.
    let urdf = workspace_root().join("models/humanoid15.urdf");
    let r = tour_up(Some(&urdf), Some("y"), &out_dir("pose_tour_humanoid15"));
    let joints: Vec<&str> = r["joints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j.as_str().unwrap())
        .collect();
    assert_eq!(joints.len(), 28);
    assert!(joints.contains(&"left_hip_x") && joints.contains(&"left_ankle_z"));
    assert!(joints.contains(&"left_knee") && !joints.contains(&"left_hip"));
    let notes = r["notes"].to_string();
    assert!(
        notes.contains(r#"joint \"left_hip\" (spherical, 3 free axes)"#)
            && notes.contains(r#"joint \"left_ankle\" (spherical, 2 free axes)"#),
        "{notes}"
    );
    assert!(
        num(&r["inertia_check"]["max_rel_diff"]) < 1e-4,
        "{}",
        r["inertia_check"]
    );
}

/// A bad `--urdf`: exit 2, the file and the reason named, nothing written.
fn refused(urdf: &Path, needle: &str) {
    let out = out_dir(&format!(
        "pose_tour_refused_{}",
        urdf.file_name().unwrap().to_string_lossy()
    ));
    let scenario = scenario();
    let urdf_s = urdf.to_string_lossy().into_owned();
    let run = hil_run(&[&scenario, "--urdf", &urdf_s], &out);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{urdf_s}: {stderr}");
    assert!(stderr.contains(needle), "{urdf_s}: {stderr}");
    assert!(
        !out.join("report.json").exists(),
        "{} was written",
        out.display()
    );
}

#[test]
fn a_bad_urdf_is_refused_naming_the_file_and_the_reason() {
    let dir = out_dir("pose_tour_bad_inputs");
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let link = |name: &str, mass: &str| {
        format!(
            r#"<link name="{name}"><inertial><mass value="{mass}"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>"#
        )
    };
    let robot = |joint: &str, mass: &str| {
        format!(
            r#"<robot name="r">{}{}<joint name="j" type="revolute"><parent link="base"/><child link="l"/>{joint}<limit lower="-1" upper="1" effort="10" velocity="1"/></joint></robot>"#,
            link("base", "1"),
            link("l", mass)
        )
    };
    refused(
        &write("malformed.urdf", "<robot name=\"r\"><link"),
        "malformed.urdf",
    );
    refused(
        &write("zero_mass.urdf", &robot(r#"<axis xyz="0 0 1"/>"#, "0")),
        "mass",
    );
    refused(
        &write("nan_mass.urdf", &robot(r#"<axis xyz="0 0 1"/>"#, "nan")),
        "nan_mass.urdf",
    );
    refused(
        &write("zero_axis.urdf", &robot(r#"<axis xyz="0 0 0"/>"#, "1")),
        "axis",
    );
    refused(
        &write(
            "limits.urdf",
            &robot(r#"<axis xyz="0 0 1"/>"#, "1")
                .replace(r#"lower="-1" upper="1""#, r#"lower="1" upper="-1""#),
        ),
        "limits.urdf",
    );
    let fifo = dir.join("fifo.urdf");
    let _ = std::fs::remove_file(&fifo);
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    refused(&fifo, "fifo.urdf");
    refused(Path::new("/dev/zero"), "/dev/zero");
    refused(&dir.join("missing.urdf"), "missing.urdf");
}

#[test]
fn urdf_is_refused_for_scenarios_that_have_no_chain_robot() {
    let root = workspace_root();
    let dynamo = root.join("scenarios/dynamo_push.toml");
    let arm = root.join("models/arm3.urdf");
    let out = out_dir("pose_tour_urdf_on_dynamo");
    let run = hil_run(
        &[&dynamo.to_string_lossy(), "--urdf", &arm.to_string_lossy()],
        &out,
    );
    assert_eq!(run.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&run.stderr).contains("--urdf"));
    assert!(!out.join("report.json").exists());
}
