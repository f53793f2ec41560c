//! `hil jitter` as a user meets it: arguments out of range are usage errors (exit status 2, a
//! message naming the range) instead of a 40 GB allocation, a hang or clap's "unexpected
//! argument"; a run ends within its duration; every tick record streams out (CSV) and is
//! counted; and memory does not grow with the length of the run. Short runs at normal priority;
//! counts, never latencies.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `hil jitter ARGS`, killing it (and failing) if it has not ended within `limit`.
fn jitter(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hil"))
        .arg("jitter")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start hil: {e}"));
    let start = Instant::now();
    while child.try_wait().ok().flatten().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("hil jitter {args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("hil jitter {args:?}: {e}"))
}

/// Asserts a usage error: exit status 2 and `needle` in stderr.
fn assert_usage_error(args: &[&str], needle: &str) {
    let out = jitter(args, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "hil jitter {args:?}: {:?}\n{stderr}",
        out.status
    );
    assert!(stderr.contains(needle), "hil jitter {args:?}: {stderr}");
    assert!(
        !stderr.contains("unexpected argument"),
        "hil jitter {args:?}: {stderr}"
    );
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("hil-jitter-cli-{}-{name}", std::process::id()))
}

fn read_json(path: &PathBuf) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const RATE_RANGE: &str = "1..=20000 Hz";
const DURATION_RANGE: &str = "(0, 86400] s";

#[test]
fn a_rate_above_the_range_is_a_usage_error_not_a_40_gb_allocation() {
    assert_usage_error(&["--rate-hz", "1e9", "--duration-s", "1"], RATE_RANGE);
    assert_usage_error(&["--rate-hz", "20001"], RATE_RANGE);
}

#[test]
fn a_rate_below_the_range_is_a_usage_error_not_a_hang() {
    assert_usage_error(&["--rate-hz", "1e-9", "--duration-s", "1"], RATE_RANGE);
    assert_usage_error(&["--rate-hz", "0.5"], RATE_RANGE);
    assert_usage_error(&["--rate-hz", "0"], RATE_RANGE);
}

#[test]
fn negative_and_non_finite_numbers_parse_and_get_the_range_error() {
    assert_usage_error(&["--rate-hz", "-5"], RATE_RANGE);
    assert_usage_error(&["--rate-hz", "-inf"], RATE_RANGE);
    assert_usage_error(&["--rate-hz", "NaN"], RATE_RANGE);
    assert_usage_error(&["--rate-hz", "inf"], RATE_RANGE);
    assert_usage_error(&["--rate-hz", "fast"], "not a number");
    assert_usage_error(&["--duration-s", "-1"], DURATION_RANGE);
    assert_usage_error(&["--duration-s", "-inf"], DURATION_RANGE);
    assert_usage_error(&["--duration-s", "NaN"], DURATION_RANGE);
    assert_usage_error(&["--duration-s", "inf"], DURATION_RANGE);
    assert_usage_error(&["--duration-s", "0"], DURATION_RANGE);
    assert_usage_error(&["--duration-s", "86400.5"], DURATION_RANGE);
}

#[test]
fn a_duration_shorter_than_one_period_is_a_usage_error() {
    assert_usage_error(
        &["--rate-hz", "1", "--duration-s", "0.5", "--priority", "0"],
        "shorter than one period",
    );
}

#[test]
fn priority_0_is_normal_scheduling_and_above_99_is_refused() {
    let json = temp_path("prio0.json");
    let out = jitter(
        &[
            "--rate-hz",
            "100",
            "--duration-s",
            "0.05",
            "--priority",
            "0",
            "--json",
            json.to_str().unwrap_or_default(),
        ],
        Duration::from_secs(30),
    );
    assert!(out.status.success(), "{out:?}");
    let v = read_json(&json);
    let _ = std::fs::remove_file(&json);
    assert_eq!(v["sched_fifo"], false);
    assert_eq!(v["priority"], serde_json::Value::Null);
    assert_eq!(
        v["warnings"],
        serde_json::json!([]),
        "no FIFO refusal to warn about"
    );
    assert_eq!(v["ticks"], 5);
    assert_usage_error(&["--priority", "100"], "100");
}

#[test]
fn a_run_ends_within_its_duration() {
    // 4 Hz for 0.9 s: releases at 0.25, 0.5 and 0.75 s; a fourth (at 1 s) would be past it.
    let json = temp_path("duration.json");
    let out = jitter(
        &[
            "--rate-hz",
            "4",
            "--duration-s",
            "0.9",
            "--priority",
            "0",
            "--json",
            json.to_str().unwrap_or_default(),
        ],
        Duration::from_secs(30),
    );
    assert!(out.status.success(), "{out:?}");
    let v = read_json(&json);
    let _ = std::fs::remove_file(&json);
    assert_eq!(v["ticks"], 3, "{v}");
    assert_eq!(v["releases"], 3, "{v}");
}

#[test]
fn every_tick_record_streams_to_the_csv_and_is_counted() {
    let (csv, json) = (temp_path("ticks.csv"), temp_path("ticks.json"));
    let out = jitter(
        &[
            "--rate-hz",
            "2000",
            "--duration-s",
            "0.5",
            "--priority",
            "0",
            "--csv",
            csv.to_str().unwrap_or_default(),
            "--json",
            json.to_str().unwrap_or_default(),
        ],
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "{out:?}");
    let v = read_json(&json);
    let text = std::fs::read_to_string(&csv).unwrap_or_default();
    let _ = (std::fs::remove_file(&json), std::fs::remove_file(&csv));
    let ticks = v["ticks"].as_u64().unwrap_or(0);
    let received = v["telemetry_received"].as_u64().unwrap_or(0);
    let dropped = v["telemetry_dropped"].as_u64().unwrap_or(u64::MAX);
    assert_eq!(ticks, 1000, "0.5 s at 2 kHz");
    assert_eq!(received + dropped, ticks, "{v}");
    // The summaries cover every tick, whatever the channel delivered.
    assert_eq!(v["wake_latency_us"]["count"], ticks);
    assert_eq!(v["compute_us"]["count"], ticks);
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("release_index,wake_latency_ns,compute_ns,missed_deadline,skipped_after,safe_output")
    );
    let rows: Vec<Vec<u64>> = lines
        .map(|l| {
            l.split(',')
                .map(|f| f.parse().unwrap_or(u64::MAX))
                .collect()
        })
        .collect();
    assert_eq!(rows.len() as u64, received);
    assert_eq!(v["csv_rows"], received);
    assert!(
        rows.iter()
            .all(|r| r.len() == 6 && r.iter().all(|&f| f != u64::MAX))
    );
    assert!(rows.windows(2).all(|w| w[0][0] < w[1][0]), "release order");
    if dropped == 0 {
        // Each record leads to the next release run: index + 1 + skipped after it.
        assert!(rows.windows(2).all(|w| w[0][0] + 1 + w[0][4] == w[1][0]));
        let skipped: u64 = rows.iter().map(|r| r[4]).sum();
        assert_eq!(v["skipped_releases"], skipped);
    }
}

/// Peak resident memory of a `hil jitter` run at 20 kHz for `duration_s`, kB, as the process
/// itself read it at the end (`VmHWM`; its own address space only, unlike the `ru_maxrss` of a
/// child, which also counts the spawning test process's pages).
fn peak_rss_kb(duration_s: &str) -> u64 {
    let json = temp_path(&format!("rss-{duration_s}.json"));
    let out = jitter(
        &[
            "--rate-hz",
            "20000",
            "--duration-s",
            duration_s,
            "--priority",
            "0",
            "--json",
            json.to_str().unwrap_or_default(),
        ],
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "{out:?}");
    let v = read_json(&json);
    let _ = std::fs::remove_file(&json);
    v["peak_rss_kb"]
        .as_u64()
        .unwrap_or_else(|| panic!("no peak_rss_kb in {v}"))
}

#[test]
fn memory_does_not_grow_with_the_length_of_the_run() {
    // At 20 kHz, a per-tick log of 40-byte records would grow 800 kB per second: 1.8 MB more
    // for 2.5 s than for 0.25 s. Streaming keeps the footprint the same.
    let short = peak_rss_kb("0.25");
    let long = peak_rss_kb("2.5");
    eprintln!("peak RSS: {short} kB for 0.25 s, {long} kB for 2.5 s");
    assert!(
        long < short + 512,
        "peak RSS grew {} kB between a 0.25 s and a 2.5 s run",
        long.saturating_sub(short)
    );
}
