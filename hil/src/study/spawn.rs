//! Cells as separate processes: `hil study cell ARGS` started from this executable, its one JSON
//! line read back, and every way that can fail kept as a record ([`FailedCell`]) instead of
//! being dropped. The records of cells.jsonl: a cell's own line, or a failed cell's.

use std::process::Command;

use serde::{Deserialize, Serialize};

use super::cell::{CellLine, CellSpec};

/// A cell that gave no line: why, and everything it printed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedCell {
    /// Always true: tells this record from a cell's line.
    pub failed: bool,
    /// The controller asked for.
    pub controller: String,
    /// The rate asked for, Hz.
    pub rate_hz: f64,
    /// The damping scale asked for.
    pub damping_scale: f64,
    /// The seed asked for.
    pub seed: u64,
    /// The run's length asked for, s.
    pub duration_s: f64,
    /// The arguments after `hil study cell`.
    pub args: Vec<String>,
    /// The exit status, if it exited (None: killed by a signal, or never started).
    pub exit_code: Option<i32>,
    /// Why the cell is counted as failed.
    pub reason: String,
    /// What it printed on stderr.
    pub stderr: String,
    /// What it printed on stdout.
    pub stdout: String,
}

/// One record of cells.jsonl.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// A cell's line.
    Done(CellLine),
    /// A cell that gave no line.
    Failed(FailedCell),
}

impl Record {
    /// The controller, rate, scale and seed of the cell.
    pub fn key(&self) -> (String, f64, f64, u64) {
        match self {
            Self::Done(l) => (l.controller.clone(), l.rate_hz, l.damping_scale, l.seed),
            Self::Failed(f) => (f.controller.clone(), f.rate_hz, f.damping_scale, f.seed),
        }
    }

    /// The record as one JSON line (no newline).
    pub fn to_line(&self) -> String {
        let r = match self {
            Self::Done(l) => serde_json::to_string(l),
            Self::Failed(f) => serde_json::to_string(f),
        };
        r.unwrap_or_else(|e| format!("{{\"failed\":true,\"reason\":\"unserialisable: {e}\"}}"))
    }

    /// As a JSON value (for study.json).
    pub fn to_value(&self) -> serde_json::Value {
        let r = match self {
            Self::Done(l) => serde_json::to_value(l),
            Self::Failed(f) => serde_json::to_value(f),
        };
        r.unwrap_or(serde_json::Value::Null)
    }
}

/// Reads one line of cells.jsonl: a failed cell's record (`"failed": true`) or a cell's line.
pub fn parse_record(line: &str) -> Result<Record, String> {
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    if value.get("failed").and_then(serde_json::Value::as_bool) == Some(true) {
        serde_json::from_value(value)
            .map(Record::Failed)
            .map_err(|e| format!("not a failed-cell record: {e}"))
    } else {
        serde_json::from_value(value)
            .map(Record::Done)
            .map_err(|e| format!("not a cell line: {e}"))
    }
}

/// Runs `spec` as `EXE study cell ARGS` and reads its line. Never panics: a cell that cannot be
/// started, exits non-zero, prints no line or an unparsable one is a [`Record::Failed`] with
/// everything it printed.
pub fn run_cell_process(exe: &std::path::Path, spec: &CellSpec) -> Record {
    let args = spec.args();
    let failed = |exit_code: Option<i32>, reason: String, stdout: &str, stderr: &str| {
        Record::Failed(FailedCell {
            failed: true,
            controller: spec.controller.name().into(),
            rate_hz: spec.rate_hz,
            damping_scale: spec.damping_scale,
            seed: spec.seed,
            duration_s: spec.duration_s,
            args: args.clone(),
            exit_code,
            reason,
            stderr: stderr.to_owned(),
            stdout: stdout.to_owned(),
        })
    };
    let out = match Command::new(exe)
        .args(["study", "cell"])
        .args(&args)
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            return failed(None, format!("cannot start {}: {e}", exe.display()), "", "");
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let reason = match out.status.code() {
            Some(c) => format!("exit status {c}"),
            None => format!("ended by a signal ({})", out.status),
        };
        return failed(out.status.code(), reason, &stdout, &stderr);
    }
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    let [line] = lines.as_slice() else {
        let reason = format!("printed {} lines, not one", lines.len());
        return failed(out.status.code(), reason, &stdout, &stderr);
    };
    match parse_record(line) {
        Ok(Record::Done(l)) => Record::Done(l),
        Ok(Record::Failed(_)) => failed(
            out.status.code(),
            "printed a failed-cell record".into(),
            &stdout,
            &stderr,
        ),
        Err(e) => failed(
            out.status.code(),
            format!("unparsable line: {e}"),
            &stdout,
            &stderr,
        ),
    }
}

/// The executable cells are started from (this one).
pub fn current_exe() -> Result<std::path::PathBuf, String> {
    std::env::current_exe().map_err(|e| format!("cannot find this executable to run cells: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::cell::{CellOutcome, Controller};

    #[test]
    fn records_round_trip_and_failed_ones_are_told_apart() {
        let spec = CellSpec {
            controller: Controller::Simbicon,
            rate_hz: 500.0,
            damping_scale: 0.5,
            gains: None,
            duration_s: 2.0,
            push: None,
            seed: 0,
        };
        let outcome = CellOutcome {
            fell: false,
            fell_at_s: None,
            distance_m: 2.0,
            mean_speed_mps: 1.0,
            steps: 5,
            limited_torques: 0,
            refused_ticks: 0,
            wall_s: 0.1,
        };
        let done = Record::Done(CellLine::new(
            &spec,
            spec.resolved_gains().unwrap(),
            &outcome,
        ));
        assert_eq!(parse_record(&done.to_line()), Ok(done.clone()));
        let failed = Record::Failed(FailedCell {
            failed: true,
            controller: "simbicon".into(),
            rate_hz: 500.0,
            damping_scale: 0.5,
            seed: 0,
            duration_s: 2.0,
            args: spec.args(),
            exit_code: Some(1),
            reason: "exit status 1".into(),
            stderr: "hil: boom\n".into(),
            stdout: String::new(),
        });
        assert_eq!(parse_record(&failed.to_line()), Ok(failed.clone()));
        assert_eq!(failed.key(), done.key());
        assert!(parse_record("{\"controller\": 3").is_err());
        assert!(parse_record("{\"controller\": \"simbicon\"}").is_err());
        // A missing executable is a failed record, not a panic.
        let r = run_cell_process(std::path::Path::new("/nonexistent/hil"), &spec);
        match r {
            Record::Failed(f) => assert!(f.reason.contains("cannot start"), "{}", f.reason),
            Record::Done(_) => panic!("a missing executable ran"),
        }
    }
}
