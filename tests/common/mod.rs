//! Helpers of the end-to-end tests: where the executables are, running `hil`, reading its
//! outputs. Test support only.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The folder holding the workspace's executables for this build profile (`target/release/`
/// when the tests run with `--release`): the test binary lives in its `deps/`.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let deps = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    deps.parent().map(Path::to_path_buf).unwrap_or(deps)
}

/// The path of executable `name`, with a message that says how to build it when it is missing.
pub fn executable(name: &str) -> PathBuf {
    let p = bin_dir().join(name);
    assert!(
        p.is_file(),
        "{} not found: run the tests with `cargo test --workspace --release` (it builds hil and sim-host first)",
        p.display()
    );
    p
}

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// A fresh, empty output folder for one test.
pub fn out_dir(test: &str) -> PathBuf {
    let dir = bin_dir().join("e2e-out").join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_default();
    dir
}

/// `hil` as a user runs it: its plant is `hil` itself re-executed (no `HIL_SIM_HOST`).
pub fn hil() -> Command {
    let mut c = Command::new(executable("hil"));
    c.env_remove("HIL_SIM_HOST");
    c
}

/// Run `hil run` with `args` into `out`; returns the process output.
pub fn hil_run(args: &[&str], out: &Path) -> Output {
    hil()
        .arg("run")
        .args(args)
        .arg("--out")
        .arg(out)
        .arg("--quiet")
        .output()
        .unwrap_or_else(|e| panic!("cannot run hil: {e}"))
}

/// `report.json` of a finished run.
pub fn report(out: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(out.join("report.json"))
        .unwrap_or_else(|e| panic!("no report.json in {}: {e}", out.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("report.json is not JSON: {e}"))
}

/// The controller entry named `name` in a report.
pub fn controller<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["controllers"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no controller {name} in the report"))
}

/// The folder a run's outputs are staged in (the plant's command line names its scene.json
/// there).
pub fn staging_needle(out: &Path) -> String {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    out.with_file_name(format!(".{name}.partial-"))
        .to_string_lossy()
        .into_owned()
}

/// Pids of the live processes whose command line mentions `needle` (e.g. a test's own folder).
pub fn processes_mentioning(needle: &str) -> Vec<i32> {
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

/// Start `hil run <args> --quiet --out <out>` (a run long enough to be interrupted), wait until
/// its plant process is running and 300 ms more, send `signal` to the plant (or to `hil` itself
/// when `to_hil`), and return what `hil` did and how long it took to exit after the signal.
/// Asserts that no process of the run is left behind.
pub fn signal_mid_run(args: &[&str], out: &Path, signal: i32, to_hil: bool) -> (Output, Duration) {
    let child = hil()
        .arg("run")
        .args(args)
        .args(["--quiet", "--out"])
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run hil: {e}"));
    // The plant's command line names the scene file in this run's staging folder.
    let needle = staging_needle(out);
    let start = Instant::now();
    let plant = loop {
        if let Some(pid) = processes_mentioning(&needle).first() {
            break *pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the plant never started"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    std::thread::sleep(Duration::from_millis(300));
    let target = if to_hil {
        i32::try_from(child.id()).unwrap_or(0)
    } else {
        plant
    };
    // SAFETY: kill(2) on a pid we just found; the worst case of a reused pid is a signal to an
    // unrelated process of this test's user, and the pid was seen running a moment ago.
    let rc = unsafe { libc::kill(target, signal) };
    assert_eq!(rc, 0, "cannot send the signal");
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
        "orphan plant left behind"
    );
    (output, took)
}

/// Serialises the real-time runs of one test binary: two SCHED_FIFO control threads and their
/// plants on a 2-core machine would measure each other. Hold the guard for the whole run.
pub fn realtime_exclusive() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    // A test that panicked while holding it leaves nothing to repair.
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `hil run <args> --quiet --out <out>` against the fake plant (`tests/fake_plant.rs`) behaving
/// as `behaviour` (`FAKE_PLANT`), with `joints` joints (`FAKE_PLANT_JOINTS`, its default when
/// `None`). Returns hil's output and the plant's torque log (a line per accepted torque frame),
/// kept next to `out` as `<out's name>.plant.log`.
pub fn run_against_fake_plant(
    behaviour: &str,
    joints: Option<usize>,
    args: &[&str],
    out: &Path,
) -> (Output, String) {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let log = out.with_file_name(format!("{name}.plant.log"));
    let _ = std::fs::remove_file(&log);
    let mut command = hil();
    command
        .env("HIL_SIM_HOST", executable("fake-plant"))
        .env("FAKE_PLANT", behaviour)
        .env("FAKE_PLANT_LOG", &log);
    if let Some(n) = joints {
        command.env("FAKE_PLANT_JOINTS", n.to_string());
    }
    let output = command
        .arg("run")
        .args(args)
        .args(["--quiet", "--out"])
        .arg(out)
        .output()
        .unwrap_or_else(|e| panic!("cannot run hil: {e}"));
    (output, std::fs::read_to_string(&log).unwrap_or_default())
}

/// Write `source` with `edits` applied (each must change something) to `dir/name`, its
/// `"../models/…"` paths made absolute (a shipped scenario's are relative to the scenarios
/// folder); returns the file's path.
pub fn scenario_copy(dir: &Path, name: &str, source: &str, edits: &[(&str, &str)]) -> PathBuf {
    let mut text = source.to_owned();
    for (from, to) in edits {
        assert!(text.contains(from), "{name}: `{from}` not in the scenario");
        text = text.replacen(from, to, 1);
    }
    let models = workspace_root().join("models");
    let text = text.replace("\"../models/", &format!("\"{}/", models.display()));
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
    file
}

/// The robots folder of example-robot-data, from `scripts/example-robot-data.sh` (which installs
/// the package with pip into a cache when it is missing); a failure is the calling test's, with
/// the script's message.
pub fn robots_dir() -> PathBuf {
    let out = Command::new("sh")
        .arg(workspace_root().join("scripts/example-robot-data.sh"))
        .output()
        .expect("run scripts/example-robot-data.sh");
    assert!(
        out.status.success(),
        "scripts/example-robot-data.sh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}
