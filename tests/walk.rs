//! SIMBICON walk scenarios end to end (`kind = "simbicon_walk"`): the real `hil` and `sim-host`
//! biped processes over floating-base frames, outcomes read from `report.json`, the animation
//! files, the console and the exit code. The shipped 300 Hz and 200 Hz scenarios (20 s, without
//! their animations to keep the suite short), a real-time run, the animation, refused scenario
//! files, a plant that is not a biped, SIGINT mid-walk.

use std::path::{Path, PathBuf};
use std::process::Output;

use e2e::{
    controller, hil, hil_run, out_dir, report, run_against_fake_plant, signal_mid_run,
    workspace_root,
};
use serde_json::Value;

const WALK_300: &str = include_str!("../scenarios/simbicon_walk.toml");
const WALK_200: &str = include_str!("../scenarios/simbicon_walk_200hz.toml");

/// Write `source` with `edits` applied (each must change something) to `dir/name`.
fn scenario_copy(dir: &Path, name: &str, source: &str, edits: &[(&str, &str)]) -> PathBuf {
    let mut text = source.to_owned();
    for (from, to) in edits {
        assert!(text.contains(from), "{name}: `{from}` not in the scenario");
        text = text.replacen(from, to, 1);
    }
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
    file
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// `hil run` that must complete: exit 0, `"complete": true`, no faults; returns the report.
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
    let faults = &r["faults"];
    assert_eq!(faults["rejected_frames"], 0, "{faults:#}");
    assert_eq!(faults["plant_rejected_frames"], 0, "{faults:#}");
    assert_eq!(faults["plant_lost"], false, "{faults:#}");
    (run, r)
}

/// The scenario `source` without its animations, in `out`'s parent folder.
fn no_animation(out: &Path, name: &str, source: &str, edits: &[(&str, &str)]) -> PathBuf {
    let mut all = vec![("animation = true", "animation = false")];
    all.extend_from_slice(edits);
    scenario_copy(out.parent().unwrap_or(out), name, source, &all)
}

/// The figure at 300 Hz: `simbicon_analytic` walks the 20 s without falling at
/// ≥ 0.4 m/s (taking steps), while SIMBICON's fixed gains fall at 300 Hz. Lockstep.
#[test]
fn simbicon_walk_at_300_hz() {
    let out = out_dir("walk_300");
    let file = no_animation(&out, "walk_300.toml", WALK_300, &[]);
    let (_, r) = run_complete(&[file.to_str().unwrap_or_default()], &out);
    assert_eq!(r["kind"], "simbicon_walk");
    assert_eq!(num(&r["control_rate_hz"]), 300.0);
    let a = controller(&r, "simbicon_analytic");
    assert_eq!(a["fell"], false, "{a:#}");
    assert!(a["fell_at_s"].is_null(), "{a:#}");
    assert!(num(&a["mean_speed_mps"]) >= 0.4, "{a:#}");
    assert!(num(&a["distance_m"]) >= 8.0, "{a:#}");
    assert!(a["steps"].as_u64().unwrap_or(0) >= 20, "{a:#}");
    assert_eq!(num(&a["time_walked_s"]), 20.0, "{a:#}");
    assert_eq!(a["refused_ticks"], 0, "{a:#}");
    let s = controller(&r, "simbicon");
    assert_eq!(s["fell"], true, "{s:#}");
    assert!(num(&s["fell_at_s"]) < 20.0, "{s:#}");
    // The analytic gains: SIMBICON's pair kept where stable, the feet's moved inside.
    let gains = a["gains"].as_array().cloned().unwrap_or_default();
    assert_eq!(gains.len(), 6);
    assert!(gains.iter().any(|g| g["clamped"] == true), "{gains:?}");
    assert!(gains.iter().any(|g| g["clamped"] == false), "{gains:?}");
}

/// At 200 Hz too, with the same rule and no per-rate tuning.
#[test]
fn simbicon_analytic_walks_at_200_hz() {
    let out = out_dir("walk_200");
    let file = no_animation(
        &out,
        "walk_200.toml",
        WALK_200,
        &[(
            "controllers = [\"simbicon\", \"simbicon_analytic\"]",
            "controllers = [\"simbicon_analytic\"]",
        )],
    );
    let (_, r) = run_complete(&[file.to_str().unwrap_or_default()], &out);
    assert_eq!(num(&r["control_rate_hz"]), 200.0);
    let a = controller(&r, "simbicon_analytic");
    assert_eq!(a["fell"], false, "{a:#}");
    assert!(num(&a["mean_speed_mps"]) >= 0.4, "{a:#}");
}

/// The same walk in real time (3 s, the plant paced by the wall clock, the controller on its
/// periodic thread): it completes, with the real-time figures in the report, and the analytic
/// walker covers more than a metre (whether it keeps walking under a loaded machine's stale
/// torques is a measured figure, not asserted here: docs/RESULTS.md, "SIMBICON walking").
#[test]
fn simbicon_walk_in_real_time() {
    let out = out_dir("walk_realtime");
    let file = no_animation(
        &out,
        "walk_realtime.toml",
        WALK_300,
        &[
            ("duration_s = 20.0", "duration_s = 3.0"),
            (
                "controllers = [\"simbicon\", \"simbicon_analytic\"]",
                "controllers = [\"simbicon_analytic\"]",
            ),
        ],
    );
    let (_, r) = run_complete(
        &[file.to_str().unwrap_or_default(), "--mode", "realtime"],
        &out,
    );
    assert_eq!(r["mode"], "realtime");
    let a = controller(&r, "simbicon_analytic");
    assert!(num(&a["distance_m"]) > 1.0, "{a:#}");
    let timing = &r["timing"];
    assert!(timing["deadline_misses"].is_u64(), "{timing:#}");
    assert!(timing["stale_torque_steps"].is_u64(), "{timing:#}");
    assert!(timing["wake_latency_us"]["p50"].is_f64(), "{timing:#}");
}

/// Each run writes its animated side view, listed on the console; the walk's other files too.
#[test]
fn each_run_writes_its_animation() {
    let out = out_dir("walk_gif");
    let file = scenario_copy(
        out.parent().unwrap_or(&out),
        "walk_gif.toml",
        WALK_300,
        &[("duration_s = 20.0", "duration_s = 2.0")],
    );
    let (run, _) = run_complete(&[file.to_str().unwrap_or_default()], &out);
    let console = String::from_utf8_lossy(&run.stdout);
    for f in [
        "report.json",
        "trajectory.csv",
        "speed.svg",
        "latency.svg",
        "scene.json",
        "walk_simbicon.gif",
        "walk_simbicon_analytic.gif",
    ] {
        assert!(console.contains(f), "{f} not listed:\n{console}");
        let bytes = std::fs::read(out.join(f)).unwrap_or_default();
        assert!(!bytes.is_empty(), "{f} missing or empty");
        if f.ends_with(".gif") {
            assert_eq!(&bytes[..6], b"GIF89a", "{f}");
        }
    }
    let scene = std::fs::read_to_string(out.join("scene.json")).unwrap_or_default();
    assert!(scene.contains("\"kind\": \"biped\""), "{scene}");
}

/// A push: the report carries it and its impulse; a 2000 N push for 0.2 s (400 N·s) topples
/// the analytic walker, which the report says with the fall's time after the push began.
#[test]
fn a_hard_push_topples_the_walker_and_is_reported() {
    let out = out_dir("walk_push");
    let file = no_animation(
        &out,
        "walk_push.toml",
        WALK_300,
        &[
            ("duration_s = 20.0", "duration_s = 6.0"),
            (
                "controllers = [\"simbicon\", \"simbicon_analytic\"]",
                "controllers = [\"simbicon_analytic\"]",
            ),
            (
                "# [[pushes]]\n# force_n = [350.0, 0.0]\n# start_s = 5.0\n# duration_s = 0.2",
                "[[pushes]]\nforce_n = [2000.0, 0.0]\nstart_s = 3.0\nduration_s = 0.2",
            ),
        ],
    );
    let (_, r) = run_complete(&[file.to_str().unwrap_or_default()], &out);
    assert!((num(&r["push_impulse_ns"]) - 400.0).abs() < 1e-9, "{r:#}");
    let a = controller(&r, "simbicon_analytic");
    assert_eq!(a["fell"], true, "{a:#}");
    assert!(num(&a["fell_at_s"]) > 3.0, "{a:#}");
}

/// Broken walk scenarios are refused before any plant starts: exit 2, the file and the field.
#[test]
fn broken_walk_scenarios_name_the_file_and_the_field() {
    let out = out_dir("walk_broken");
    let dir = out.parent().unwrap_or(&out).to_path_buf();
    for (name, edits, field) in [
        (
            "rate",
            vec![("control_rate_hz = 300.0", "control_rate_hz = 1e9")],
            "control_rate_hz",
        ),
        (
            "controller",
            vec![(
                "controllers = [\"simbicon\", \"simbicon_analytic\"]",
                "controllers = [\"simbicon\", \"zmp\"]",
            )],
            "controllers[1]",
        ),
        (
            "push",
            vec![(
                "# [[pushes]]\n# force_n = [350.0, 0.0]\n# start_s = 5.0\n# duration_s = 0.2",
                "[[pushes]]\nforce_n = [350.0, nan]\nstart_s = 5.0\nduration_s = 0.2",
            )],
            "pushes[0].force_n[1]",
        ),
        (
            "start",
            vec![("start = \"jsimbicon\"", "start = \"run\"")],
            "start",
        ),
    ] {
        let file = scenario_copy(&dir, &format!("walk_broken_{name}.toml"), WALK_300, &edits);
        let run = hil_run(&[file.to_str().unwrap_or_default()], &out);
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{name}: {err}");
        assert!(
            err.contains(&format!("walk_broken_{name}.toml")),
            "{name}: {err}"
        );
        assert!(err.contains(field), "{name}: {err}");
        assert!(!out.join("report.json").exists(), "{name}");
    }
    let run = hil_run(
        &[
            workspace_root()
                .join("scenarios/simbicon_walk.toml")
                .to_str()
                .unwrap_or_default(),
            "--only",
            "zmp",
        ],
        &out,
    );
    assert_eq!(run.status.code(), Some(2));
}

/// A plant that is not a biped (the fake plant's three-joint states, no bodies) is refused: no
/// walking torque reaches it, the run ends as a lost plant naming the shape.
#[test]
fn a_plant_that_is_not_a_biped_is_refused() {
    let out = out_dir("walk_not_biped");
    let scenario = workspace_root().join("scenarios/simbicon_walk.toml");
    let (output, log) = run_against_fake_plant(
        "silent-after:100",
        Some(3),
        &[scenario.to_str().unwrap_or_default()],
        &out,
    );
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.contains("not the SIMBICON biped"), "{err}");
    assert_eq!(
        log.lines().filter(|l| l.contains(" normal ")).count(),
        0,
        "walking torques reached a plant that is not a biped:\n{log}"
    );
    let r = report(&out);
    assert_eq!(r["complete"], false);
    assert_eq!(r["faults"]["plant_lost"], true);
}

/// SIGINT mid-walk (a 300 s walk): exit 130, a partial report saying why, the safe state
/// (damping only) applied by the real plant.
#[test]
fn sigint_mid_walk_writes_a_partial_report() {
    let out = out_dir("walk_sigint");
    let file = no_animation(
        &out,
        "walk_sigint.toml",
        WALK_300,
        &[("duration_s = 20.0", "duration_s = 300.0")],
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
    assert_eq!(
        r["faults"]["safe_state"]["applied_by_plant"], true,
        "{:#}",
        r["faults"]
    );
}

/// A study cell (`hil study cell`, the walk in one process) and `hil run` (the walk against
/// the `sim-host` process over the wire) measure the same walk: the same frames read the same
/// way give bit-identical outcomes, for a walk and for a fall.
#[test]
fn a_study_cell_measures_what_hil_run_measures() {
    let out = out_dir("walk_cell_vs_run");
    let file = no_animation(
        &out,
        "walk_cell_vs_run.toml",
        WALK_200,
        &[("duration_s = 20.0", "duration_s = 5.0")],
    );
    let (_, r) = run_complete(&[file.to_str().unwrap_or_default()], &out);
    for name in ["simbicon", "simbicon_analytic"] {
        let cell = hil()
            .args([
                "study",
                "cell",
                "--controller",
                name,
                "--rate-hz",
                "200",
                "--damping-scale",
                "1",
                "--duration-s",
                "5",
            ])
            .output()
            .unwrap_or_else(|e| panic!("cannot run hil study cell: {e}"));
        assert_eq!(
            cell.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&cell.stderr)
        );
        let line: Value = serde_json::from_slice(&cell.stdout)
            .unwrap_or_else(|e| panic!("hil study cell printed no JSON line: {e}"));
        let run = controller(&r, name);
        for key in ["fell", "fell_at_s", "distance_m", "steps"] {
            assert_eq!(
                line[key], run[key],
                "{name}: {key}: cell {line:#} run {run:#}"
            );
        }
    }
}
