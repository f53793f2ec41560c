//! Chain scenarios end to end (`kind = "on_the_beat"` and `kind = "kenwright_reach"`): the real
//! `hil` and plant processes, outcomes read from `report.json`, `trajectory.csv`, the console
//! and the exit code. Refused scenario files, a plant that goes silent, SIGINT mid-run.

use std::path::{Path, PathBuf};
use std::process::Output;

use e2e::{
    controller, hil_run, out_dir, report, run_against_fake_plant, scenario_copy, signal_mid_run,
    workspace_root,
};
use serde_json::Value;

const ON_THE_BEAT: &str = include_str!("../scenarios/on_the_beat.toml");
const KENWRIGHT_REACH: &str = include_str!("../scenarios/kenwright_reach.toml");

/// A scenario file in the workspace.
fn scenario(name: &str) -> String {
    workspace_root()
        .join("scenarios")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// `hil run` that must complete: exit 0, `"complete": true`; returns the output and the report.
fn run_complete(args: &[&str], out: &Path) -> (Output, Value) {
    let run = hil_run(args, out);
    assert_eq!(
        run.status.code(),
        Some(0),
        "hil run {args:?}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let r = report(out);
    assert_eq!(r["complete"], true, "{}", r["incomplete_reason"]);
    assert!(r["incomplete_reason"].is_null());
    (run, r)
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn names(report: &Value) -> Vec<String> {
    report["controllers"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| c["name"].as_str().unwrap_or("?").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The files the console says it wrote (`wrote DIR: a, b, c`), each checked to exist; SVGs
/// must hold drawn series.
fn assert_listed_files_exist(run: &Output, out: &Path) -> Vec<String> {
    let stdout = String::from_utf8_lossy(&run.stdout);
    let listed: Vec<String> = stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("wrote {}: ", out.display())))
        .unwrap_or_else(|| panic!("no `wrote` line: {stdout}"))
        .split(", ")
        .map(str::to_owned)
        .collect();
    for f in &listed {
        let path = out.join(f);
        assert!(path.is_file(), "{f} is listed but not written");
        if f.ends_with(".svg") {
            let svg = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                svg.len() > 5_000 && svg.contains("<polyline") && !svg.contains("no samples"),
                "{f} draws nothing ({} bytes)",
                svg.len()
            );
        }
    }
    listed
}

/// No frame was refused on either side, and no plant was lost.
fn assert_no_faults(r: &Value) {
    let f = &r["faults"];
    assert_eq!(f["rejected_frames"], 0, "{f:#}");
    assert_eq!(f["plant_rejected_frames"], 0, "{f:#}");
    assert_eq!(f["plant_over_limit_frames"], 0, "{f:#}");
    assert_eq!(f["watchdog_trips"], 0, "{f:#}");
    assert_eq!(f["plant_lost"], false, "{f:#}");
}

/// on_the_beat in lockstep: every controller judged at every keyframe, `arrival` within 1e-2 rad
/// (measured 1.2e-4), the feed-forward better than the single-link gains, the composite inertia
/// equal to Rapier's M_ii, every listed file written, no frame refused.
#[test]
fn on_the_beat_in_lockstep_reaches_the_outcome() {
    let out = out_dir("chain_on_the_beat");
    let (run, r) = run_complete(&[&scenario("on_the_beat.toml")], &out);
    assert_eq!(r["kind"], "on_the_beat");
    assert_eq!(r["mode"], "lockstep");
    assert_eq!(
        names(&r),
        [
            "single_link",
            "composite",
            "composite_feedforward",
            "arrival"
        ]
    );
    let joints = r["joints"].as_array().map_or(0, Vec::len);
    let keyframes = r["keyframes"].as_array().map_or(0, Vec::len);
    assert_eq!((joints, keyframes), (3, 6));
    for c in r["controllers"].as_array().into_iter().flatten() {
        let name = &c["name"];
        assert_eq!(c["targets"], 6, "{name}");
        let errors = c["arrival_error_rad"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(errors.len(), keyframes, "{name}: {errors:?}");
        for (k, e) in errors.iter().enumerate() {
            let e: Vec<f64> = e
                .as_array()
                .map(|a| a.iter().map(num).collect())
                .unwrap_or_default();
            assert_eq!(e.len(), joints, "{name} keyframe {k}: {e:?}");
            assert!(
                e.iter().all(|x| x.is_finite() && *x >= 0.0),
                "{name} keyframe {k}: {e:?}"
            );
        }
    }
    let max = |name| num(&controller(&r, name)["max_arrival_error_rad"]);
    assert!(max("arrival") <= 1e-2, "arrival: {} rad", max("arrival"));
    assert!(
        max("composite_feedforward") < max("single_link"),
        "feed-forward {} rad, single link {} rad",
        max("composite_feedforward"),
        max("single_link")
    );
    let inertia = &r["inertia_check"];
    assert_eq!(inertia["controller"], "arrival");
    assert!(inertia["samples"].as_u64().unwrap_or(0) > 0, "{inertia:#}");
    assert!(num(&inertia["max_rel_diff"]) < 1e-5, "{inertia:#}");
    assert_no_faults(&r);
    let listed = assert_listed_files_exist(&run, &out);
    assert_eq!(
        listed,
        [
            "report.json",
            "trajectory.csv",
            "angles.svg",
            "arrival.svg",
            "inertia.svg",
            "latency.svg",
            "scene.json",
            "replay.html"
        ]
    );
}

/// Two lockstep runs of on_the_beat write byte-identical trajectories.
#[test]
fn on_the_beat_lockstep_runs_are_byte_identical() {
    let (a, b) = (out_dir("chain_replay_a"), out_dir("chain_replay_b"));
    let file = scenario("on_the_beat.toml");
    run_complete(&[&file], &a);
    run_complete(&[&file], &b);
    let read = |d: &Path| std::fs::read(d.join("trajectory.csv")).unwrap_or_default();
    let (ta, tb) = (read(&a), read(&b));
    assert!(ta.len() > 100_000, "trajectory has {} bytes", ta.len());
    assert!(ta == tb, "trajectory.csv differs between two lockstep runs");
}

/// kenwright_reach in lockstep: the dynamically consistent projector holds the hand within 1 cm
/// of every settled target, and the null-space posture torque does not change how hard the hand
/// presses on the wall: the mean normal force of both projectors within 5 % of Jᵀ F alone
/// (measured 14.8 and 14.7 vs 14.9 N).
#[test]
fn kenwright_reach_in_lockstep_reaches_the_outcome() {
    let out = out_dir("chain_kenwright_reach");
    let (run, r) = run_complete(&[&scenario("kenwright_reach.toml")], &out);
    assert_eq!(r["kind"], "kenwright_reach");
    assert_eq!(
        names(&r),
        [
            "jt_nullspace",
            "jt_nullspace_dynamic",
            "ccd_ik",
            "jt_no_posture"
        ]
    );
    let dynamic = controller(&r, "jt_nullspace_dynamic");
    let hand = num(&dynamic["max_hand_error_m"]);
    assert!(hand <= 0.01, "jt_nullspace_dynamic: hand error {hand} m");
    let normal = |name| {
        let wall = &controller(&r, name)["wall_force_n"];
        assert!(wall.is_object(), "{name}: no wall force: {wall}");
        num(&wall["mean_vector_n"][0])
    };
    let reference = normal("jt_no_posture");
    // The wall's face is x = 0.62 m: it pushes the hand towards −x.
    assert!(reference < -1.0, "jt_no_posture presses with {reference} N");
    for name in ["jt_nullspace", "jt_nullspace_dynamic"] {
        let f = normal(name);
        assert!(
            (f / reference - 1.0).abs() <= 0.05,
            "{name}: mean normal force {f} N vs {reference} N without the posture torque"
        );
    }
    assert_no_faults(&r);
    let listed = assert_listed_files_exist(&run, &out);
    assert!(listed.iter().any(|f| f == "hand.svg"), "{listed:?}");
}

/// Real time, one controller on a shortened on_the_beat (two keyframes, 1.2 s): the run
/// completes and records a wake-up latency per tick (recorded, never asserted).
#[test]
fn on_the_beat_in_real_time_completes() {
    let out = out_dir("chain_realtime");
    // Keep the first two keyframes (0.5 s and 1.0 s): the rest lie beyond the shortened end.
    let third = ON_THE_BEAT
        .match_indices("[[keyframes]]")
        .nth(2)
        .map_or(0, |(i, _)| i);
    let controllers = ON_THE_BEAT.find("[controllers]").unwrap_or(0);
    assert!(third > 0 && controllers > third, "on_the_beat.toml layout");
    let short = format!(
        "{}{}",
        ON_THE_BEAT.get(..third).unwrap_or_default(),
        ON_THE_BEAT.get(controllers..).unwrap_or_default()
    );
    let file = scenario_copy(
        out.parent().unwrap_or(&out),
        "chain_realtime.toml",
        &short,
        &[("end_s = 3.5", "end_s = 1.2")],
    );
    let (_, r) = run_complete(
        &[
            file.to_str().unwrap_or_default(),
            "--mode",
            "realtime",
            "--only",
            "arrival",
        ],
        &out,
    );
    assert_eq!(r["mode"], "realtime");
    assert_eq!(names(&r), ["arrival"]);
    assert_eq!(
        controller(&r, "arrival")["arrival_error_rad"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    let latency = &r["timing"]["wake_latency_us"];
    assert!(latency["count"].as_u64().unwrap_or(0) > 0, "{latency:#}");
    assert_eq!(r["faults"]["plant_lost"], false);
}

/// A scenario copy `hil` must refuse: one edit, and the field and reason its message must name.
struct Refusal {
    file: &'static str,
    source: &'static str,
    edit: (&'static str, &'static str),
    field: &'static str,
    reason: &'static str,
}

/// Scenario files that cannot be run are refused with exit status 2 and a message naming the
/// file and the field, before any output folder exists.
#[test]
fn broken_chain_scenarios_name_the_file_and_the_field() {
    let dir = out_dir("chain_refusals");
    let beat_pose = "positions_rad = [-0.6, 1.2, 0.4]";
    let cases = [
        Refusal {
            file: "short_keyframe.toml",
            source: ON_THE_BEAT,
            edit: (beat_pose, "positions_rad = [-0.6, 1.2]"),
            field: "keyframes[0].positions_rad",
            reason: "2 values",
        },
        Refusal {
            file: "missing_urdf.toml",
            source: ON_THE_BEAT,
            edit: (
                "urdf = \"../models/arm3.urdf\"",
                "urdf = \"no_such_arm.urdf\"",
            ),
            field: "model.urdf",
            // Resolved against the scenario's folder.
            reason: "chain_refusals/no_such_arm.urdf",
        },
        Refusal {
            file: "hand_not_a_link.toml",
            source: KENWRIGHT_REACH,
            edit: ("link = \"hand\"", "link = \"paw\""),
            field: "hand.link",
            reason: "paw",
        },
        Refusal {
            file: "nan_keyframe.toml",
            source: ON_THE_BEAT,
            edit: (beat_pose, "positions_rad = [-0.6, nan, 0.4]"),
            field: "keyframes[0].positions_rad[1]",
            reason: "NaN",
        },
        Refusal {
            file: "zero_margin.toml",
            source: ON_THE_BEAT,
            edit: ("stability_margin = 0.8", "stability_margin = 0"),
            field: "controllers.stability_margin",
            reason: "got 0",
        },
    ];
    for case in cases {
        let name = case.file;
        let file = scenario_copy(&dir, name, case.source, &[case.edit]);
        let out = dir.join(format!("{name}.out"));
        let run = hil_run(&[file.to_str().unwrap_or_default()], &out);
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{name}: {err}");
        assert!(
            err.contains(file.to_str().unwrap_or("?")),
            "{name}: names the file: {err}"
        );
        assert!(
            err.contains(&format!("field `{}`", case.field)),
            "{name}: names {}: {err}",
            case.field
        );
        assert!(
            err.contains(case.reason),
            "{name}: says why ({}): {err}",
            case.reason
        );
        assert!(!out.exists(), "{name}: an output folder was made");
    }
}

/// `--only` naming a controller the chain scenario does not have is a command-line error: exit
/// status 2, naming the option and the scenario's controllers, no output folder.
#[test]
fn an_unknown_controller_is_a_command_line_error() {
    let out = out_dir("chain_unknown_controller");
    let _ = std::fs::remove_dir_all(&out);
    let run = hil_run(
        &[&scenario("on_the_beat.toml"), "--only", "fixed-gain"],
        &out,
    );
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("--only fixed-gain") && err.contains("arrival"),
        "{err}"
    );
    assert!(!out.exists(), "an output folder was made");
    assert_eq!(run.status.code(), Some(2), "{err}");
}

/// on_the_beat against the fake plant (three joints, lockstep) that goes silent after `silent`
/// steps: returns hil's output, the output folder and the plant's torque log.
fn run_with_silent_plant(test: &str, joints: usize, silent: u64) -> (Output, PathBuf, String) {
    let out = out_dir(test);
    let (output, log) = run_against_fake_plant(
        &format!("silent-after:{silent}"),
        Some(joints),
        &[&scenario("on_the_beat.toml")],
        &out,
    );
    (output, out, log)
}

/// A plant that goes silent after step 100: the watchdog ends the run in the first controller,
/// exit status 1, a partial report that says the plant was lost, and the safe state for the last
/// step reached the plant (read from the plant's own log).
#[test]
fn a_silent_plant_ends_a_chain_run_in_the_safe_state() {
    let (output, out, log) = run_with_silent_plant("chain_silent", 3, 100);
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.contains("plant lost"), "{err}");
    let r = report(&out);
    assert_eq!(r["complete"], false);
    assert_eq!(names(&r), ["single_link"]);
    let faults = &r["faults"];
    assert_eq!(faults["plant_lost"], true, "{faults:#}");
    let safe = &faults["safe_state"];
    assert!(safe.is_object(), "{faults:#}");
    assert_eq!(safe["sent_at_step"], 100, "{safe:#}");
    let seq = safe["torque_frame_sequence"].as_u64().unwrap_or(0);
    let line = log
        .lines()
        .find(|l| l.split(' ').nth(2) == Some("safe"))
        .unwrap_or_else(|| panic!("no safe-state frame reached the plant:\n{log}"));
    assert!(line.starts_with(&format!("{seq} 100 safe ")), "{line}");
    // Steps 0..=100 were each answered once, with one torque per joint.
    let normal: Vec<&str> = log.lines().filter(|l| l.contains(" normal ")).collect();
    assert_eq!(normal.len(), 101, "{log}");
    for l in normal {
        let torques = l.split(' ').nth(3).unwrap_or_default();
        assert_eq!(torques.split(',').count(), 3, "{l}");
    }
}

/// A plant whose states carry one joint for the scenario's three-joint chain must not be driven
/// as if the two missing joints stood at 0 rad: hil refuses those states (no control torque
/// reaches the plant) and says the joint counts differ.
#[test]
fn a_plant_with_fewer_joints_than_the_chain_is_refused() {
    let (output, _, log) = run_with_silent_plant("chain_one_joint", 1, 100);
    let err = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{err}");
    let normal = log.lines().filter(|l| l.contains(" normal ")).count();
    assert_eq!(normal, 0, "control torques reached a 1-joint plant:\n{log}");
    assert!(err.contains("joint"), "{err}");
}

/// SIGINT mid-run on kenwright_reach (300 s of simulated time): exit status 130, a partial
/// report that says why, the safe state applied by the real plant.
#[test]
fn sigint_mid_chain_run_writes_a_partial_report() {
    let out = out_dir("chain_sigint");
    let file = scenario_copy(
        out.parent().unwrap_or(&out),
        "chain_sigint.toml",
        KENWRIGHT_REACH,
        &[("end_s = 6.5", "end_s = 300.0")],
    );
    let (output, _) = signal_mid_run(
        &[file.to_str().unwrap_or_default()],
        &out,
        libc::SIGINT,
        true,
    );
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{err}");
    let r = report(&out);
    assert_eq!(r["complete"], false);
    assert!(
        r["incomplete_reason"]
            .as_str()
            .unwrap_or("")
            .contains("SIGINT"),
        "{:#}",
        r["incomplete_reason"]
    );
    assert!(!names(&r).is_empty());
    assert_eq!(r["faults"]["plant_lost"], false, "{:#}", r["faults"]);
    assert_eq!(
        r["faults"]["safe_state"]["applied_by_plant"], true,
        "{:#}",
        r["faults"]
    );
}
