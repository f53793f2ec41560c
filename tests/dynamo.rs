//! Dynamo's pushed humanoid end to end (`kind = "dynamo_push"`): the real `hil` and `sim-host`
//! humanoid processes, outcomes read from `report.json` and `runs.csv`. The shipped scenario
//! (three controllers × 13 impulses, then the gain sweep: about 5 s in a release build), its
//! urdf path made absolute so that the copy runs from the test's output folder.

use std::path::{Path, PathBuf};

use e2e::{controller, hil_run, out_dir, report, workspace_root};
use serde_json::Value;

const DYNAMO: &str = include_str!("../scenarios/dynamo_push.toml");

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// The shipped scenario with `edits` applied, written next to `out`.
fn scenario_copy(out: &Path, edits: &[(&str, &str)]) -> PathBuf {
    let urdf = workspace_root().join("models/humanoid15.urdf");
    let mut text = DYNAMO.replacen(
        "urdf = \"../models/humanoid15.urdf\"",
        &format!("urdf = {:?}", urdf.display().to_string()),
        1,
    );
    assert_ne!(text, DYNAMO, "the scenario's urdf line moved");
    for (from, to) in edits {
        assert!(text.contains(from), "`{from}` not in the scenario");
        text = text.replacen(from, to, 1);
    }
    let file = out.parent().unwrap_or(out).join("dynamo_push.toml");
    std::fs::write(&file, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
    file
}

/// Runs the scenario; it must complete with no fault, in particular no torque frame refused by
/// the plant (a torque cut to exactly a joint's effort used to come out a rounding above it,
/// and the plant then stepped with zero torques).
fn run(name: &str) -> (PathBuf, Value) {
    let out = out_dir(name);
    let file = scenario_copy(&out, &[]);
    let run = hil_run(&[file.to_str().unwrap_or_default()], &out);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let r = report(&out);
    assert_eq!(r["complete"], true, "{}", r["incomplete_reason"]);
    let faults = &r["faults"];
    assert_eq!(faults["rejected_frames"], 0, "{faults:#}");
    assert_eq!(faults["plant_rejected_frames"], 0, "{faults:#}");
    assert_eq!(faults["plant_over_limit_frames"], 0, "{faults:#}");
    assert_eq!(faults["plant_lost"], false, "{faults:#}");
    (out, r)
}

/// The pushes of a controller entry: (impulse N·s, stood).
fn pushes(c: &Value) -> Vec<(f64, bool)> {
    c["pushes"]
        .as_array()
        .map(|p| {
            p.iter()
                .map(|x| (num(&x["impulse_ns"]), x["stood"] == true))
                .collect()
        })
        .unwrap_or_default()
}

/// Every controller stands unpushed with a small pose error, at its nominal gains; the report's
/// push figures agree with its per-push rows; and what the physics gives for the issue's
/// orderings (measured, not tuned for: the same gains for all three, the spring from m·g).
#[test]
fn dynamo_push_stands_unpushed_and_orders_the_pushes() {
    let (out, r) = run("dynamo_push");
    assert_eq!(r["kind"], "dynamo_push");
    assert_eq!(num(&r["control_rate_hz"]), 200.0);
    let names = ["parent_space", "world_space", "world_space_root_spring"];
    let mut survived = Vec::new();
    for name in names {
        let c = controller(&r, name);
        let p = pushes(c);
        assert_eq!(p.len(), 13, "{c:#}");
        assert_eq!(p[0], (0.0, true), "{name} falls unpushed: {c:#}");
        let err = num(&c["pose_error_rad"]);
        assert!(err > 0.0 && err < 0.25, "{name}: pose error {err}");
        let rows = c["pushes"].as_array().cloned().unwrap_or_default();
        assert!(num(&rows[0]["max_torso_tilt_rad"]) < 0.4, "{:#}", rows[0]);
        assert_eq!(rows[0]["refused_joint_ticks"], 0, "{:#}", rows[0]);
        for row in &rows {
            // A run stood exactly when it has no fall time.
            assert_eq!(row["stood"] == true, row["fell_at_s"].is_null(), "{row:#}");
        }
        // The largest impulse survived with every smaller one survived too, and the next fell.
        let max = num(&c["max_push_survived_ns"]);
        let first_fall = p.iter().position(|(_, stood)| !stood).unwrap_or(p.len());
        assert!(first_fall > 0 && first_fall < p.len(), "{name}: {p:?}");
        assert_eq!(max, p[first_fall - 1].0, "{name}: {p:?}");
        survived.push((max, p[first_fall].0));
        // At 1× the sweep stands too.
        let at_one = r["gain_sweep"]
            .as_array()
            .and_then(|s| {
                s.iter()
                    .find(|g| g["controller"] == name && num(&g["gain_scale"]) == 1.0)
            })
            .cloned()
            .unwrap_or_else(|| panic!("no 1× sweep entry for {name}"));
        assert_eq!(at_one["fell"], false, "{at_one:#}");
    }
    // Only the root spring applies an external torque, and it breaks: at an impulse beyond the
    // largest it survives, and that push falls (it is a spring that lets go, not one that holds
    // forever).
    for name in ["parent_space", "world_space"] {
        let c = controller(&r, name);
        assert_eq!(num(&c["external_torque_nm_s"]), 0.0, "{c:#}");
        assert!(c["spring_broke_at_impulse_ns"].is_null(), "{c:#}");
    }
    let spring = controller(&r, "world_space_root_spring");
    assert!(num(&spring["external_torque_nm_s"]) > 0.0, "{spring:#}");
    let broke = num(&spring["spring_broke_at_impulse_ns"]);
    assert!(
        broke > num(&spring["max_push_survived_ns"]),
        "broke at {broke}: {spring:#}"
    );
    let at_break = pushes(spring)
        .into_iter()
        .find(|(j, _)| *j == broke)
        .unwrap_or_else(|| panic!("no push of {broke} N·s"));
    assert!(!at_break.1, "the spring broke at {broke} N·s and it stood");
    // The orderings, as measured (lockstep, deterministic): world-space ≥ 1.5× parent-space,
    // even against the next impulse parent-space fell at (the figure's resolution), and the
    // root spring further.
    let [(parent, parent_fell), (world, _), (with_spring, _)] = survived[..] else {
        panic!("{survived:?}")
    };
    assert!(world >= 1.5 * parent_fell, "{survived:?}");
    assert!(world >= 1.5 * parent, "{survived:?}");
    assert!(with_spring > world, "{survived:?}");
    // One row a run in runs.csv: 3 × 13 pushes + 3 × 5 gain scales.
    let csv = std::fs::read_to_string(out.join("runs.csv")).unwrap_or_default();
    assert_eq!(csv.lines().count(), 1 + 39 + 15, "{csv}");
}
