//! The `hil` command line as a user meets it (this test also makes `cargo test` build the `hil`
//! executable that the end-to-end tests in `tests/` run).

use std::process::Command;

#[test]
fn unknown_arguments_are_refused_with_usage() {
    let out = Command::new(env!("CARGO_BIN_EXE_hil"))
        .args(["run", "--no-such-flag"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-such-flag"));
}

#[test]
fn out_of_range_run_options_are_refused_with_their_range() {
    for args in [
        ["run", "--watchdog-ms", "0"],
        ["run", "--priority", "100"],
        ["run", "--watchdog-states", "0"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_hil"))
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("not in"), "{args:?}: {err}");
    }
}

#[test]
fn a_cpu_that_does_not_exist_is_refused_before_anything_starts() {
    for flag in ["--cpu", "--plant-cpu"] {
        let out = Command::new(env!("CARGO_BIN_EXE_hil"))
            .args(["run", flag, "4095", "--out", "/nonexistent/never-written"])
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert!(
            err.contains("not a CPU this process may run on"),
            "{flag}: {err}"
        );
    }
}

#[test]
fn an_output_path_that_is_a_file_is_refused_before_anything_runs() {
    let file = std::env::temp_dir().join(format!("hil-cli-out-file-{}", std::process::id()));
    std::fs::write(&file, b"not a folder").unwrap_or_default();
    let out = Command::new(env!("CARGO_BIN_EXE_hil"))
        .args(["run", "--quiet", "--out"])
        .arg(&file)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is not a folder"), "{err}");
    assert_eq!(std::fs::read(&file).unwrap_or_default(), b"not a folder");
    let _ = std::fs::remove_file(&file);
}
