//! `hil study` as a user meets it, through the built binary: one cell prints one parsable line
//! (the analytic gains walk 3 s at 300 Hz), a small sweep streams one line per cell and writes
//! both heat maps and study.json, a tiny CMA-ES search writes cmaes.json, `jobs` lists the
//! sweep's cells, and bad arguments exit 2 with a `hil: ...` message. Short walks (2–3 s).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn hil(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hil"))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run hil {args:?}: {e}"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hil-study-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn one_cell_prints_one_parsable_line() {
    let out = hil(&[
        "study",
        "cell",
        "--controller",
        "simbicon_analytic",
        "--rate-hz",
        "300",
        "--duration-s",
        "3",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(v["fell"], false, "{v}");
    assert!(v["fell_at_s"].is_null());
    assert_eq!(v["controller"], "simbicon_analytic");
    assert_eq!(v["rate_hz"], 300.0);
    assert!(v["distance_m"].as_f64().unwrap() > 1.0, "{v}");
    assert_eq!(v["gains"]["swing_ankle"]["clamped"], true);
    assert_eq!(v["gains"]["torso"]["kp"], 300.0);
    // The same seed walks the same walk (wall time aside); another seed another one.
    let run = |seed: &str| {
        let out = hil(&[
            "study",
            "cell",
            "--controller",
            "simbicon",
            "--rate-hz",
            "500",
            "--damping-scale",
            "0.25",
            "--duration-s",
            "2",
            "--seed",
            seed,
        ]);
        let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["wall_s"] = serde_json::Value::Null;
        v
    };
    assert_eq!(run("7"), run("7"));
    assert_ne!(run("7")["distance_m"], run("8")["distance_m"]);
    // A backward push is a negative impulse, echoed in the line.
    let out = hil(&[
        "study",
        "cell",
        "--controller",
        "simbicon_analytic",
        "--rate-hz",
        "300",
        "--duration-s",
        "2",
        "--push-ns",
        "-30",
        "--push-at-s",
        "1",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["push"]["impulse_ns"], -30.0);
    assert_eq!(v["push"]["at_s"], 1.0);
}

#[test]
fn a_small_sweep_streams_every_cell_and_draws_both_heat_maps() {
    let out_dir = scratch("sweep");
    let out = hil(&[
        "study",
        "sweep",
        "--rates",
        "2000,300",
        "--scales",
        "0.5,1",
        "--controllers",
        "simbicon",
        "--duration-s",
        "2",
        "--jobs",
        "2",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let cells = std::fs::read_to_string(out_dir.join("cells.jsonl")).unwrap();
    assert_eq!(cells.lines().count(), 4, "{cells}");
    for line in cells.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["controller"], "simbicon");
    }
    assert_eq!(stderr.matches("study [").count(), 4, "{stderr}");
    for svg in ["heatmap_simbicon.svg", "heatmap_simbicon_analytic.svg"] {
        let text = std::fs::read_to_string(out_dir.join(svg)).unwrap();
        assert!(text.starts_with("<svg"), "{svg}");
    }
    let study = json(&out_dir.join("study.json"));
    assert_eq!(study["cells"].as_array().unwrap().len(), 4);
    assert_eq!(study["bound"].as_array().unwrap().len(), 2);
    // The table: SIMBICON's fixed pair walks at 2 kHz and falls at 300 Hz.
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("| 300 | 0.223 |"), "{table}");
    // The same cells merged from the file give the same study.
    let merged = scratch("merged");
    let out = hil(&[
        "study",
        "merge",
        out_dir.join("cells.jsonl").to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        json(&merged.join("study.json"))["squares"],
        study["squares"]
    );
    let _ = std::fs::remove_dir_all(&out_dir);
    let _ = std::fs::remove_dir_all(&merged);
}

#[test]
fn a_tiny_cmaes_search_writes_its_results() {
    let out_dir = scratch("cmaes");
    let out = hil(&[
        "study",
        "cmaes",
        "--rates",
        "300",
        "--generations",
        "2",
        "--population",
        "4",
        "--duration-s",
        "2",
        "--jobs",
        "2",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = json(&out_dir.join("cmaes.json"));
    let rates = result["rates"].as_array().unwrap();
    assert_eq!(rates.len(), 1);
    // The start and two generations of four.
    assert_eq!(rates[0]["evaluations"], 9);
    assert!(
        rates[0]["best_gains"]["swing_ankle"]["kp"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    let evals = std::fs::read_to_string(out_dir.join("cmaes.jsonl")).unwrap();
    assert_eq!(evals.lines().count(), 9);
    assert!(out_dir.join("gains_by_rate.svg").exists());
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn jobs_lists_one_cell_per_line() {
    let out = hil(&[
        "study", "jobs", "--rates", "500,300", "--scales", "1", "--seeds", "0,1",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 2 * 2 * 2, "{text}");
    assert!(
        text.lines()
            .all(|l| l.starts_with("hil study cell --controller "))
    );
}

#[test]
fn bad_arguments_exit_2_with_a_message() {
    for args in [
        &["study", "cell", "--controller", "pd", "--rate-hz", "300"][..],
        &[
            "study",
            "cell",
            "--controller",
            "simbicon",
            "--rate-hz",
            "10",
        ],
        &[
            "study",
            "cell",
            "--controller",
            "simbicon",
            "--rate-hz",
            "300",
            "--damping-scale",
            "0",
        ],
        &[
            "study",
            "cell",
            "--controller",
            "simbicon",
            "--rate-hz",
            "300",
            "--duration-s",
            "nan",
        ],
        &[
            "study",
            "cell",
            "--controller",
            "simbicon",
            "--rate-hz",
            "300",
            "--gains",
            "{\"torso\": 1}",
        ],
        &["study", "sweep", "--rates", "300,300"],
        &["study", "sweep", "--scales=-1"],
        &["study", "sweep", "--jobs", "0"],
        &["study", "cmaes", "--population", "1"],
        &["study", "jobs", "--controllers", "nope"],
        &["study", "merge", "/nonexistent/cells.jsonl"],
    ] {
        let out = hil(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with("hil: "), "{args:?}: {err}");
    }
    // clap's own refusals are exit 2 too.
    assert_eq!(
        hil(&["study", "cell", "--rate-hz", "300"]).status.code(),
        Some(2)
    );
}
