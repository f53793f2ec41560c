//! Dynamo's pushed humanoid end to end (`kind = "dynamo_push"`): the real `hil` and `sim-host`
//! humanoid processes, outcomes read from `report.json` and `runs.csv`. The shipped scenario
//! (three controllers × 18 impulses, then two gain sweeps: about 10 s in a release build), its
//! urdf path made absolute so that the copy runs from the test's output folder. Then what a user
//! can break: refused scenario files, a plant that is not the humanoid, SIGINT mid-run and the
//! plant killed mid-run.

use std::path::{Path, PathBuf};

use e2e::{
    controller, hil_run, out_dir, report, run_against_fake_plant, signal_mid_run, workspace_root,
};
use serde_json::Value;

const DYNAMO: &str = include_str!("../scenarios/dynamo_push.toml");
const DYNAMO_1KHZ: &str = include_str!("../scenarios/dynamo_push_1khz.toml");
const BALANCE: &str = include_str!("../scenarios/balance_push.toml");
const REACH: &str = include_str!("../scenarios/balance_reach.toml");
const PELTED: &str = include_str!("../scenarios/balance_pelted.toml");

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// The shipped scenario with `edits` applied, written next to `out` as `<name>.toml` (one name a
/// test: the tests run at once).
fn scenario_copy(out: &Path, name: &str, edits: &[(&str, &str)]) -> PathBuf {
    scenario_copy_of(DYNAMO, out, name, edits)
}

/// [`scenario_copy`] of the scenario text `source`.
fn scenario_copy_of(source: &str, out: &Path, name: &str, edits: &[(&str, &str)]) -> PathBuf {
    let urdf = workspace_root().join("models/humanoid15.urdf");
    let mut text = source.replacen(
        "urdf = \"../models/humanoid15.urdf\"",
        &format!("urdf = {:?}", urdf.display().to_string()),
        1,
    );
    assert_ne!(text, source, "the scenario's urdf line moved");
    for (from, to) in edits {
        assert!(text.contains(from), "`{from}` not in the scenario");
        text = text.replacen(from, to, 1);
    }
    let file = out.parent().unwrap_or(out).join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
    file
}

/// Runs the scenario; it must complete with no fault, in particular no torque frame refused by
/// the plant (a torque cut to exactly a joint's effort used to come out a rounding above it,
/// and the plant then stepped with zero torques).
fn run(name: &str, source: &str) -> (PathBuf, Value) {
    let out = out_dir(name);
    let file = scenario_copy_of(source, &out, name, &[]);
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
/// At 200 Hz the legs bound the gain sweep: with every joint scaled all three fall at 2×,
/// with only the upper body scaled (the joints whose law differs) all three stand at 2×.
#[test]
fn dynamo_push_stands_unpushed_and_orders_the_pushes() {
    let (out, r) = run("dynamo_push", DYNAMO);
    assert_eq!(num(&r["control_rate_hz"]), 200.0);
    assert_orderings(&out, &r);
    for name in ["parent_space", "world_space", "world_space_root_spring"] {
        assert_eq!(sweep_entry(&r, name, "all_joints", 2.0)["fell"], true);
        assert_eq!(sweep_entry(&r, name, "upper_body", 2.0)["fell"], false);
    }
    // Inside that range world-space's servos stay within their torque limits where
    // parent-space's saturate (measured 1 against 74 joint-ticks at 1×, 19 against 1022 at 2×).
    for scale in [1.0, 2.0] {
        let limited =
            |name| num(&sweep_entry(&r, name, "upper_body", scale)["limited_joint_ticks"]);
        let (parent, world) = (limited("parent_space"), limited("world_space"));
        assert!(10.0 * world < parent, "{scale}×: {world} {parent}");
    }
}

/// The gain-sweep entry of `name` with the joints of `scope` scaled by `scale`.
fn sweep_entry(r: &Value, name: &str, scope: &str, scale: f64) -> Value {
    r["gain_sweep"]
        .as_array()
        .and_then(|s| {
            s.iter().find(|g| {
                g["controller"] == name && g["scope"] == scope && num(&g["gain_scale"]) == scale
            })
        })
        .cloned()
        .unwrap_or_else(|| panic!("no {scale}× {scope} sweep entry for {name}"))
}

/// The same scenario at 1 kHz (1 ms control period and plant step, the same gains): the same
/// orderings, and every law stands unpushed at 0.5× to 4× the gains, all joints scaled or the
/// upper body's alone, where at 200 Hz the 5 ms sampling bound of the legs makes them fall at
/// 2× and 4× (docs/RESULTS.md, "The pushed humanoid").
#[test]
fn dynamo_push_at_1_khz_orders_the_pushes_and_stands_up_to_4x() {
    let (out, r) = run("dynamo_push_1khz", DYNAMO_1KHZ);
    assert_eq!(num(&r["control_rate_hz"]), 1000.0);
    assert_orderings(&out, &r);
    for name in ["parent_space", "world_space", "world_space_root_spring"] {
        for scope in ["upper_body", "all_joints"] {
            for scale in [0.5, 1.0, 2.0, 4.0] {
                let entry = sweep_entry(&r, name, scope, scale);
                assert_eq!(entry["fell"], false, "{entry:#}");
            }
        }
    }
}

/// The checks both rates share: every controller stands unpushed, the push figures agree with
/// the per-push rows, the spring alone applies an external torque and breaks at an impulse the
/// humanoid falls at, world-space as far as parent-space (the goal is 1.5×; measured 1× at both
/// rates, so not asserted: docs/RESULTS.md, "The pushed humanoid") with its torso held more
/// upright, and the spring further.
fn assert_orderings(out: &Path, r: &Value) {
    assert_eq!(r["kind"], "dynamo_push");
    let names = ["parent_space", "world_space", "world_space_root_spring"];
    let mut survived = Vec::new();
    for name in names {
        let c = controller(r, name);
        let p = pushes(c);
        assert_eq!(p.len(), 18, "{c:#}");
        assert_eq!(p[0], (0.0, true), "{name} falls unpushed: {c:#}");
        let err = num(&c["pose_error_rad"]);
        assert!(err > 0.0 && err < 0.1, "{name}: pose error {err}");
        // The reach (1.4 rad in 0.6 s) is there at its time.
        let reach = num(&c["reach_error_at_arrival_rad"]);
        assert!(
            (0.0..0.15).contains(&reach),
            "{name}: reach error at arrival {reach}"
        );
        let rows = c["pushes"].as_array().cloned().unwrap_or_default();
        assert!(num(&rows[0]["max_torso_tilt_rad"]) < 0.2, "{:#}", rows[0]);
        assert_eq!(rows[0]["refused_joint_ticks"], 0, "{:#}", rows[0]);
        for row in &rows {
            // A run stood exactly when it has no fall time and ends with its capture point
            // inside its feet's footprint (not falling).
            let end_margin = num(&row["capture"]["end_margin_m"]);
            assert_eq!(
                row["stood"] == true,
                row["fell_at_s"].is_null() && end_margin >= 0.0,
                "{row:#}"
            );
        }
        // The largest impulse survived with every smaller one survived too, and the next fell.
        let max = num(&c["largest_push_survived_ns"]);
        let first_fall = p.iter().position(|(_, stood)| !stood).unwrap_or(p.len());
        assert!(first_fall > 0 && first_fall < p.len(), "{name}: {p:?}");
        assert_eq!(max, p[first_fall - 1].0, "{name}: {p:?}");
        survived.push(max);
        // At 1× the sweep stands too.
        for scope in ["upper_body", "all_joints"] {
            let at_one = sweep_entry(r, name, scope, 1.0);
            assert_eq!(at_one["fell"], false, "{at_one:#}");
        }
    }
    // Only the root spring applies an external torque, and it breaks: at an impulse beyond the
    // largest it survives, and that push falls (it is a spring that lets go, not one that holds
    // forever).
    for name in ["parent_space", "world_space"] {
        let c = controller(r, name);
        assert_eq!(num(&c["external_torque_nm_s"]), 0.0, "{c:#}");
        assert!(c["spring_broke_at_impulse_ns"].is_null(), "{c:#}");
    }
    let spring = controller(r, "world_space_root_spring");
    assert!(num(&spring["external_torque_nm_s"]) > 0.0, "{spring:#}");
    let broke = num(&spring["spring_broke_at_impulse_ns"]);
    assert!(
        broke > num(&spring["largest_push_survived_ns"]),
        "broke at {broke}: {spring:#}"
    );
    let at_break = pushes(spring)
        .into_iter()
        .find(|(j, _)| *j == broke)
        .unwrap_or_else(|| panic!("no push of {broke} N·s"));
    assert!(!at_break.1, "the spring broke at {broke} N·s and it stood");
    // The orderings, as measured (lockstep, deterministic): world-space as far as parent-space
    // (16 N·s both, at 200 Hz and 1 kHz), and the root spring further.
    let [parent, world, with_spring] = survived[..] else {
        panic!("{survived:?}")
    };
    assert!(world >= parent, "{survived:?}");
    assert!(with_spring > world, "{survived:?}");
    // What world-space buys at the largest push parent-space survives: the torso stays more
    // upright (measured 0.100 rad against parent-space's 0.131 at 200 Hz, 0.082 against 0.119
    // at 1 kHz).
    let tilt_at = |name: &str, impulse: f64| {
        controller(r, name)["pushes"]
            .as_array()
            .and_then(|rows| rows.iter().find(|x| num(&x["impulse_ns"]) == impulse))
            .map(|x| num(&x["max_torso_tilt_rad"]))
            .unwrap_or_else(|| panic!("{name}: no push of {impulse} N·s"))
    };
    let (tilt_parent, tilt_world) = (
        tilt_at("parent_space", parent),
        tilt_at("world_space", parent),
    );
    assert!(tilt_world < 0.8 * tilt_parent, "{tilt_world} {tilt_parent}");
    // One row a run in runs.csv: 3 × 18 pushes + 3 × 2 scopes × 5 gain scales.
    let csv = std::fs::read_to_string(out.join("runs.csv")).unwrap_or_default();
    assert_eq!(csv.lines().count(), 1 + 54 + 30, "{csv}");
}

/// `balance_push` cut to `parent_space` and `qp_balance` at four impulses and the nominal
/// gains: the QP controller stands unpushed and at 10 N·s on its feet where they stand (which
/// stay within 3 cm of where they stood), and at 20 N·s, which parent-space servos do not
/// survive (the ordering measured: 40 against 16 N·s), and at 24 N·s, 1.5× parent-space's 16,
/// by one recovery step each; it holds the pose closer than
/// parent-space servos, solves nearly every tick (each fallback named), keeps the forces it
/// chooses inside its cones, and never sends a torque the plant refuses (`run` checks).
#[test]
fn balance_push_qp_balance_stands_holds_the_pose_and_solves_its_ticks() {
    let mut source = BALANCE.to_string();
    for (from, to) in [
        (
            "controllers = [\"parent_space\", \"world_space\", \"world_space_root_spring\", \"qp_balance\"]",
            "controllers = [\"parent_space\", \"qp_balance\"]",
        ),
        (
            "impulses_ns = [0.0, 4.0,",
            "impulses_ns = [0.0, 10.0, 20.0, 24.0]\n# ",
        ),
        (
            "gain_scales = [0.25, 0.5, 1.0, 2.0, 4.0]",
            "gain_scales = [1.0]",
        ),
        (
            "gain_scopes = [\"upper_body\", \"all_joints\"]",
            "gain_scopes = [\"all_joints\"]",
        ),
    ] {
        assert!(source.contains(from), "`{from}` not in balance_push.toml");
        source = source.replacen(from, to, 1);
    }
    let (_, r) = run("balance_push_cut", &source);
    let controllers = r["controllers"].as_array().cloned().unwrap_or_default();
    let by_name = |n: &str| {
        controllers
            .iter()
            .find(|c| c["name"] == n)
            .cloned()
            .unwrap_or_else(|| panic!("{n} missing: {r:#}"))
    };
    let (qp, ps) = (by_name("qp_balance"), by_name("parent_space"));
    assert_eq!(
        pushes(&qp),
        [(0.0, true), (10.0, true), (20.0, true), (24.0, true)],
        "{qp:#}"
    );
    assert_eq!(
        pushes(&ps),
        [(0.0, true), (10.0, true), (20.0, false), (24.0, false)],
        "{ps:#}"
    );
    // Up to 10 N·s on the feet where they stand, which stay put (the contact hold: without
    // it the feet took turns unloading after a push and walked 6 cm at 10 N·s); at 20 and
    // 24 N·s one step, of a foot's length or so, a swing of 0.25 s (50 ticks) and then the
    // foot on the ground again.
    for p in qp["pushes"].as_array().cloned().unwrap_or_default() {
        let account = &p["qp"];
        if num(&p["impulse_ns"]) < 20.0 {
            assert_eq!(num(&account["steps"]), 0.0, "{account:#}");
            assert_eq!(num(&account["swing_ticks"]), 0.0, "{account:#}");
            assert!(num(&p["feet"]["max_drift_m"]) < 0.03, "{p:#}");
        } else {
            assert_eq!(num(&account["steps"]), 1.0, "{account:#}");
            let length = num(&account["longest_step_m"]);
            assert!((0.05..=0.4).contains(&length), "{account:#}");
            let swing = num(&account["swing_ticks"]);
            assert!((50.0..=80.0).contains(&swing), "{account:#}");
        }
    }
    // Where each stood, its capture point ended inside the feet's footprint.
    for c in [&qp, &ps] {
        for p in c["pushes"].as_array().cloned().unwrap_or_default() {
            if p["stood"] == true {
                assert!(num(&p["capture"]["end_margin_m"]) >= 0.0, "{p:#}");
            }
        }
    }
    assert!(
        num(&qp["pose_error_rad"]) < 0.5 * num(&ps["pose_error_rad"]),
        "{} vs {}",
        qp["pose_error_rad"],
        ps["pose_error_rad"]
    );
    for p in qp["pushes"].as_array().cloned().unwrap_or_default() {
        let account = &p["qp"];
        let (ticks, solved) = (num(&account["ticks"]), num(&account["solved"]));
        assert!(ticks > 600.0, "{account:#}");
        let fallbacks: f64 = account["fallbacks"]
            .as_object()
            .map(|m| m.values().map(num).sum())
            .unwrap_or(f64::NAN);
        assert_eq!(
            solved + fallbacks,
            ticks,
            "every fallback named: {account:#}"
        );
        assert!(
            num(&account["max_friction_use"]) <= 1.0 + 1e-6,
            "{account:#}"
        );
        if p["stood"] == true {
            assert!(solved >= 0.98 * ticks, "{account:#}");
        }
        // The plant's forces at the feet and the feet's own motion, counted apart.
        let feet = &p["feet"];
        assert!(num(&feet["max_friction_use"]).is_finite(), "{feet:#}");
        for count in ["saturated_steps", "slip_steps", "lift_events"] {
            assert!(feet[count].is_u64(), "{count}: {feet:#}");
        }
        assert!(num(&feet["max_drift_m"]) >= 0.0, "{feet:#}");
        if num(&p["impulse_ns"]) == 0.0 {
            // Unpushed, the feet stay where they stand (1.6 mm measured).
            assert!(num(&feet["max_drift_m"]) < 0.005, "{feet:#}");
        }
    }
    // The Dynamo laws carry no QP account.
    assert!(ps["pushes"][0]["qp"].is_null());
}

/// `balance_reach`: `qp_balance` stands while its right hand reaches for a point 0.9 of the
/// arm's length in front of the shoulder, and its fingertip is there on time and stays (measured
/// 4.2 mm at arrival, 4.5 mm RMS after), every tick solved.
#[test]
fn balance_reach_puts_the_hand_on_its_target_while_standing() {
    let (_, r) = run("balance_reach", REACH);
    let qp = controller(&r, "qp_balance");
    let push = &qp["pushes"][0];
    assert_eq!(push["stood"], true, "{push:#}");
    let hand = &push["hand"];
    for field in ["at_arrival_m", "rms_m", "max_m"] {
        let e = num(&hand[field]);
        assert!((0.0..0.01).contains(&e), "{field}: {hand:#}");
    }
    let account = &push["qp"];
    assert_eq!(account["solved"], account["ticks"], "{account:#}");
    // A hand is qp_balance's alone, and its fields are checked like the others.
    let out = out_dir("balance_reach_broken");
    for (edit, field, says) in [
        (
            (
                "controllers = [\"qp_balance\"]",
                "controllers = [\"qp_balance\", \"world_space\"]",
            ),
            "controllers[1]",
            "has no hand task",
        ),
        (
            ("fraction = 0.9", "fraction = 1.5"),
            "hand.fraction",
            "within (0, 1]",
        ),
        (
            (
                "from_joint = \"right_shoulder\"",
                "from_joint = \"left_shoulder\"",
            ),
            "hand.from_joint",
            "is not above",
        ),
        (
            ("link = \"right_lower_arm\"", "link = \"right_hand\""),
            "hand.link",
            "no link",
        ),
        (
            (
                "fraction = 0.9\ndirection = [1.0, 0.0, 0.0]",
                "fraction = 0.9\ndirection = [0.0, 1.0, 0.0]",
            ),
            "hand.direction",
            "horizontal",
        ),
        (
            ("arrive_s = 1.3", "arrive_s = 3.0"),
            "hand.arrive_s",
            "push_at_s",
        ),
    ] {
        let name = format!("balance_reach_{}", field.replace(['.', '[', ']'], "_"));
        let file = scenario_copy_of(REACH, &out, &name, &[edit]);
        let run = hil_run(&[file.to_str().unwrap_or_default()], &out);
        let err = String::from_utf8_lossy(&run.stderr).into_owned();
        assert_eq!(run.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(&format!("field `{field}`")), "{name}: {err}");
        assert!(err.contains(says), "{name}: {err}");
        assert!(!out.join("report.json").exists(), "{name}");
    }
}

/// `balance_pelted`: eight balls thrown at the torso, each faster than the last. Every
/// controller is hit (ball touches are events, never ground contacts or falls) and the order
/// is as measured: `qp_balance` takes seven balls before it falls (after three recovery steps),
/// each Dynamo law falls after the 5th.
#[test]
fn balance_pelted_orders_the_balls_each_controller_takes() {
    let (_, r) = run("balance_pelted", PELTED);
    let balls = |name: &str| {
        let p = &controller(&r, name)["pushes"][0];
        let b = &p["balls"];
        assert_eq!(b["thrown"], 8, "{p:#}");
        assert!(num(&b["hit"]) >= num(&b["hit_before_fall"]), "{p:#}");
        assert!(num(&b["hit_before_fall"]) >= 1.0, "{p:#}");
        num(&b["hit_before_fall"])
    };
    let qp = balls("qp_balance");
    for name in ["parent_space", "world_space", "world_space_root_spring"] {
        let law = balls(name);
        assert!(qp > law, "{name}: {law} against qp_balance's {qp}");
    }
    // A scenario's balls are checked like everything else.
    let out = out_dir("balance_pelted_broken");
    for (edit, field) in [
        (("count = 8", "count = 0"), "pelt.count"),
        (("mass_kg = 2.0", "mass_kg = nan"), "pelt.mass_kg"),
        (("first_s = 1.5", "first_s = 0.1"), "pelt.first_s"),
        (("interval_s = 1.0", "interval_s = 3.0"), "pelt.count"),
    ] {
        let name = format!("balance_pelted_{}", field.replace('.', "_"));
        let file = scenario_copy_of(PELTED, &out, &name, &[edit]);
        let run = hil_run(&[file.to_str().unwrap_or_default()], &out);
        let err = String::from_utf8_lossy(&run.stderr).into_owned();
        assert_eq!(run.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(&format!("field `{field}`")), "{name}: {err}");
        assert!(!out.join("report.json").exists(), "{name}");
    }
}

/// Broken dynamo scenarios are refused before any plant starts: exit 2, no report, and the
/// message names the file and the field.
#[test]
fn broken_dynamo_scenarios_name_the_file_and_the_field() {
    let out = out_dir("dynamo_broken");
    for (name, edit, field) in [
        (
            "rate_zero",
            ("control_rate_hz = 200.0", "control_rate_hz = 0.0"),
            "control_rate_hz",
        ),
        (
            "rate_nan",
            ("control_rate_hz = 200.0", "control_rate_hz = nan"),
            "control_rate_hz",
        ),
        (
            "rate_absurd",
            ("control_rate_hz = 200.0", "control_rate_hz = 1e9"),
            "control_rate_hz",
        ),
        (
            "controller",
            ("\"world_space_root_spring\"]", "\"zmp\"]"),
            "controllers[2]",
        ),
        (
            "no_controller",
            (
                "controllers = [\"parent_space\", \"world_space\", \"world_space_root_spring\"]",
                "controllers = []",
            ),
            "controllers",
        ),
        (
            "impulse_negative",
            ("[0.0, 4.0,", "[-1.0, 4.0,"),
            "impulses_ns[0]",
        ),
        ("impulse_nan", ("20.0, 22.0", "20.0, nan"), "impulses_ns[9]"),
        (
            "impulse_inf",
            ("40.0, 60.0]", "40.0, inf]"),
            "impulses_ns[17]",
        ),
        (
            "impulse_descending",
            ("[0.0, 4.0, 8.0,", "[0.0, 8.0, 4.0,"),
            "impulses_ns[2]",
        ),
        (
            "push_body",
            ("push_body = \"torso\"", "push_body = \"tail\""),
            "push_body",
        ),
        (
            "push_direction",
            (
                "push_direction = [1.0, 0.0, 0.0]",
                "push_direction = [0.0, 0.0, 0.0]",
            ),
            "push_direction",
        ),
        (
            "push_duration",
            ("push_duration_s = 0.1", "push_duration_s = 0.0"),
            "push_duration_s",
        ),
        ("urdf", ("humanoid15.urdf\"", "humanoid99.urdf\""), "urdf"),
        (
            "spring_stiffness",
            (
                "stiffness_nm_per_rad = 690.0",
                "stiffness_nm_per_rad = -690.0",
            ),
            "root_spring.stiffness_nm_per_rad",
        ),
        (
            "spring_break",
            ("break_torque_nm = 138.0", "break_torque_nm = 10.0"),
            "root_spring.break_torque_nm",
        ),
        (
            "spring_max",
            ("max_torque_nm = 69.0", "max_torque_nm = nan"),
            "root_spring.max_torque_nm",
        ),
        ("gain_zero", ("[0.25, 0.5,", "[0.0, 0.5,"), "gain_scales[0]"),
        (
            "gain_scope",
            (
                "\"upper_body\", \"all_joints\"]",
                "\"upper_body\", \"legs\"]",
            ),
            "gain_scopes[1]",
        ),
        (
            "gain_scopes_empty",
            (
                "gain_scopes = [\"upper_body\", \"all_joints\"]",
                "gain_scopes = []",
            ),
            "gain_scopes",
        ),
        (
            "gain_negative",
            ("2.0, 4.0]", "2.0, -4.0]"),
            "gain_scales[4]",
        ),
        (
            "reach_joint",
            ("joint = \"right_shoulder\"", "joint = \"right_wing\""),
            "reach.joint",
        ),
        (
            "reach_arrival",
            ("arrive_s = 0.9", "arrive_s = 0.2"),
            "reach.arrive_s",
        ),
        (
            "fall_tilt_zero",
            ("fall_tilt_rad = 0.8", "fall_tilt_rad = 0.0"),
            "fall_tilt_rad",
        ),
        (
            "fall_tilt_negative",
            ("fall_tilt_rad = 0.8", "fall_tilt_rad = -0.8"),
            "fall_tilt_rad",
        ),
        (
            "unknown_field",
            (
                "fall_tilt_rad = 0.8",
                "fall_tilt_rad = 0.8\nfall_tilt_deg = 45.0",
            ),
            "fall_tilt_deg",
        ),
        // [qp_balance]: qp_balance's settings, checked like the others (the weight before
        // whether qp_balance runs).
        (
            "qp_balance_without_it",
            (
                "[root_spring]",
                "[qp_balance]\ncom_weight = 20.0\n\n[root_spring]",
            ),
            "qp_balance",
        ),
        (
            "qp_balance_weight_zero",
            (
                "[root_spring]",
                "[qp_balance]\ncom_weight = 0.0\n\n[root_spring]",
            ),
            "qp_balance.com_weight",
        ),
        (
            "qp_balance_weight_nan",
            (
                "[root_spring]",
                "[qp_balance]\ncom_weight = nan\n\n[root_spring]",
            ),
            "qp_balance.com_weight",
        ),
        (
            "qp_balance_screen_one",
            (
                "[root_spring]",
                "[qp_balance]\nscreen_fraction = 1.0\n\n[root_spring]",
            ),
            "qp_balance.screen_fraction",
        ),
        (
            "qp_balance_screen_negative",
            (
                "[root_spring]",
                "[qp_balance]\nscreen_fraction = -0.1\n\n[root_spring]",
            ),
            "qp_balance.screen_fraction",
        ),
        (
            "qp_balance_momentum_negative",
            (
                "[root_spring]",
                "[qp_balance]\nmomentum_weight = -1.0\n\n[root_spring]",
            ),
            "qp_balance.momentum_weight",
        ),
        (
            "qp_balance_range_space_not_bool",
            (
                "[root_spring]",
                "[qp_balance]\nrange_space = 1\n\n[root_spring]",
            ),
            "qp_balance.range_space",
        ),
        (
            "qp_balance_step_not_bool",
            ("[root_spring]", "[qp_balance]\nstep = 1\n\n[root_spring]"),
            "qp_balance.step",
        ),
        (
            "qp_balance_contact_hold_too_long",
            (
                "[root_spring]",
                "[qp_balance]\ncontact_hold_ticks = 1001\n\n[root_spring]",
            ),
            "qp_balance.contact_hold_ticks",
        ),
        (
            "qp_balance_contact_hold_negative",
            (
                "[root_spring]",
                "[qp_balance]\ncontact_hold_ticks = -1\n\n[root_spring]",
            ),
            "qp_balance.contact_hold_ticks",
        ),
        (
            "qp_balance_unknown",
            (
                "[root_spring]",
                "[qp_balance]\ncom_kp = 3.0\n\n[root_spring]",
            ),
            "qp_balance.com_kp",
        ),
    ] {
        refused(&out, name, edit, field);
    }
    // What the message says, beyond the field: (case, edit, field, what the message contains).
    for (name, edit, field, says) in [
        (
            "reach_rotation_nan",
            (
                "rotation_rad = [0.0, 1.4, 0.0]",
                "rotation_rad = [0.0, nan, 0.0]",
            ),
            "reach.rotation_rad[1]",
            "must be a finite number, got NaN",
        ),
        (
            "reach_rotation_inf",
            (
                "rotation_rad = [0.0, 1.4, 0.0]",
                "rotation_rad = [0.0, 1.4, -inf]",
            ),
            "reach.rotation_rad[2]",
            "must be a finite number, got -inf",
        ),
        (
            "reach_rotation_absurd",
            (
                "rotation_rad = [0.0, 1.4, 0.0]",
                "rotation_rad = [0.0, 80.0, 0.0]",
            ),
            "reach.rotation_rad",
            "must be at most π rad, got 80",
        ),
        (
            "impulse_force",
            ("40.0, 60.0]", "40.0, 1e5]"),
            "impulses_ns[17]",
            "a force of 1000000 N, beyond the plant's push force limit of 100000 N",
        ),
        (
            "push_duration_short",
            ("push_duration_s = 0.1", "push_duration_s = 0.000001"),
            "push_duration_s",
            "beyond the plant's push force limit of 100000 N",
        ),
        (
            "spring_stiffness_value",
            (
                "stiffness_nm_per_rad = 690.0",
                "stiffness_nm_per_rad = -690.0",
            ),
            "root_spring.stiffness_nm_per_rad",
            "must be finite and ≥ 0, got -690",
        ),
        (
            "spring_damping",
            ("damping_nms_per_rad = 69.0", "damping_nms_per_rad = inf"),
            "root_spring.damping_nms_per_rad",
            "must be finite and ≥ 0, got inf",
        ),
        (
            "spring_break_value",
            ("break_torque_nm = 138.0", "break_torque_nm = 10.0"),
            "root_spring.break_torque_nm",
            "must be finite and ≥ max_torque_nm (69), got 10",
        ),
        (
            "spring_max_value",
            ("max_torque_nm = 69.0", "max_torque_nm = nan"),
            "root_spring.max_torque_nm",
            "must be finite and > 0, got NaN",
        ),
        (
            "spring_max_absurd",
            (
                "max_torque_nm = 69.0\nbreak_torque_nm = 138.0",
                "max_torque_nm = 1e7\nbreak_torque_nm = 1e8",
            ),
            "root_spring.max_torque_nm",
            "the plant's root torque limit",
        ),
        (
            "missing_field",
            ("fall_tilt_rad = 0.8", ""),
            "fall_tilt_rad",
            "missing field",
        ),
        (
            "missing_nested_field",
            ("joint = \"right_shoulder\"", ""),
            "reach.joint",
            "missing field",
        ),
        (
            "role_no_joint",
            (
                "[root_spring]",
                "[roles]\nwaist = \"wiast\"\n\n[root_spring]",
            ),
            "roles.waist",
            "`wiast` is no joint",
        ),
        (
            "role_twice",
            (
                "[root_spring]",
                "[roles]\nneck = \"waist\"\n\n[root_spring]",
            ),
            "roles",
            "joint `waist` plays two parts",
        ),
    ] {
        let err = refused(&out, name, edit, field);
        assert!(err.contains(says), "{name}: {err}");
    }
    // A controller the scenario does not name.
    let file = scenario_copy(&out, "dynamo_broken_only", &[]);
    let run = hil_run(&[file.to_str().unwrap_or_default(), "--only", "zmp"], &out);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(err.contains("zmp"), "{err}");
    assert!(!out.join("report.json").exists());
}

/// The shipped scenario with `edit`, named `dynamo_broken_<name>`, is refused before any plant
/// starts: exit 2, no report, the message naming the file and `field`. Returns the message.
fn refused(out: &Path, name: &str, edit: (&str, &str), field: &str) -> String {
    let file_name = format!("dynamo_broken_{name}");
    let file = scenario_copy(out, &file_name, &[edit]);
    let run = hil_run(&[file.to_str().unwrap_or_default()], out);
    let err = String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(run.status.code(), Some(2), "{name}: {err}");
    assert!(err.contains(&format!("{file_name}.toml")), "{name}: {err}");
    assert!(err.contains(&format!("field `{field}`")), "{name}: {err}");
    assert!(!out.join("report.json").exists(), "{name}");
    err
}

/// The one push row of `controller` in `runs.csv` (`controller,push,...`), as its cells.
fn push_row(out: &Path, controller: &str) -> Vec<String> {
    let csv = std::fs::read_to_string(out.join("runs.csv")).unwrap_or_default();
    let header: Vec<&str> = csv.lines().next().unwrap_or("").split(',').collect();
    assert_eq!(header.get(4), Some(&"stood"), "{csv}");
    let rows: Vec<Vec<String>> = csv
        .lines()
        .filter(|l| l.starts_with(&format!("{controller},push,")))
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect();
    assert_eq!(rows.len(), 1, "{csv}");
    rows.into_iter().next().unwrap_or_default()
}

/// A run cut short before it was judged, without having fallen: `stood` is `null` (not `true`),
/// empty in runs.csv, and it does not count towards `largest_push_survived_ns`.
fn assert_not_judged(out: &Path, r: &Value, name: &str) {
    let c = controller(r, name);
    let rows = c["pushes"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), 1, "{c:#}");
    assert!(
        rows[0]["stood"].is_null(),
        "a run never judged stood: {c:#}"
    );
    assert!(rows[0]["fell_at_s"].is_null(), "{c:#}");
    assert!(c["largest_push_survived_ns"].is_null(), "{c:#}");
    let row = push_row(out, name);
    assert_eq!(row.get(4).map(String::as_str), Some(""), "{row:?}");
}

/// A root spring whose break torque equals its maximum torque is what control-core's
/// `RootSpring::new` accepts (break ≥ max), so the scenario is accepted too: one short
/// unpushed run completes, judged standing.
#[test]
fn a_break_torque_equal_to_the_max_torque_is_accepted() {
    let out = out_dir("dynamo_break_equal");
    let file = one_run(&out, "dynamo_break_equal", "world_space_root_spring", "0.5");
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(text.contains("break_torque_nm = 138.0"), "{text}");
    std::fs::write(
        &file,
        text.replacen("break_torque_nm = 138.0", "break_torque_nm = 69.0", 1),
    )
    .unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
    let run = hil_run(&[file.to_str().unwrap_or_default()], &out);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{err}");
    let r = report(&out);
    assert_eq!(r["complete"], true, "{}", r["incomplete_reason"]);
    assert_eq!(num(&r["root_spring"]["break_torque_nm"]), 69.0);
    let c = controller(&r, "world_space_root_spring");
    assert_eq!(c["pushes"][0]["stood"], true, "{c:#}");
    assert_eq!(num(&c["largest_push_survived_ns"]), 0.0, "{c:#}");
    let row = push_row(&out, "world_space_root_spring");
    assert_eq!(row.get(4).map(String::as_str), Some("1"), "{row:?}");
}

/// The shipped scenario cut to one unpushed run of `controller` lasting `after_push_s` after the
/// push time, with no gain sweep, written next to `out` as `<name>.toml`.
fn one_run(out: &Path, name: &str, controller: &str, after_push_s: &str) -> PathBuf {
    scenario_copy(
        out,
        name,
        &[
            (
                "impulses_ns = [0.0, 4.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0, 20.0, 22.0, 24.0, 26.0, 28.0, 30.0, 32.0, 35.0, 40.0, 60.0]",
                "impulses_ns = [0.0]",
            ),
            (
                "after_push_s = 2.0",
                &format!("after_push_s = {after_push_s}"),
            ),
            (
                "controllers = [\"parent_space\", \"world_space\", \"world_space_root_spring\"]",
                &format!("controllers = [\"{controller}\"]"),
            ),
            (
                "gain_scales = [0.25, 0.5, 1.0, 2.0, 4.0]",
                "gain_scales = []",
            ),
        ],
    )
}

/// A plant that is not the humanoid (the fake plant's three-joint states, no bodies) is refused:
/// no controller torque reaches it, the run ends as a lost plant naming the mismatch, exit 1,
/// with a partial report.
#[test]
fn a_plant_that_is_not_the_humanoid_is_refused() {
    let out = out_dir("dynamo_not_humanoid");
    let file = one_run(&out, "dynamo_not_humanoid", "world_space", "2.0");
    let (output, log) = run_against_fake_plant(
        "silent-after:100",
        Some(3),
        &[file.to_str().unwrap_or_default()],
        &out,
    );
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        err.contains("plant lost") && err.contains("not the plant of this scenario"),
        "{err}"
    );
    assert!(err.contains("0 bodies") && err.contains("15"), "{err}");
    assert_eq!(
        log.lines().filter(|l| l.contains(" normal ")).count(),
        0,
        "controller torques reached a plant that is not the humanoid:\n{log}"
    );
    let r = report(&out);
    assert_eq!(r["complete"], false);
    assert_eq!(r["faults"]["plant_lost"], true, "{:#}", r["faults"]);
    assert!(
        r["faults"]["plant_lost_reason"]
            .as_str()
            .unwrap_or("")
            .contains("not the plant of this scenario"),
        "{:#}",
        r["faults"]
    );
    assert!(
        r["incomplete_reason"]
            .as_str()
            .unwrap_or("")
            .contains("world_space"),
        "{:#}",
        r["incomplete_reason"]
    );
    // Lost at t = 0: never judged, so not reported as stood.
    assert_not_judged(&out, &r, "world_space");
}

/// SIGINT mid-run (one unpushed run judged 600 s after the push, far longer than the signal
/// takes to arrive): exit 130, a partial report saying why and in which run, the safe state
/// applied by the real plant before the run's end, and no process left behind.
#[test]
fn sigint_mid_push_writes_a_partial_report() {
    let out = out_dir("dynamo_sigint");
    let file = one_run(&out, "dynamo_sigint", "world_space_root_spring", "600.0");
    let (output, _) = signal_mid_run(
        &[file.to_str().unwrap_or_default()],
        &out,
        libc::SIGINT,
        true,
    );
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{err}");
    assert!(err.contains("SIGINT"), "{err}");
    let r = report(&out);
    assert_eq!(r["complete"], false);
    let why = r["incomplete_reason"].as_str().unwrap_or("");
    assert!(
        why.contains("SIGINT") && why.contains("world_space_root_spring at 0 N·s"),
        "{why}"
    );
    let faults = &r["faults"];
    assert_eq!(faults["plant_lost"], false, "{faults:#}");
    let safe = &faults["safe_state"];
    assert_eq!(safe["applied_by_plant"], true, "{safe:#}");
    let t = num(&safe["sent_at_s"]);
    assert!((0.0..601.5).contains(&t), "{safe:#}");
    // Interrupted long before its judging window ended: not judged, so not reported as stood.
    assert_not_judged(&out, &r, "world_space_root_spring");
}

/// The plant killed mid-run (SIGKILL to the humanoid's plant process): exit 1, the error says
/// the plant was lost and how, a partial report with the loss, whose safe state could not reach
/// a dead plant; no process left behind.
#[test]
fn killing_the_plant_mid_push_ends_the_run() {
    let out = out_dir("dynamo_killed");
    let file = one_run(&out, "dynamo_killed", "world_space", "600.0");
    let (output, _) = signal_mid_run(
        &[file.to_str().unwrap_or_default()],
        &out,
        libc::SIGKILL,
        false,
    );
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        err.contains("plant lost") && err.contains("closed its link"),
        "{err}"
    );
    let r = report(&out);
    assert_eq!(r["complete"], false);
    assert!(
        r["incomplete_reason"]
            .as_str()
            .unwrap_or("")
            .contains("world_space at 0 N·s"),
        "{:#}",
        r["incomplete_reason"]
    );
    let faults = &r["faults"];
    assert_eq!(faults["plant_lost"], true, "{faults:#}");
    let t = num(&faults["plant_lost_at_s"]);
    assert!((0.0..601.5).contains(&t), "{faults:#}");
    let safe = &faults["safe_state"];
    assert_eq!(safe["applied_by_plant"], false, "{safe:#}");
    assert!((num(&safe["sent_at_s"]) - t).abs() < 1e-9, "{safe:#}");
    // Lost long before its judging window ended: not judged.
    assert_not_judged(&out, &r, "world_space");
}
