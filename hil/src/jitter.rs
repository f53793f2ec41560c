//! `hil jitter`: runs the periodic control thread for a fixed time with a realistic tick (the
//! control-core arrival servo on a simulated 1-DoF joint, [`runtime::synthetic::ServoOnPlant`]),
//! then prints a cyclictest-like summary and a text latency histogram and optionally writes JSON.
//!
//! The main thread plays the I/O thread: it drains the torque queue while the control thread runs.
//! Nothing here runs on the control thread except the controller itself.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde::Serialize;

use runtime::synthetic::ServoOnPlant;
use runtime::{LatencySummary, PeriodicBuilder, RunReport, TickLog, channels};

/// Arguments of `hil jitter`.
#[derive(Debug, Clone, Args)]
pub struct JitterArgs {
    /// Tick rate, Hz.
    #[arg(long, default_value_t = 1000.0)]
    pub rate_hz: f64,
    /// How long to run, s.
    #[arg(long, default_value_t = 10.0)]
    pub duration_s: f64,
    /// SCHED_FIFO priority 1..=99; 0 runs at normal priority (SCHED_OTHER).
    #[arg(long, default_value_t = 80, value_parser = clap::value_parser!(u8).range(0..=99))]
    pub priority: u8,
    /// Pin the control thread to this CPU.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Write the figures as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Histogram bucket width, µs (default: chosen from the largest latency).
    #[arg(long)]
    pub bucket_us: Option<u64>,
}

/// The JSON written by `--json`.
#[derive(Debug, Serialize)]
struct JitterJson<'a> {
    rate_hz: f64,
    duration_s: f64,
    ticks: u64,
    releases: u64,
    sched_fifo: bool,
    priority: Option<u8>,
    cpu: Option<usize>,
    mlockall: bool,
    dma_latency_held: bool,
    wake_latency_us: LatencySummary,
    compute_us: LatencySummary,
    deadline_misses: u64,
    skipped_releases: u64,
    overruns: u64,
    tick: &'static str,
    warnings: &'a [String],
}

const TICK_DESCRIPTION: &str = "control_core::servo::ArrivalServo on a simulated 1-DoF inertia (runtime::synthetic::ServoOnPlant)";

/// Runs `hil jitter`.
pub fn run(args: &JitterArgs) -> ExitCode {
    match measure(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hil jitter: {e}");
            ExitCode::FAILURE
        }
    }
}

fn measure(args: &JitterArgs) -> Result<(), String> {
    if !(args.duration_s.is_finite() && args.duration_s > 0.0 && args.duration_s <= 86_400.0) {
        return Err(format!(
            "--duration-s {}: must be in (0, 86400]",
            args.duration_s
        ));
    }
    let mut builder = PeriodicBuilder::from_rate_hz(args.rate_hz)
        .map_err(|e| format!("--rate-hz {}: {e}", args.rate_hz))?;
    let cfg = builder.loop_config().map_err(|e| e.to_string())?;
    let period_s = cfg.period_ns as f64 * 1e-9;
    // Finite, positive and bounded above: the cast cannot saturate.
    let ticks = ((args.duration_s / period_s).round() as u64).max(1);
    builder = builder
        .max_ticks(ticks)
        .log_capacity(usize::try_from(ticks).unwrap_or(usize::MAX))
        .name("jitter-control");
    if args.priority > 0 {
        builder = builder.priority(args.priority);
    }
    if let Some(cpu) = args.cpu {
        builder = builder.cpu(cpu);
    }
    let controller =
        ServoOnPlant::new(period_s).map_err(|e| format!("servo for period {period_s} s: {e}"))?;
    let (mut io, ctl) = channels(1024);
    let rt = builder.spawn(controller, ctl).map_err(|e| e.to_string())?;
    for w in rt.setup().warnings() {
        eprintln!("WARNING: {w}");
    }
    // Play the I/O thread: drain the torques every 10 ms (the queue holds 1024) until the loop
    // ends by itself. Sleeping, not polling, so this thread barely competes for the CPU.
    let mut torques = 0_u64;
    loop {
        let finished = rt.is_finished();
        while io.outputs.try_recv().is_some() {
            torques += 1;
        }
        if finished {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let outcome = rt.join().map_err(|e| e.to_string())?;
    let report = &outcome.report;
    print!("{}", summary_text(args, report, &outcome.log, torques));
    if let Some(path) = &args.json {
        let json = JitterJson {
            rate_hz: report.rate_hz,
            duration_s: args.duration_s,
            ticks: report.counters.ticks,
            releases: report.releases,
            sched_fifo: report.sched_fifo,
            priority: report.setup.requested_priority,
            cpu: report.setup.cpu,
            mlockall: report.setup.mlockall,
            dma_latency_held: report.setup.dma_latency_held,
            wake_latency_us: report.wake_latency_us,
            compute_us: report.compute_us,
            deadline_misses: report.counters.deadline_misses,
            skipped_releases: report.counters.skipped_releases,
            overruns: report.counters.overruns,
            tick: TICK_DESCRIPTION,
            warnings: &report.warnings,
        };
        let text = serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

/// The cyclictest-like summary and the histogram, as printed.
fn summary_text(args: &JitterArgs, r: &RunReport, log: &TickLog, torques: u64) -> String {
    let mut s = String::new();
    let sched = if r.sched_fifo {
        format!(
            "SCHED_FIFO prio {}",
            r.setup.requested_priority.unwrap_or(0)
        )
    } else {
        "SCHED_OTHER (normal priority)".to_owned()
    };
    let cpu = r
        .setup
        .cpu
        .map_or("any CPU".to_owned(), |c| format!("CPU {c}"));
    let _ = writeln!(
        s,
        "hil jitter: {:.1} Hz (T = {} ns) for {} s, {sched}, {cpu}, mlockall {}, cpu_dma_latency=0 {}",
        r.rate_hz,
        r.period_ns,
        args.duration_s,
        yes_no(r.setup.mlockall),
        if r.setup.dma_latency_held {
            "held"
        } else {
            "NOT held"
        },
    );
    let _ = writeln!(s, "tick: {TICK_DESCRIPTION}");
    for w in &r.warnings {
        let _ = writeln!(s, "WARNING: {w}");
    }
    let n = log.len().max(1) as f64;
    let avg_us = log.iter().map(|t| t.wake_latency_ns as f64).sum::<f64>() / n / 1e3;
    let act_us = log.iter().last().map_or(0, |t| t.wake_latency_ns) / 1_000;
    let prio = r
        .setup
        .requested_priority
        .filter(|_| r.sched_fifo)
        .unwrap_or(0);
    // cyclictest's own line: T:<thread> (<tid>) P:<prio> I:<interval µs> C:<cycles> Min Act Avg Max (µs).
    let _ = writeln!(
        s,
        "T: 0 ({:>6}) P:{prio:>2} I:{} C:{:>8} Min:{:>7} Act:{:>5} Avg:{:>5} Max:{:>8}",
        std::process::id(),
        r.period_ns / 1_000,
        r.counters.ticks,
        r.wake_latency_us.min as u64,
        act_us,
        avg_us.round() as u64,
        r.wake_latency_us.max as u64,
    );
    let w = &r.wake_latency_us;
    let c = &r.compute_us;
    let _ = writeln!(
        s,
        "wake-up latency µs: min {:.1}  p50 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}",
        w.min, w.p50, w.p99, w.p999, w.max
    );
    let _ = writeln!(
        s,
        "compute time µs:    min {:.1}  p50 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}",
        c.min, c.p50, c.p99, c.p999, c.max
    );
    let _ = writeln!(
        s,
        "ticks {}  releases {}  deadline misses {}  skipped releases {} (in {} overruns)  torques received {torques}",
        r.counters.ticks,
        r.releases,
        r.counters.deadline_misses,
        r.counters.skipped_releases,
        r.counters.overruns
    );
    s.push_str(&histogram_text(log, args.bucket_us, w.max));
    s
}

/// A text histogram of wake-up latency: one row per non-empty bucket, bar length on a log scale.
fn histogram_text(log: &TickLog, bucket_us: Option<u64>, max_us: f64) -> String {
    const ROWS: u64 = 40;
    let bucket = bucket_us
        .unwrap_or_else(|| nice_bucket_us(max_us, ROWS))
        .max(1);
    // Latencies past the last bucket land in it; size it to hold the maximum.
    let buckets = usize::try_from((max_us as u64) / bucket + 1)
        .unwrap_or(1)
        .clamp(1, 10_000);
    let hist = log.wake_latency_histogram(bucket, buckets);
    let top = hist.iter().map(|&(_, c)| c).max().unwrap_or(0).max(1) as f64;
    let mut s = format!("wake-up latency histogram ({bucket} µs buckets, bar ∝ log10 count):\n");
    for (lo, count) in hist.into_iter().filter(|&(_, c)| c > 0) {
        let len = (50.0 * (count as f64 + 1.0).log10() / (top + 1.0).log10()).round() as usize;
        let _ = writeln!(
            s,
            "{lo:>7}-{:<7} {count:>9} {}",
            lo + bucket,
            "#".repeat(len.max(1))
        );
    }
    s
}

/// A 1-2-5 bucket width putting `max_us` in about `rows` buckets.
fn nice_bucket_us(max_us: f64, rows: u64) -> u64 {
    let raw = (max_us / rows as f64).max(1.0);
    let mut base = 1_u64;
    loop {
        for m in [1, 2, 5] {
            if (base * m) as f64 >= raw {
                return base * m;
            }
        }
        base = base.saturating_mul(10);
        if base >= 1_000_000_000 {
            return base;
        }
    }
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "NO" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runtime::TickRecord;

    #[test]
    fn bucket_widths_are_one_two_five() {
        assert_eq!(nice_bucket_us(10.0, 40), 1);
        assert_eq!(nice_bucket_us(130.0, 40), 5);
        assert_eq!(nice_bucket_us(3_500.0, 40), 100);
    }

    #[test]
    fn histogram_lists_non_empty_buckets_and_catches_the_tail() {
        let mut log = TickLog::with_capacity(8);
        for ns in [1_500, 1_700, 9_000, 250_000] {
            log.push(TickRecord {
                wake_latency_ns: ns,
                ..TickRecord::default()
            });
        }
        let h = histogram_text(&log, Some(5), 250.0);
        let rows: Vec<&str> = h.lines().skip(1).collect();
        assert_eq!(rows.len(), 3, "{h}");
        assert!(
            rows[0].trim_start().starts_with("0-5") && rows[0].contains(" 2 "),
            "{h}"
        );
        assert!(rows[2].trim_start().starts_with("250-255"), "{h}");
    }
}
