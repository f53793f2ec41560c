//! End-to-end: a plant that lies with well-formed frames (tests/relay_plant.rs between hil and
//! the real plant: every frame it changes carries a correct checksum). hil owns the run's clock:
//! each lie is refused and counted by reason, ends the run as a lost plant (exit 1, a report
//! marked incomplete with the reason) within the watchdog window plus a second, with bounded
//! output, and never loses a result that had finished. The ball-blocking scenario, lockstep.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use e2e::{executable, hil, out_dir, report};

/// The watchdog window of these runs, ms.
const WINDOW_MS: u64 = 300;

/// `hil run [extra] --watchdog-ms 300 --out <out>` with the relay behaving as `relay`; returns
/// the output and how long hil took.
fn run_relay(relay: &str, extra: &[&str], out: &Path, quiet: bool) -> (Output, Duration) {
    let counter = out.with_extension("counter");
    let _ = std::fs::remove_file(&counter);
    let mut c = hil();
    c.env("HIL_SIM_HOST", executable("relay-plant"))
        .env("RELAY", relay)
        .env("RELAY_REAL_PLANT", executable("hil"))
        .env("RELAY_COUNTER", &counter)
        .arg("run")
        .args(extra)
        .args(["--watchdog-ms", &WINDOW_MS.to_string(), "--out"])
        .arg(out);
    if quiet {
        c.arg("--quiet");
    }
    let t0 = Instant::now();
    let output = c.output().expect("run hil");
    (output, t0.elapsed())
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The count under `reason` in `faults.rejected_by_reason`.
fn rejected(r: &serde_json::Value, reason: &str) -> u64 {
    r["faults"]["rejected_by_reason"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p[0] == reason)
        .map(|p| p[1].as_u64().unwrap_or(0))
        .sum()
}

/// A lie that ends the run as a lost plant: exit 1, report incomplete with `reason_has` in its
/// reason, `key` counted (if given), within the window plus a second of the run's few tenths.
fn assert_lost(relay: &str, key: Option<&str>, reason_has: &str) -> serde_json::Value {
    let out = out_dir(&format!("hostile_{}", relay.replace([':', '.'], "_")));
    let (o, took) = run_relay(relay, &["--only", "analytic"], &out, true);
    assert_eq!(o.status.code(), Some(1), "{relay}: {}", stderr(&o));
    let r = report(&out);
    assert_eq!(r["complete"], false, "{relay}");
    let why = r["incomplete_reason"].as_str().unwrap_or_default();
    assert!(why.contains(reason_has), "{relay}: {why}");
    assert_eq!(r["faults"]["plant_lost"], true, "{relay}");
    if let Some(key) = key {
        assert!(rejected(&r, key) >= 1, "{relay}: {}", r["faults"]);
        assert!(r["faults"]["first_rejected_state"].is_string(), "{relay}");
    }
    // The honest part of the run takes about 0.1 s; the lie costs the window, not more.
    assert!(
        took < Duration::from_millis(WINDOW_MS) + Duration::from_secs(2),
        "{relay}: {took:?}"
    );
    // Nothing the plant said after its lie reached the trajectory: 800 steps at most.
    let csv = std::fs::read_to_string(out.join("trajectory.csv")).unwrap_or_default();
    assert!(
        csv.lines().count() <= 802,
        "{relay}: {} rows",
        csv.lines().count()
    );
    r
}

#[test]
fn an_early_final_state_is_a_lost_plant_not_a_complete_run() {
    let r = assert_lost("final-at:100", None, "ended the run early");
    let why = r["incomplete_reason"].as_str().unwrap_or_default();
    assert!(
        why.contains("step 100") && why.contains("step 800"),
        "{why}"
    );
    // Lost at the state before it: t = 99 steps.
    let at = r["faults"]["plant_lost_at_s"].as_f64().unwrap();
    assert!((at - 0.495).abs() < 1e-9, "{at}");
}

#[test]
fn implausible_positions_are_refused() {
    let r = assert_lost(
        "positions:100:1e300",
        Some("state_implausible"),
        "no valid state",
    );
    let first = r["faults"]["first_rejected_state"].as_str().unwrap();
    assert!(first.contains("joint position"), "{first}");
    // The safe state: computed from the last state hil took (step 99), addressed to the step
    // the lockstep plant waits at (100), so that the plant applies it.
    let safe = &r["faults"]["safe_state"];
    assert_eq!(safe["computed_from_step"], 99, "{safe}");
    assert_eq!(safe["sent_at_step"], 100, "{safe}");
    assert_eq!(safe["applied_by_plant"], true, "{safe}");
}

#[test]
fn time_that_runs_backwards_stands_still_or_jumps_is_refused() {
    for lie in ["time-backwards:100", "time-frozen:100", "time-jump:100"] {
        assert_lost(lie, Some("state_wrong_time"), "no valid state");
    }
}

#[test]
fn a_frozen_or_jumping_step_is_refused() {
    assert_lost(
        "step-frozen:100",
        Some("state_out_of_order"),
        "no valid state",
    );
    assert_lost("step-jump:100", Some("state_beyond_end"), "no valid state");
}

#[test]
fn empty_states_do_not_feed_the_watchdog() {
    assert_lost("empty:100", Some("state_unusable"), "no valid state");
}

#[test]
fn a_flood_of_step_zero_states_ends_within_the_window() {
    let r = assert_lost("flood:100", Some("state_out_of_order"), "no valid state");
    assert!(rejected(&r, "state_out_of_order") > 10, "{}", r["faults"]);
}

#[test]
fn a_plant_that_fails_after_its_last_state_keeps_the_run() {
    let out = out_dir("hostile_exit_after_final");
    let (o, _) = run_relay("exit-after-final:3", &[], &out, true);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = report(&out);
    assert_eq!(r["complete"], true);
    assert_eq!(r["controllers"].as_array().map(Vec::len), Some(3));
    let exit = r["faults"]["plant_exit"].as_str().unwrap_or_default();
    assert!(exit.contains("status 3"), "{exit}");
    assert!(stderr(&o).contains("WARNING"), "{}", stderr(&o));
}

#[test]
fn a_plant_that_lingers_after_its_last_state_is_ended_and_the_run_kept() {
    let out = out_dir("hostile_linger");
    let (o, took) = run_relay("linger", &["--only", "analytic"], &out, true);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = report(&out);
    assert_eq!(r["complete"], true);
    let exit = r["faults"]["plant_exit"].as_str().unwrap_or_default();
    assert!(exit.contains("killed"), "{exit}");
    // hil waits the window, at least a second, for the plant to go.
    assert!(took < Duration::from_secs(4), "{took:?}");
}

/// A multi-run scenario (three controllers, a plant each) whose third plant dies mid-run: the
/// two finished runs are kept and reported, the third is marked, exit 1.
#[test]
fn a_third_plant_dying_keeps_the_first_two_runs() {
    let out = out_dir("hostile_third_dies");
    let (o, _) = run_relay("die-on-run:3:200", &[], &out, true);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let r = report(&out);
    assert_eq!(r["complete"], false);
    let why = r["incomplete_reason"].as_str().unwrap_or_default();
    assert!(why.contains("static_timing"), "{why}");
    let names: Vec<&str> = r["controllers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(names, ["analytic", "fixed_gain", "static_timing"]);
    // The analytic run finished whole: all four balls were judged.
    assert_eq!(r["controllers"][0]["blocked"], 4, "{}", r["controllers"][0]);
}

#[test]
fn an_honest_relay_changes_nothing_and_progress_goes_one_line_per_run() {
    let out = out_dir("hostile_honest");
    let (o, _) = run_relay("honest", &[], &out, false);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = report(&out);
    assert_eq!(r["complete"], true);
    assert_eq!(r["faults"]["rejected_frames"], 0);
    assert!(r["faults"]["plant_exit"].is_null());
    // stderr is a pipe here: one line per run, with the simulated time reached.
    let err = stderr(&o);
    for (k, name) in ["analytic", "fixed_gain", "static_timing"]
        .iter()
        .enumerate()
    {
        assert!(
            err.contains(&format!(
                "hil: {name} {k}/3 (lockstep): complete at t = 4.00 of 4.00 s",
                k = k + 1
            )),
            "{err}"
        );
    }
}

#[test]
fn in_real_time_an_early_final_state_is_a_lost_plant_too() {
    let _rt = e2e::realtime_exclusive();
    let out = out_dir("hostile_realtime_final");
    let (o, _) = run_relay(
        "final-at:100",
        &[
            "--mode",
            "realtime",
            "--only",
            "analytic",
            "--priority",
            "0",
        ],
        &out,
        true,
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let r = report(&out);
    assert_eq!(r["complete"], false);
    let why = r["incomplete_reason"].as_str().unwrap_or_default();
    assert!(why.contains("ended the run early"), "{why}");
}

/// Lies at random (tests/relay_plant.rs `random:SEED`: a field of 1e300, time, step or sequence
/// shifted, an early final flag, no joints, a frame repeated or dropped), 24 seeded runs: every
/// run ends within the window plus a second of its honest length, with a report; it is complete
/// exactly when no lie but a repeated frame was told, and a repeated frame is only counted.
#[test]
fn random_lies_each_end_the_run_cleanly_and_are_never_taken() {
    for seed in 1..=24u64 {
        let out = out_dir(&format!("hostile_random_{seed}"));
        let log = out.with_extension("lies");
        let _ = std::fs::remove_file(&log);
        let counter = out.with_extension("counter");
        let _ = std::fs::remove_file(&counter);
        let t0 = Instant::now();
        let o = hil()
            .env("HIL_SIM_HOST", executable("relay-plant"))
            .env("RELAY", format!("random:{seed}"))
            .env("RELAY_REAL_PLANT", executable("hil"))
            .env("RELAY_LOG", &log)
            .env("RELAY_COUNTER", &counter)
            .args(["run", "--only", "analytic", "--quiet", "--watchdog-ms"])
            .arg(WINDOW_MS.to_string())
            .arg("--out")
            .arg(&out)
            .output()
            .expect("run hil");
        let took = t0.elapsed();
        let lies = std::fs::read_to_string(&log).unwrap_or_default();
        let harmful: Vec<&str> = lies.lines().filter(|l| !l.starts_with("repeat ")).collect();
        let r = report(&out);
        let code = o.status.code();
        assert!(
            took < Duration::from_millis(WINDOW_MS) + Duration::from_secs(2),
            "seed {seed}: {took:?}"
        );
        if harmful.is_empty() {
            assert_eq!(code, Some(0), "seed {seed}: {lies} {}", stderr(&o));
            assert_eq!(r["complete"], true, "seed {seed}");
            let repeats = lies.lines().count() as u64;
            assert_eq!(rejected(&r, "repeated"), repeats, "seed {seed}");
        } else {
            assert_eq!(code, Some(1), "seed {seed}: {lies} {}", stderr(&o));
            assert_eq!(r["complete"], false, "seed {seed}");
            // Lost at the state before the first harmful lie, never later.
            let first: f64 = harmful[0]
                .split(' ')
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(f64::NAN);
            let at = r["faults"]["plant_lost_at_s"].as_f64().unwrap_or(f64::NAN);
            assert!(
                (at - (first - 1.0) * 0.005).abs() < 1e-9,
                "seed {seed}: lost at {at}, first lie at step {first}"
            );
        }
        let rows = std::fs::read_to_string(out.join("trajectory.csv"))
            .unwrap_or_default()
            .lines()
            .count();
        assert!(rows <= 802, "seed {seed}: {rows} rows");
    }
}
