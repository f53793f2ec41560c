//! The main job end to end, in lockstep: real `hil` and `sim-host` processes, outcomes read from
//! `report.json` and `trajectory.csv`.

use e2e::{
    controller, executable, hil, hil_run, out_dir, realtime_exclusive, report, workspace_root,
};

fn assert_outcome(report: &serde_json::Value, max_analytic_error_rad: f64) {
    let analytic = controller(report, "analytic");
    assert_eq!(analytic["targets"], 4);
    assert_eq!(analytic["blocked"], 4, "analytic: {analytic:#}");
    let max = analytic["max_arrival_error_rad"]
        .as_f64()
        .unwrap_or(f64::NAN);
    assert!(
        max <= max_analytic_error_rad,
        "analytic max arrival error {max} rad > {max_analytic_error_rad}"
    );
    let fixed = controller(report, "fixed_gain");
    let blocked: Vec<bool> = fixed["blocked_per_target"]
        .as_array()
        .map(|a| a.iter().map(|b| b.as_bool() == Some(true)).collect())
        .unwrap_or_default();
    assert_eq!(
        blocked.first(),
        Some(&true),
        "fixed gain blocks the first ball"
    );
    let missed_later = blocked.iter().skip(1).filter(|b| !**b).count();
    assert!(
        missed_later >= 2,
        "fixed gain misses {missed_later} later balls: {fixed:#}"
    );
    assert!(
        report["controllers"]
            .as_array()
            .is_some_and(|c| c.len() == 3)
    );
    assert_eq!(report["faults"]["plant_lost"], false);
    assert_eq!(report["faults"]["rejected_frames"], 0);
}

/// The default scenario (with the 10 kg weights): analytic 4/4 within 1e-2 rad, fixed gain
/// blocks the first ball and misses at least two later ones.
#[test]
fn default_scenario_in_lockstep_reaches_the_outcome() {
    let out = out_dir("default");
    let run = hil_run(&[], &out);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let r = report(&out);
    assert_eq!(r["mode"], "lockstep");
    assert_eq!(r["control_rate_hz"], 200.0);
    assert_outcome(&r, 1e-2);
    // The arrival gains meet the 5 ms sampling limit on the last tick before the fourth target
    // (deterministic in lockstep: one `gain_clamped` tick, damping exactly at the limit).
    let a = controller(&r, "analytic");
    assert!(
        a["status_counts"]["gain_clamped"].as_u64().unwrap_or(0) > 0,
        "{:#}",
        a["status_counts"]
    );
    assert_eq!(
        a["max_damping_nms_per_rad"], a["damping_limit_nms_per_rad"],
        "{a:#}"
    );
    for f in ["trajectory.csv", "angle.svg", "latency.svg", "scene.json"] {
        assert!(out.join(f).is_file(), "{f} written");
    }
    // The plots explain themselves: the weight ticks have a legend entry, and the latency plot
    // shows each controller as its own series.
    let angle = std::fs::read_to_string(out.join("angle.svg")).unwrap_or_default();
    assert!(angle.contains("weight hits the arm"), "angle.svg legend");
    let latency = std::fs::read_to_string(out.join("latency.svg")).unwrap_or_default();
    for name in ["analytic", "fixed_gain", "static_timing"] {
        assert!(latency.contains(name), "latency.svg names {name}");
    }
}

/// Without `--quiet` and with stderr not a terminal (a log file, CI), the progress display draws
/// nothing: no carriage returns in the log.
#[test]
fn progress_is_not_drawn_into_a_log() {
    let out = out_dir("progress");
    let run = hil()
        .args(["run", "--only", "analytic", "--out"])
        .arg(&out)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        !err.contains('\r'),
        "carriage return in a non-terminal stderr: {err:?}"
    );
}

/// Without the weights: analytic within 5e-3 rad.
#[test]
fn no_weights_scenario_in_lockstep_reaches_the_outcome() {
    let out = out_dir("no_weights");
    let file = workspace_root().join("scenarios/ball_blocking_no_weights.toml");
    let run = hil_run(&[file.to_str().unwrap_or_default()], &out);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_outcome(&report(&out), 5e-3);
}

/// Two lockstep runs with the same seed write bit-identical trajectories, whether the plant is
/// `hil` re-executed (the default) or the standalone `sim-host` binary.
#[test]
fn lockstep_runs_are_bit_identical() {
    let (a, b) = (out_dir("replay_a"), out_dir("replay_b"));
    let run = hil_run(&[], &a);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let run = hil()
        .env("HIL_SIM_HOST", executable("sim-host"))
        .args(["run", "--quiet", "--out"])
        .arg(&b)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let read = |d: &std::path::Path| std::fs::read(d.join("trajectory.csv")).unwrap_or_default();
    let (ta, tb) = (read(&a), read(&b));
    assert!(ta.len() > 10_000, "trajectory has {} bytes", ta.len());
    assert!(
        ta == tb,
        "trajectory.csv differs between two runs of the same seed"
    );
}

/// Real time: the controller on its SCHED_FIFO thread against the wall-clock plant blocks every
/// ball too. Timing is recorded (one wake-up latency per tick), never asserted.
#[test]
fn realtime_mode_runs_the_control_thread_and_blocks_every_ball() {
    let _alone = realtime_exclusive();
    let out = out_dir("realtime");
    let run = hil_run(&["--mode", "realtime", "--only", "analytic"], &out);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let r = report(&out);
    assert_eq!(r["mode"], "realtime");
    let analytic = controller(&r, "analytic");
    assert_eq!(analytic["blocked"], 4, "{analytic:#}");
    let timing = &r["timing"];
    assert!(timing["sched_fifo"].is_boolean());
    let ticks = timing["wake_latency_us"]["count"].as_u64().unwrap_or(0);
    let skipped = timing["skipped_releases"].as_u64().unwrap_or(u64::MAX);
    // 4 s at 200 Hz: about 800 releases (the loop stops at the plant's final state). On a loaded
    // machine some are skipped after overruns: each release is either run (one latency recorded)
    // or counted as skipped, never lost.
    let releases = ticks.saturating_add(skipped);
    assert!(
        (700..=900).contains(&releases),
        "{ticks} ticks recorded + {skipped} skipped releases"
    );
    assert!(timing["round_trip_us"]["count"].as_u64().unwrap_or(0) > 0);
    assert_eq!(r["faults"]["plant_lost"], false);
}

/// Real time with the controller ticking at 1 kHz on a plant stepping every 5 ms: the gains are
/// clamped for the 5 ms at which fresh states arrive (not the 1 ms tick), and the watchdog counts
/// state periods: its window is 5 state periods = 25 ticks, so the 4 ticks between two fresh
/// states never trip it. (Before the fix: damping 247.6 above the 176.9 limit, no tick reported
/// `gain_clamped`, a 5-tick window and three watchdog trips on a quiet machine.) A loaded machine
/// can silence the plant for longer than 25 ms: a trip then must come with such a silence.
#[test]
fn realtime_control_faster_than_the_plant_clamps_for_the_state_period() {
    let _alone = realtime_exclusive();
    let out = out_dir("realtime_1khz_on_5ms");
    let file = out.with_file_name("realtime_1khz_on_5ms.toml");
    let text = include_str!("../scenarios/ball_blocking.toml")
        .replace("control_rate_hz = 200.0", "control_rate_hz = 1000.0");
    std::fs::write(&file, text).unwrap_or_default();
    let run = hil_run(
        &[
            file.to_str().unwrap_or_default(),
            "--mode",
            "realtime",
            "--only",
            "analytic",
        ],
        &out,
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let r = report(&out);
    let a = controller(&r, "analytic");
    assert_eq!(a["timing"]["state_period_s"], 0.005);
    assert_eq!(a["timing"]["control_period_s"], 0.001);
    let (used, limit) = (
        a["max_damping_nms_per_rad"].as_f64().unwrap_or(f64::NAN),
        a["damping_limit_nms_per_rad"].as_f64().unwrap_or(f64::NAN),
    );
    // The 5 ms limit of the 200 Hz loop: 0.8 · 4(√2 − 1) · I / h with I = 2(1/3 + 0.06²/12).
    let inertia = 2.0 * (1.0 / 3.0 + 0.06 * 0.06 / 12.0);
    let expected = 0.8 * 4.0 * (2f64.sqrt() - 1.0) * inertia / 0.005;
    assert!(
        (limit - expected).abs() < 1e-9 * expected,
        "limit {limit}, expected {expected}"
    );
    // Never above the 5 ms limit. Whether a tick meets it (`gain_clamped`) is not asserted in
    // real time: the clamp acts on one tick, the last before the fourth target's arrival, and
    // when the loop's timing puts that tick past the solvable point it reports `infeasible`
    // instead (seen once in CI: no clamped tick, damping 156.7 against the 176.9 limit). The
    // lockstep test asserts the clamp acting, deterministically.
    assert!(used <= limit, "damping {used} above the limit {limit}");
    let timing = &a["timing"];
    assert_eq!(timing["watchdog_ticks"], 25, "{timing:#}");
    let longest = timing["longest_stale_ticks"].as_u64().unwrap_or(u64::MAX);
    // Between two fresh states the 1 kHz loop polls about 5 times: at least 4 stale ticks.
    assert!((4..u64::MAX).contains(&longest), "{timing:#}");
    let trips = a["faults"]["watchdog_trips"].as_u64().unwrap_or(u64::MAX);
    assert!(
        trips == 0 || longest >= 25,
        "{trips} watchdog trips without a 25-tick silence: {timing:#} {:#}",
        a["faults"]
    );
}
