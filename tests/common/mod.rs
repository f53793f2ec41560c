//! Helpers of the end-to-end tests: where the executables are, running `hil`, reading its
//! outputs. Test support only.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
