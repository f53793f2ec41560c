//! 3D walking end to end (`kind = "walk3d"`): the real `hil` and `sim-host` humanoid processes,
//! outcomes read from `report.json` and `runs.csv`, the study cell against `hil run`, Algorithm 1
//! in a reduced setting, and refused scenario files.

use std::path::Path;

use e2e::{hil, hil_run, out_dir, report, scenario_copy};
use serde_json::Value;

const WALK3D: &str = include_str!("../scenarios/walk3d.toml");
/// `scenarios/walk3d.toml`'s controllers line.
const CONTROLLERS: &str = "controllers = [\"simbicon3d\", \"simbicon3d_analytic\", \"simbicon3d_stabilised\", \"simbicon3d_stable_pd\", \"simbicon3d_stable_pd_stabilised\"]";

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// `scenarios/walk3d.toml` with `edits`, written beside `out` as `name` and run into `out`
/// (exit 0 required); the scenario file and the report.
fn run_walk3d(out: &Path, name: &str, edits: &[(&str, &str)]) -> (std::path::PathBuf, Value) {
    let file = scenario_copy(out.parent().unwrap_or(out), name, WALK3D, edits);
    let run = hil_run(&[file.to_str().unwrap_or_default()], out);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{err}");
    (file, report(out))
}

/// `scenarios/walk3d.toml` with `edits` and `simbicon3d` alone (see [`run_walk3d`]).
fn run_simbicon3d(out: &Path, name: &str, edits: &[(&str, &str)]) -> (std::path::PathBuf, Value) {
    let mut all = vec![(CONTROLLERS, "controllers = [\"simbicon3d\"]")];
    all.extend_from_slice(edits);
    run_walk3d(out, name, &all)
}

fn run_of<'a>(r: &'a Value, controller: &str, rate: f64) -> &'a Value {
    r["runs"]
        .as_array()
        .and_then(|runs| {
            runs.iter()
                .find(|x| x["controller"] == controller && num(&x["control_rate_hz"]) == rate)
        })
        .unwrap_or_else(|| panic!("no run of {controller} at {rate} Hz in {r:#}"))
}

/// Cartwheel's Bip gains walk the humanoid at 2 kHz, the rate they were tuned for, through
/// the coronal speed cycle (0 / 0.2 / −0.2 m/s every 5 steps) without falling, steering sideways
/// on command; at 300 Hz, with the plant stepping at the control rate, the same gains fall
/// within a few steps (the premise of Carensac et al.'s study: SIMBICON's gains do not carry
/// to low rates).
#[test]
fn cartwheels_gains_walk_at_2_khz_and_fall_at_300_hz() {
    let out = out_dir("walk3d_rates");
    let (_, r) = run_simbicon3d(
        &out,
        "walk3d_rates.toml",
        &[
            (
                "control_rates_hz = [300.0]",
                "control_rates_hz = [2000.0, 300.0]",
            ),
            ("duration_s = 120.0", "duration_s = 20.0"),
        ],
    );
    assert_eq!(
        (&r["kind"], &r["complete"]),
        (&Value::from("walk3d"), &Value::from(true))
    );
    assert_eq!(r["faults"]["plant_rejected_frames"], 0, "{:#}", r["faults"]);
    let fast = run_of(&r, "simbicon3d", 2000.0);
    assert_eq!(fast["walked"], true, "{fast:#}");
    assert!(fast["steps"].as_u64().unwrap_or(0) >= 30, "{fast:#}");
    let v = num(&fast["mean_speed_m_s"]);
    assert!((0.6..1.0).contains(&v), "{fast:#}");
    assert!(num(&fast["distance_m"]) >= 12.0, "{fast:#}");
    assert_eq!(fast["refused_ticks"], 0, "{fast:#}");
    let slow = run_of(&r, "simbicon3d", 300.0);
    assert_eq!(slow["walked"], false, "{slow:#}");
    assert!(num(&slow["fell_at_s"]) < 5.0, "{slow:#}");
    assert!(slow["fell_because"].as_str().is_some(), "{slow:#}");
    // Every step is listed in steps.csv, and runs.csv has a line per run.
    let steps = std::fs::read_to_string(out.join("steps.csv")).unwrap_or_default();
    let listed = steps
        .lines()
        .filter(|l| l.starts_with("simbicon3d,2000,"))
        .count();
    assert_eq!(listed as u64, fast["steps"].as_u64().unwrap_or(0));
    // The sideways command steers, in the commanded order: the first +0.2 m/s command (steps
    // 6–10) moves the body right (a stride-averaged coronal speed above +0.3 m/s) before the
    // −0.2 m/s command that follows moves it left (below −0.3 m/s). SIMBICON's coronal feedback
    // on v − v_d lags and overshoots the command; the figure is in docs/RESULTS.md.
    let coronal: Vec<(f64, f64)> = steps
        .lines()
        .filter(|l| l.starts_with("simbicon3d,2000,"))
        .map(|l| {
            let f: Vec<f64> = l
                .split(',')
                .map(|x| x.parse().unwrap_or(f64::NAN))
                .collect();
            (f[7], f[8])
        })
        .collect();
    let first = |pred: &dyn Fn(f64) -> bool| coronal.iter().position(|&(_, v)| pred(v));
    let right = first(&|v| v > 0.3).expect("the body moved right");
    let left = first(&|v| v < -0.3).expect("the body moved left");
    assert!(right < left, "{coronal:?}");
    assert!(
        coronal[..right].iter().any(|&(d, _)| d > 0.1),
        "{coronal:?}"
    );
    assert!(
        coronal[..left].iter().any(|&(d, _)| d < -0.1),
        "{coronal:?}"
    );
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap_or_default();
    assert_eq!(runs.lines().count(), 3, "{runs}");
    // The first rate's first 10 s as an animation.
    let gif = std::fs::read(out.join("walk3d_simbicon3d.gif")).unwrap_or_default();
    assert!(
        gif.starts_with(b"GIF89a") && gif.len() > 10_000,
        "{}",
        gif.len()
    );
}

/// `hil study walk3d-cell` runs the same walk in its own process, judged by the same recorder:
/// the same fall time, steps and effort cuts as `hil run` against the plant process.
#[test]
fn a_study_cell_walks_as_hil_run_does() {
    let out = out_dir("walk3d_cell");
    let (file, r) = run_simbicon3d(
        &out,
        "walk3d_cell.toml",
        &[
            ("duration_s = 120.0", "duration_s = 4.0"),
            (
                "controllers = [\"simbicon3d\"]",
                "controllers = [\"simbicon3d\", \"simbicon3d_stabilised\"]",
            ),
        ],
    );
    let cell = |controller: &str| {
        hil()
            .args([
                "study",
                "walk3d-cell",
                "--controller",
                controller,
                "--rate-hz",
                "300",
                "--duration-s",
                "4",
                "--scenario",
            ])
            .arg(&file)
            .output()
            .expect("run hil study walk3d-cell")
    };
    // The plain walker and the one with the stabiliser in the loop.
    for controller in ["simbicon3d", "simbicon3d_stabilised"] {
        let ran = run_of(&r, controller, 300.0);
        let cell = cell(controller);
        assert!(
            cell.status.success(),
            "{}",
            String::from_utf8_lossy(&cell.stderr)
        );
        let line: Value = serde_json::from_slice(&cell.stdout).expect("one JSON line");
        assert_eq!(line["controller"], controller, "{line:#}");
        let o = &line["outcome"];
        assert_eq!(o["fell"], true, "{line:#}");
        assert_eq!(o["fell_at_s"], ran["fell_at_s"], "{line:#} against {ran:#}");
        assert_eq!(o["steps"], ran["steps"]);
        assert_eq!(o["limited_joint_ticks"], ran["limited_joint_ticks"]);
    }
    // A controller that picks its own gains is refused: a study sets them.
    let refused = cell("simbicon3d_analytic");
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(err.contains("--controller"), "{err}");
}

/// Speed commands: Cartwheel's walk at 2 kHz goes about 0.78 m/s; told to hold 1.0 m/s through
/// the velocity tuning, its strides after the first few steps average within 0.1 m/s of 1.0,
/// and the desired forward velocity the feedback read rose above zero to get there.
#[test]
fn velocity_tuning_holds_a_commanded_forward_speed() {
    let out = out_dir("walk3d_speed");
    let (_, r) = run_simbicon3d(
        &out,
        "walk3d_speed_e2e.toml",
        &[
            ("control_rates_hz = [300.0]", "control_rates_hz = [2000.0]"),
            ("duration_s = 120.0", "duration_s = 15.0"),
            ("[0.0, 0.2, -0.2]", "[0.0]"),
            (
                "animation_s = 10.0",
                "animation_s = 0.0\n[speed_tuning]\ntargets_m_s = [1.0]",
            ),
        ],
    );
    let run = run_of(&r, "simbicon3d", 2000.0);
    assert_eq!(run["walked"], true, "{run:#}");
    assert_eq!(num(&r["speed_tuning"]["gain"]), 0.25);
    let steps = run["step_list"].as_array().expect("steps");
    let late: Vec<f64> = steps
        .iter()
        .skip(10)
        .map(|s| num(&s["forward_m_s"]))
        .collect();
    assert!(late.len() >= 10, "{steps:#?}");
    let mean = late.iter().sum::<f64>() / late.len() as f64;
    assert!((mean - 1.0).abs() < 0.1, "{mean} m/s over {late:?}");
    assert!(
        steps
            .iter()
            .skip(10)
            .all(|s| num(&s["desired_forward_m_s"]) > 0.0 && num(&s["target_forward_m_s"]) == 1.0),
        "{steps:#?}"
    );
    assert!(num(&run["forward_speed_error_m_s"]) < 0.2, "{run:#}");
}

/// The push test: a walk at 2 kHz pushed forward at the pelvis with a small impulse walks on
/// and with a huge one falls after the push; the report gives the series' largest impulse
/// walked through and its first fall, the phase and stance foot of the push, and pushes.csv a
/// line per pushed walk.
#[test]
fn a_push_test_finds_the_largest_push_walked_through() {
    let out = out_dir("walk3d_push");
    let (_, r) = run_simbicon3d(
        &out,
        "walk3d_push_e2e.toml",
        &[
            ("control_rates_hz = [300.0]", "control_rates_hz = [2000.0]"),
            ("duration_s = 120.0", "duration_s = 4.0"),
            (
                "animation_s = 10.0",
                "animation_s = 0.0\n[push_test]\ndirections_world = [[2.0, 0.0, 0.0]]\nat_s = [2.0]\nduration_s = 0.1\nimpulses_ns = [5.0, 400.0]",
            ),
        ],
    );
    assert_eq!(r["complete"], true, "{r:#}");
    assert_eq!(run_of(&r, "simbicon3d", 2000.0)["walked"], true);
    assert_eq!(r["push_link"], "pelvis");
    let runs = r["push_runs"].as_array().expect("push_runs");
    assert_eq!(runs.len(), 2, "{runs:#?}");
    assert_eq!(runs[0]["walked"], true, "{:#}", runs[0]);
    assert_eq!(runs[1]["walked"], false, "{:#}", runs[1]);
    assert!(num(&runs[1]["fell_at_s"]) > 2.0, "{:#}", runs[1]);
    let summary = &r["push_summary"][0];
    assert_eq!(num(&summary["largest_survived_ns"]), 5.0, "{summary:#}");
    assert_eq!(num(&summary["first_fall_ns"]), 400.0, "{summary:#}");
    assert_eq!(
        summary["direction_world"],
        serde_json::json!([1.0, 0.0, 0.0])
    );
    let phase = num(&summary["phase"]);
    assert!((0.0..2.0).contains(&phase), "{summary:#}");
    assert!(
        summary["stance"] == "left" || summary["stance"] == "right",
        "{summary:#}"
    );
    let csv = std::fs::read_to_string(out.join("pushes.csv")).unwrap_or_default();
    assert_eq!(csv.lines().count(), 3, "{csv}");
}

/// Algorithm 1 end to end in a reduced setting: the reference walk at 2 kHz, then at 1.5 kHz a
/// one-generation search for S_min and one for S_max, each evaluation its own cell process;
/// walk3d_cmaes.json has both gain sets, valid, and every evaluation is in the JSON lines.
#[test]
fn algorithm_1_runs_end_to_end() {
    let out = out_dir("walk3d_cmaes");
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/walk3d.toml");
    let run = hil()
        .args([
            "study",
            "walk3d-cmaes",
            "--rates",
            "1500",
            "--generations",
            "1",
            "--population",
            "2",
            "--duration-s",
            "3",
            "--jobs",
            "2",
            "--scenario",
        ])
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run hil study walk3d-cmaes");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = std::fs::read_to_string(out.join("walk3d_cmaes.json")).unwrap_or_default();
    let j: Value = serde_json::from_str(&text).expect("walk3d_cmaes.json");
    assert_eq!(j["controller"], "simbicon3d");
    // Start gains that are not nine pairs, and a controller with its own gains, are refused
    // before anything runs.
    for (flag, value) in [
        ("--start-gains", "[[1.0, 1.0]]"),
        ("--controller", "simbicon3d_tuned"),
    ] {
        let bad = hil()
            .args(["study", "walk3d-cmaes", flag, value, "--out"])
            .arg(out.join("refused"))
            .output()
            .expect("run hil study walk3d-cmaes");
        let err = String::from_utf8_lossy(&bad.stderr);
        assert_eq!(bad.status.code(), Some(2), "{err}");
        assert!(err.contains(flag), "{err}");
        assert!(!out.join("refused").exists(), "{err}");
    }
    let rate = &j["rates"][0];
    assert_eq!(num(&rate["rate_hz"]), 1500.0);
    assert_eq!(rate["valid"], true, "{rate:#}");
    assert_eq!(rate["s_min_objective"]["valid"], true, "{rate:#}");
    // The max search starts from S_min: its best gains are at least S_min's on average.
    assert!(
        num(&rate["s_max_objective"]["gains"]) >= num(&rate["s_min_objective"]["gains"]),
        "{rate:#}"
    );
    // Start + 2 per search, two searches.
    assert_eq!(rate["evaluations"], 6, "{rate:#}");
    let lines = std::fs::read_to_string(out.join("walk3d_cmaes.jsonl")).unwrap_or_default();
    assert_eq!(lines.lines().count(), 6, "{lines}");
    assert!(String::from_utf8_lossy(&run.stdout).contains("S_min"));
    // S_min as a scenario's tuned gains, which a walk3d scenario accepts as written.
    let tuned = std::fs::read_to_string(out.join("tuned_gains.toml")).unwrap_or_default();
    assert!(
        tuned.contains("[[tuned_gains]]\nrate_hz = 1500.0\n"),
        "{tuned}"
    );
    let dir = out.parent().unwrap_or(&out).to_path_buf();
    let file = scenario_copy(
        &dir,
        "walk3d_tuned_check.toml",
        &format!("{WALK3D}\n{tuned}"),
        &[
            ("control_rates_hz = [300.0]", "control_rates_hz = [1500.0]"),
            ("duration_s = 120.0", "duration_s = 0.5"),
            ("animation_s = 10.0", "animation_s = 0.0"),
            (CONTROLLERS, "controllers = [\"simbicon3d_tuned\"]"),
        ],
    );
    let check = out_dir("walk3d_tuned_check");
    let run = hil_run(&[file.to_str().unwrap_or_default()], &check);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// Bad scenario files are refused before anything runs: exit 2 naming the file, the field and
/// the reason, nothing written.
#[test]
fn bad_walk3d_scenarios_are_refused_by_field() {
    let out = out_dir("walk3d_refused");
    let dir = out.parent().unwrap_or(&out).to_path_buf();
    for (name, edit, field) in [
        (
            "walk3d_bad_rate.toml",
            ("control_rates_hz = [300.0]", "control_rates_hz = [10.0]"),
            "control_rates_hz[0]",
        ),
        (
            "walk3d_bad_controller.toml",
            (
                "controllers = [\"simbicon3d\",",
                "controllers = [\"simbicon9d\",",
            ),
            "controllers[0]",
        ),
        (
            "walk3d_bad_role.toml",
            (
                "animation_s = 10.0",
                "animation_s = 10.0\n[roles.left]\nhip = \"left_hipp\"\nknee = \"left_knee\"\nankle = \"left_ankle\"\ntoe = \"left_toe\"\nshoulder = \"left_shoulder\"\nelbow = \"left_elbow\"\nfoot = \"left_foot\"\ntoes = \"left_toes\"",
            ),
            "roles.left.hip",
        ),
        (
            "walk3d_untuned_rate.toml",
            (CONTROLLERS, "controllers = [\"simbicon3d_tuned\"]"),
            "tuned_gains",
        ),
        (
            "walk3d_stabiliser_untuned.toml",
            (
                CONTROLLERS,
                "controllers = [\"simbicon3d_stabilised\"]\nstabiliser_gains = \"tuned\"",
            ),
            "tuned_gains",
        ),
        (
            "walk3d_bad_stabiliser_gains.toml",
            (
                CONTROLLERS,
                "controllers = [\"simbicon3d_stabilised\"]\nstabiliser_gains = \"tuneed\"",
            ),
            "stabiliser_gains",
        ),
        (
            "walk3d_push_not_rising.toml",
            (
                "animation_s = 10.0",
                "animation_s = 10.0\n[push_test]\ndirections_world = [[1.0, 0.0, 0.0]]\nat_s = [2.0]\nduration_s = 0.1\nimpulses_ns = [20.0, 10.0]",
            ),
            "push_test.impulses_ns[1]",
        ),
        (
            "walk3d_push_after_the_end.toml",
            (
                "animation_s = 10.0",
                "animation_s = 10.0\n[push_test]\ndirections_world = [[1.0, 0.0, 0.0]]\nat_s = [119.95]\nduration_s = 0.1\nimpulses_ns = [20.0]",
            ),
            "push_test.at_s[0]",
        ),
        (
            "walk3d_push_no_direction.toml",
            (
                "animation_s = 10.0",
                "animation_s = 10.0\n[push_test]\ndirections_world = [[0.0, 0.0, 0.0]]\nat_s = [2.0]\nduration_s = 0.1\nimpulses_ns = [20.0]",
            ),
            "push_test.directions_world[0]",
        ),
        (
            "walk3d_push_unknown_link.toml",
            (
                "animation_s = 10.0",
                "animation_s = 10.0\n[push_test]\nlink = \"pelvs\"\ndirections_world = [[1.0, 0.0, 0.0]]\nat_s = [2.0]\nduration_s = 0.1\nimpulses_ns = [20.0]",
            ),
            "push_test.link",
        ),
        (
            "walk3d_bad_forward_speed.toml",
            (
                "animation_s = 10.0",
                "animation_s = 10.0\n[speed_tuning]\ntargets_m_s = [1.0, 1e9]",
            ),
            "speed_tuning.targets_m_s[1]",
        ),
        (
            "walk3d_bad_speed.toml",
            ("[0.0, 0.2, -0.2]", "[0.0, 9.0]"),
            "coronal_speeds_m_s[1]",
        ),
    ] {
        let file = scenario_copy(&dir, name, WALK3D, &[edit]);
        let run = hil_run(&[file.to_str().unwrap_or_default()], &out);
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(name) && err.contains(field), "{name}: {err}");
        assert!(!out.join("report.json").exists(), "{name}");
    }
}

/// The ground-contact stabiliser on the humanoid at 1.5 kHz, predicting on M5 and on the whole
/// character: both walks stand the whole run, the stabiliser answers every tick (a supplement
/// or none, never a failure), its supplements are predicted to spread the stance foot's force
/// (the mean r_sag with them above the mean without, over the ticks it acted), and the
/// plant's four sole corners are counted on every stance tick.
#[test]
fn the_contact_stabiliser_acts_on_every_tick_of_a_walk() {
    let out = out_dir("walk3d_stabiliser");
    let (_, r) = run_walk3d(
        &out,
        "walk3d_stabiliser_e2e.toml",
        &[
            (
                CONTROLLERS,
                "controllers = [\"simbicon3d\", \"simbicon3d_stabilised\", \"simbicon3d_stabilised_m0\"]",
            ),
            ("control_rates_hz = [300.0]", "control_rates_hz = [1500.0]"),
            ("duration_s = 120.0", "duration_s = 6.0"),
            ("animation_s = 10.0", "animation_s = 0.0"),
        ],
    );
    let ticks = 6.0 * 1500.0;
    for name in [
        "simbicon3d",
        "simbicon3d_stabilised",
        "simbicon3d_stabilised_m0",
    ] {
        let x = run_of(&r, name, 1500.0);
        assert_eq!(x["walked"], true, "{name}: {x:#}");
        let c = &x["contacts"];
        let stance = num(&c["stance_ticks"]);
        assert!(stance > 0.5 * ticks && stance <= ticks, "{name}: {c:#}");
        let share = num(&c["disequilibrium_share"]);
        assert!((0.0..=1.0).contains(&share), "{name}: {c:#}");
        let st = &x["stabiliser"];
        if name == "simbicon3d" {
            assert!(st.is_null(), "{name}: {st:#}");
            continue;
        }
        assert_eq!(st["model"], if name.ends_with("m0") { "M0" } else { "M5" });
        assert_eq!(num(&st["failed_ticks"]), 0.0, "{name}: {st:#}");
        let answered = num(&st["improved_ticks"]) + num(&st["kept_ticks"]);
        assert!(
            (answered - ticks).abs() <= 2.0,
            "{name}: {answered} of {ticks}: {st:#}"
        );
        assert!(num(&st["improved_ticks"]) > 0.0, "{name}: {st:#}");
        let [before, after] = [0, 1].map(|k| num(&st["predicted_r"][k][0]));
        assert!(after > before, "{name}: r_sag {before} → {after}");
    }
    let csv = std::fs::read_to_string(out.join("runs.csv")).unwrap_or_default();
    assert!(
        csv.lines()
            .next()
            .unwrap_or("")
            .ends_with("disequilibrium_share,stabiliser_improved_ticks,forward_speed_error_m_s"),
        "{csv}"
    );
}

/// The low rate: at 300 Hz, the plant stepping once per control tick, Cartwheel's gains
/// through stable PD walk the whole 200-step perturbed walk (120 s) with and without the
/// ground-contact stabiliser, every tick's stable PD solved, no torque cut; the stabiliser
/// lowers the share of stance ticks whose sole corners are in disequilibrium by at least a
/// fifth; Cartwheel's gains without stable PD fall within seconds.
#[test]
fn stable_pd_walks_200_steps_at_300_hz_with_the_stabiliser_cutting_disequilibria() {
    let out = out_dir("walk3d_stable_pd");
    let (_, r) = run_walk3d(
        &out,
        "walk3d_stable_pd_e2e.toml",
        &[
            (
                CONTROLLERS,
                "controllers = [\"simbicon3d\", \"simbicon3d_stable_pd\", \"simbicon3d_stable_pd_stabilised\"]",
            ),
            ("animation_s = 10.0", "animation_s = 0.0"),
        ],
    );
    assert_eq!(r["complete"], true);
    let plain = run_of(&r, "simbicon3d", 300.0);
    assert_eq!(plain["walked"], false, "{plain:#}");
    assert!(num(&plain["fell_at_s"]) < 5.0, "{plain:#}");
    assert!(plain.get("stable_pd").is_none(), "{plain:#}");
    let mut shares = Vec::new();
    for name in ["simbicon3d_stable_pd", "simbicon3d_stable_pd_stabilised"] {
        let x = run_of(&r, name, 300.0);
        assert_eq!(x["walked"], true, "{name}: {x:#}");
        assert!(x["steps"].as_u64().unwrap_or(0) >= 200, "{name}: {x:#}");
        let v = num(&x["mean_speed_m_s"]);
        assert!((0.6..1.0).contains(&v), "{name}: {x:#}");
        assert_eq!(x["limited_joint_ticks"], 0, "{name}: {x:#}");
        let sp = &x["stable_pd"];
        assert!(
            (num(&sp["ticks"]) - 120.0 * 300.0).abs() <= 1.0,
            "{name}: {sp:#}"
        );
        assert_eq!(sp["fallback_ticks"], 0, "{name}: {sp:#}");
        let share = num(&x["contacts"]["disequilibrium_share"]);
        assert!((0.0..=1.0).contains(&share), "{name}: {x:#}");
        shares.push(share);
    }
    let st = &run_of(&r, "simbicon3d_stable_pd_stabilised", 300.0)["stabiliser"];
    assert_eq!(st["failed_ticks"], 0, "{st:#}");
    assert!(num(&st["improved_ticks"]) > 0.0, "{st:#}");
    assert!(
        shares[1] <= 0.8 * shares[0],
        "disequilibrium without the stabiliser {} and with it {}",
        shares[0],
        shares[1]
    );
}
