//! Faults end to end, each asserted from what the system did (exit code, report.json, what the
//! plant received): a broken scenario file; a plant that is killed, hangs, sends only garbage,
//! goes silent, or never starts; SIGINT and SIGTERM mid-run.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use e2e::{hil, hil_run, out_dir, report, run_against_fake_plant, signal_mid_run, staging_needle};

/// A scenario with a wrong field gets an error naming the file, the field and the reason, and
/// exit status 2, without starting any plant.
#[test]
fn a_broken_scenario_file_names_the_file_the_field_and_the_reason() {
    let out = out_dir("broken");
    let file = out.join("broken.toml");
    let text =
        include_str!("../scenarios/ball_blocking.toml").replace("mass_kg = 2.0", "mass_kg = -2.0");
    std::fs::write(&file, text).unwrap_or_default();
    let run = hil_run(&[file.to_str().unwrap_or_default()], &out);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(
        err.contains(file.to_str().unwrap_or("?")),
        "names the file: {err}"
    );
    assert!(err.contains("arm.mass_kg"), "names the field: {err}");
    assert!(err.contains("got -2"), "gives the reason: {err}");
    assert!(!out.join("report.json").exists());

    // Values the plant would refuse are refused here, naming the user's field (one schema).
    for (from, to, field) in [
        (
            "thickness_m = 0.06",
            "thickness_m = 50.0",
            "arm.thickness_m",
        ),
        ("mass_kg = 2.0", "mass_kg = 1e9", "arm.mass_kg"),
        (
            "gravity_m_s2 = 9.8",
            "gravity_m_s2 = 1e300",
            "arm.gravity_m_s2",
        ),
        (
            "control_rate_hz = 200.0",
            "control_rate_hz = 1e-300",
            "control_rate_hz",
        ),
    ] {
        let text = include_str!("../scenarios/ball_blocking.toml").replace(from, to);
        std::fs::write(&file, text).unwrap_or_default();
        for mode in ["lockstep", "realtime"] {
            let run = hil_run(&[file.to_str().unwrap_or_default(), "--mode", mode], &out);
            let err = String::from_utf8_lossy(&run.stderr);
            assert_eq!(run.status.code(), Some(2), "{to} ({mode}): {err}");
            assert!(err.contains(&format!("field `{field}`")), "{to}: {err}");
            assert!(!err.contains("scene.json"), "{to}: {err}");
        }
    }

    let missing = out.join("missing.toml");
    let run = hil_run(&[missing.to_str().unwrap_or_default()], &out);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot read"), "{err}");
}

/// `hil --help` lists the subcommands.
#[test]
fn help_lists_run_and_jitter() {
    let out = hil()
        .arg("--help")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.contains("run") && text.contains("jitter"), "{text}");
}

/// Start a long lockstep run (300 s of simulated time, several seconds of wall time) of the real
/// plant and send `signal` to the plant (or to `hil` itself) mid-run; return what `hil` did, how
/// long it took to exit after the signal, and the output folder.
fn run_and_signal(test: &str, signal: i32, to_hil: bool) -> (Output, Duration, PathBuf) {
    let out = out_dir(test);
    // Beside the output folder: a run replaces its folder whole, and refuses one holding files
    // that are not a run's.
    let file = out.with_extension("long.toml");
    let text =
        include_str!("../scenarios/ball_blocking.toml").replace("end_s = 4.0", "end_s = 300.0");
    std::fs::write(&file, text).unwrap_or_default();
    let (output, took) = signal_mid_run(
        &[file.to_str().unwrap_or_default(), "--only", "analytic"],
        &out,
        signal,
        to_hil,
    );
    (output, took, out)
}

/// A run with a misbehaving fake plant: `behaviour` (see fake_plant.rs), its torque log, what
/// `hil` did and how long it took.
fn run_with_fake_plant(
    test: &str,
    behaviour: &str,
    mode: &str,
) -> (Output, Duration, PathBuf, String) {
    let out = out_dir(test);
    let start = Instant::now();
    let (output, log) = run_against_fake_plant(
        behaviour,
        None,
        &["--only", "analytic", "--mode", mode],
        &out,
    );
    let took = start.elapsed();
    (output, took, out, log)
}

/// Killing the plant mid-run: hil exits 1 within 1 s, names what happened, reports plant_lost,
/// and its safe-state torque could not reach a dead plant (the report says so).
#[test]
fn killing_the_plant_ends_the_run_in_the_safe_state() {
    let (output, took, out) = run_and_signal("killed", libc::SIGKILL, false);
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(took < Duration::from_secs(1), "hil took {took:?} to notice");
    assert!(
        err.contains("plant lost") && err.contains("closed its link"),
        "{err}"
    );
    let r = report(&out);
    assert_eq!(r["complete"], false);
    assert_eq!(r["faults"]["plant_lost"], true);
    let t = r["faults"]["plant_lost_at_s"].as_f64().unwrap_or(-1.0);
    assert!(t > 0.0 && t < 300.0, "{t}");
    let safe = &r["faults"]["safe_state"];
    assert_eq!(safe["applied_by_plant"], false, "{safe:#}");
    assert!((safe["sent_at_s"].as_f64().unwrap_or(-1.0) - t).abs() < 1e-9);
}

/// A plant that hangs (stopped, its socket open) is found by the watchdog: hil exits 1 within
/// 1 s, counts one trip, and the safe-state frame reaches its socket.
#[test]
fn a_hung_plant_trips_the_watchdog() {
    let (output, took, out) = run_and_signal("hung", libc::SIGSTOP, false);
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(took < Duration::from_secs(1), "hil took {took:?} to notice");
    assert!(err.contains("hung"), "{err}");
    let r = report(&out);
    assert_eq!(r["faults"]["plant_lost"], true);
    assert_eq!(r["faults"]["watchdog_trips"], 1);
    assert_eq!(r["faults"]["safe_state"]["delivered_to_socket"], true);
}

/// A plant that sends only malformed frames (bad checksums, oversize datagrams) is lost after
/// the watchdog window, in both modes: every datagram is rejected and counted, and none extends
/// the wait. Its first datagram shows that the plant is up, so the wait is the window (500 ms),
/// not the start-up allowance (5 s).
#[test]
fn a_plant_that_sends_only_garbage_is_declared_lost() {
    for mode in ["lockstep", "realtime"] {
        let (output, took, out, _) =
            run_with_fake_plant(&format!("garbage_{mode}"), "garbage", mode);
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{mode}: {err}");
        // Start-up, the 500 ms window, and a second; well under the 5 s start-up allowance.
        assert!(took < Duration::from_millis(2500), "{mode}: took {took:?}");
        assert!(err.contains("no valid state"), "{mode}: {err}");
        let r = report(&out);
        assert_eq!(r["complete"], false);
        assert_eq!(r["faults"]["plant_lost"], true);
        let reasons = r["faults"]["rejected_by_reason"].to_string();
        assert!(
            reasons.contains("checksum") && reasons.contains("oversize"),
            "{reasons}"
        );
        assert!(r["faults"]["rejected_frames"].as_u64().unwrap_or(0) > 100);
        // No state was ever accepted: no safe state to send, no figure to make.
        assert!(r["faults"]["safe_state"].is_null());
        assert!(r["controllers"][0]["max_arrival_error_rad"].is_null());
    }
}

/// A plant that goes silent after step 100: the watchdog ends the run, and the plant received a
/// torque frame flagged SAFE_STATE answering step 100 (read from the plant's own log), the one
/// the report names.
#[test]
fn a_silent_plant_receives_the_safe_state_for_its_last_step() {
    let (output, _, out, log) = run_with_fake_plant("silent", "silent-after:100", "lockstep");
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{err}");
    let r = report(&out);
    let safe = &r["faults"]["safe_state"];
    assert_eq!(safe["sent_at_step"], 100, "{safe:#}");
    let seq = safe["torque_frame_sequence"].as_u64().unwrap_or(0);
    let line = log
        .lines()
        .find(|l| l.split(' ').nth(2) == Some("safe"))
        .unwrap_or_else(|| panic!("no safe-state frame reached the plant:\n{log}"));
    let fields: Vec<&str> = line.split(' ').collect();
    assert_eq!(fields.first(), Some(&seq.to_string().as_str()), "{line}");
    assert_eq!(fields.get(1), Some(&"100"), "{line}");
    // Every tick answered its own step once (steps 0..=100: 101 normal frames), then the safe
    // frame answered the last state again.
    assert_eq!(
        log.lines().filter(|l| l.contains(" normal ")).count(),
        101,
        "{log}"
    );
}

/// A plant that exits at once (`/bin/true`): a run with no samples ends at once with bounded
/// outputs: null figures in JSON and plots that say "no samples". (Before the fix memory grew
/// at ~1 GB/s building a log axis from inf to inf.)
#[test]
fn a_run_with_no_samples_writes_null_figures_and_says_no_samples() {
    let out = out_dir("no_samples");
    let start = Instant::now();
    let output = hil()
        .env("HIL_SIM_HOST", "/bin/true")
        .args(["run", "--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(output.status.code(), Some(1));
    let r = report(&out);
    assert_eq!(r["complete"], false);
    assert!(r["timing"]["round_trip_us"].is_null(), "{:#}", r["timing"]);
    assert!(r["controllers"][0]["plant_step_us"].is_null());
    for plot in ["angle.svg", "latency.svg"] {
        let svg = std::fs::read_to_string(out.join(plot)).unwrap_or_default();
        assert!(svg.contains("no samples"), "{plot}");
        assert!(svg.len() < 100_000, "{plot} is {} bytes", svg.len());
    }
}

/// A plant that cannot start: exit 1, an error naming it, and no output folder that looks like
/// a result.
#[test]
fn a_plant_that_cannot_start_leaves_no_output_folder() {
    let out = out_dir("no_plant");
    let _ = std::fs::remove_dir_all(&out);
    let output = hil()
        .env("HIL_SIM_HOST", "/nonexistent/plant")
        .args(["run", "--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.contains("/nonexistent/plant"), "{err}");
    assert!(!out.exists(), "an output folder was left behind");
    let staging = staging_needle(&out);
    let parent = out.parent().map(Path::to_path_buf).unwrap_or_default();
    let leftovers: Vec<_> = std::fs::read_dir(parent)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().to_string_lossy().starts_with(&staging))
        .collect();
    assert!(leftovers.is_empty(), "staging folder left: {leftovers:?}");
}

/// Ctrl-C (SIGINT) and SIGTERM mid-run: hil sends the plant its safe state (the plant applies
/// it), writes report.json with `"complete": false` and the reason, and exits 130 / 143.
#[test]
fn sigint_and_sigterm_write_an_incomplete_report_after_the_safe_state() {
    for (signal, code, name) in [
        (libc::SIGINT, 130, "SIGINT"),
        (libc::SIGTERM, 143, "SIGTERM"),
    ] {
        let (output, took, out) = run_and_signal(&format!("signal_{name}"), signal, true);
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "{name}: {err}");
        assert!(took < Duration::from_secs(2), "{name}: took {took:?}");
        let r = report(&out);
        assert_eq!(r["complete"], false);
        assert!(
            r["incomplete_reason"].as_str().unwrap_or("").contains(name),
            "{:#}",
            r["incomplete_reason"]
        );
        assert_eq!(r["faults"]["plant_lost"], false);
        assert_eq!(
            r["faults"]["safe_state"]["applied_by_plant"], true,
            "{name}: {:#}",
            r["faults"]
        );
    }
}

/// A finished run says so.
#[test]
fn a_finished_run_is_complete() {
    let out = out_dir("complete");
    let run = hil_run(&["--only", "static-timing"], &out);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let r = report(&out);
    assert_eq!(r["complete"], true);
    assert!(r["incomplete_reason"].is_null());
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains("report.json, trajectory.csv, angle.svg, latency.svg"),
        "{stdout}"
    );
}
