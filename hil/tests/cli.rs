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
