//! Faults end to end: a broken scenario file, and a plant process killed mid-run.

use e2e::{hil, hil_run, out_dir, report};

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
    assert!(err.contains("> 0"), "gives the reason: {err}");
    assert!(!out.join("report.json").exists());

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

/// Pids of the live processes whose command line mentions `needle` (e.g. a test's own folder).
fn processes_mentioning(needle: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let state = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // A zombie is not running; skip it (its parent reaps it).
        let zombie = state
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(needle) {
            pids.push(pid);
        }
    }
    pids
}

/// Start a long lockstep run (300 s of simulated time, several seconds of wall time), wait until
/// its sim-host child is running, send it `signal`, and return what `hil` did and how long it
/// took to exit after the signal.
fn run_and_hurt_the_plant(
    test: &str,
    signal: i32,
) -> (
    std::process::Output,
    std::time::Duration,
    std::path::PathBuf,
) {
    use std::time::{Duration, Instant};
    let out = out_dir(test);
    let file = out.join("long.toml");
    let text =
        include_str!("../scenarios/ball_blocking.toml").replace("end_s = 4.0", "end_s = 300.0");
    std::fs::write(&file, text).unwrap_or_default();
    let child = hil()
        .args([
            "run",
            file.to_str().unwrap_or_default(),
            "--only",
            "analytic",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run hil: {e}"));
    // The plant's command line names the scene file in this test's folder.
    let needle = out.join("scene.json").to_string_lossy().into_owned();
    let start = Instant::now();
    let plant = loop {
        if let Some(pid) = processes_mentioning(&needle).first() {
            break *pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "sim-host never started"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill(2) on a pid we just found; the worst case of a reused pid is a signal to an
    // unrelated process of this test's user, and the pid was seen running a moment ago.
    let rc = unsafe { libc::kill(plant, signal) };
    assert_eq!(rc, 0, "cannot signal the plant");
    let hurt = Instant::now();
    let output = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    let took = hurt.elapsed();
    // Nothing of this run may be left behind.
    let start = Instant::now();
    while !processes_mentioning(&needle).is_empty() && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        processes_mentioning(&needle),
        Vec::<i32>::new(),
        "orphan sim-host left behind"
    );
    (output, took, out)
}

/// Killing sim-host mid-run: hil exits non-zero within 1 s, names what happened, and the report
/// says plant_lost and safe_state.
#[test]
fn killing_the_plant_ends_the_run_in_the_safe_state() {
    let (output, took, out) = run_and_hurt_the_plant("killed", libc::SIGKILL);
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        took < std::time::Duration::from_secs(1),
        "hil took {took:?} to notice"
    );
    assert!(
        err.contains("plant lost") && err.contains("closed its link"),
        "{err}"
    );
    let r = report(&out);
    assert_eq!(r["faults"]["plant_lost"], true);
    assert_eq!(r["faults"]["safe_state"], true);
    assert!(
        r["faults"]["plant_lost_at_s"]
            .as_f64()
            .is_some_and(|t| t > 0.0 && t < 300.0)
    );
}

/// A plant that hangs (stopped, so its socket stays open) is detected by the watchdog: hil exits
/// non-zero within 1 s, the report counts the trip, and the stopped child is killed.
#[test]
fn a_hung_plant_trips_the_watchdog() {
    let (output, took, out) = run_and_hurt_the_plant("hung", libc::SIGSTOP);
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        took < std::time::Duration::from_secs(1),
        "hil took {took:?} to notice"
    );
    assert!(err.contains("hung"), "{err}");
    let r = report(&out);
    assert_eq!(r["faults"]["plant_lost"], true);
    assert_eq!(r["faults"]["safe_state"], true);
    assert_eq!(r["faults"]["watchdog_trips"], 1);
}
