//! `hil jitter`: runs the periodic control thread for a fixed time with a realistic tick (the
//! control-core arrival servo on a simulated 1-DoF joint, [`runtime::synthetic::ServoOnPlant`]),
//! then prints a cyclictest-like summary and a text latency histogram, and optionally writes JSON
//! and every tick record as CSV.
//!
//! Memory is constant whatever the rate and duration (an hours-long soak included): the summaries
//! are the runtime's own, kept on the control thread over every tick; the per-tick records stream
//! through the runtime's bounded telemetry channel to a consumer thread here, which keeps only a
//! fixed-size histogram (and writes the CSV as it goes).
//!
//! Three threads: the control thread (the controller and nothing else of ours), the telemetry
//! consumer (polls the channel every 10 ms), and the main thread playing the I/O thread (drains
//! the torque queue every 10 ms). Arguments out of range are refused before anything starts
//! (exit status 2, like any other usage error).

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::thread::JoinHandle;
use std::time::Duration;

use clap::Args;
use serde::Serialize;

use runtime::synthetic::ServoOnPlant;
use runtime::{
    LatencyHistogram, LatencySummary, PeriodicBuilder, RunReport, TelemetryReceiver, TickRecord,
    channels, telemetry,
};

/// Lowest tick rate accepted, Hz.
pub const RATE_HZ_MIN: f64 = 1.0;
/// Highest tick rate accepted, Hz.
pub const RATE_HZ_MAX: f64 = 20_000.0;
/// Longest run accepted, s (24 h).
pub const DURATION_S_MAX: f64 = 86_400.0;

/// How often the consumer and the I/O side poll their queues.
const POLL: Duration = Duration::from_millis(10);
/// Seconds of ticks the telemetry channel holds: far more than one poll interval, so that it
/// never fills unless the consumer is starved for that long (then records are dropped and
/// counted; the summaries still cover every tick).
const TELEMETRY_BUFFER_S: f64 = 0.5;
/// Stack of the consumer thread (it is locked in RAM with the rest of the process).
const CONSUMER_STACK_BYTES: usize = 256 * 1024;

/// Arguments of `hil jitter`.
#[derive(Debug, Clone, Args)]
pub struct JitterArgs {
    /// Tick rate, Hz, in 1..=20000. Above 20 kHz the period (under 50 µs) is inside the wake-up
    /// latency tail of a typical VM or desktop kernel (p99 tens of µs, p99.9 hundreds), so the run
    /// would mostly measure overruns; below 1 Hz even a 24 h run holds too few ticks for a p99.9.
    #[arg(long, default_value_t = 1000.0, allow_hyphen_values = true, value_parser = parse_rate_hz)]
    pub rate_hz: f64,
    /// How long to run, s, in (0, 86400]. The run has floor(duration / period) ticks (at least
    /// one: a duration shorter than one period is refused), so its last release is within the
    /// duration.
    #[arg(long, default_value_t = 10.0, allow_hyphen_values = true, value_parser = parse_duration_s)]
    pub duration_s: f64,
    /// 0: normal priority (SCHED_OTHER); 1..=99: SCHED_FIFO at that priority (what
    /// `PeriodicBuilder::priority` means too).
    #[arg(long, default_value_t = 80, value_parser = clap::value_parser!(u8).range(0..=99))]
    pub priority: u8,
    /// Pin the control thread to this CPU.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Write the figures as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write every tick record as CSV to this file, streamed as the run goes (constant memory):
    /// release_index,wake_latency_ns,compute_ns,missed_deadline,skipped_after,safe_output.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Histogram bucket width, µs (default: chosen from the largest latency).
    #[arg(long)]
    pub bucket_us: Option<u64>,
}

fn parse_number(s: &str, what: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .map_err(|_| format!("not a number of {what}"))
}

/// A rate in [`RATE_HZ_MIN`]..=[`RATE_HZ_MAX`] (NaN is not).
fn check_rate_hz(v: f64) -> Result<f64, String> {
    if (RATE_HZ_MIN..=RATE_HZ_MAX).contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "the rate must be in {RATE_HZ_MIN}..={RATE_HZ_MAX} Hz (1 Hz to 20 kHz)"
        ))
    }
}

/// A duration in (0, [`DURATION_S_MAX`]] (NaN is not).
fn check_duration_s(v: f64) -> Result<f64, String> {
    if v > 0.0 && v <= DURATION_S_MAX {
        Ok(v)
    } else {
        Err(format!(
            "the duration must be in (0, {DURATION_S_MAX}] s (more than 0, at most 24 h)"
        ))
    }
}

/// `--rate-hz`: any number (negative ones too), then [`check_rate_hz`].
fn parse_rate_hz(s: &str) -> Result<f64, String> {
    check_rate_hz(parse_number(s, "Hz")?)
}

/// `--duration-s`: any number (negative ones too), then [`check_duration_s`].
fn parse_duration_s(s: &str) -> Result<f64, String> {
    check_duration_s(parse_number(s, "seconds")?)
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
    telemetry_received: u64,
    telemetry_dropped: u64,
    csv_rows: u64,
    /// Peak resident memory of this process (`VmHWM`), kB: the same for any length of run.
    peak_rss_kb: Option<u64>,
    tick: &'static str,
    warnings: &'a [String],
}

const TICK_DESCRIPTION: &str = "control_core::servo::ArrivalServo on a simulated 1-DoF inertia (runtime::synthetic::ServoOnPlant)";

/// Why `hil jitter` stopped early.
enum Failure {
    /// The arguments cannot make a run (exit status 2).
    Usage(String),
    /// The run could not be made or its results not written (exit status 1).
    Run(String),
}

/// Runs `hil jitter`.
pub fn run(args: &JitterArgs) -> ExitCode {
    match measure(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(e)) => {
            eprintln!("hil jitter: error: {e}");
            ExitCode::from(2)
        }
        Err(Failure::Run(e)) => {
            eprintln!("hil jitter: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Number of ticks of a run: floor(duration / period), so that ticks × period ≤ duration.
fn ticks_within(duration_s: f64, period_ns: u64) -> u64 {
    // duration_s is in (0, 86400]: duration_ns < 2^47, exact enough and no saturation.
    let duration_ns = (duration_s * 1e9).round() as u64;
    duration_ns / period_ns.max(1)
}

fn measure(args: &JitterArgs) -> Result<(), Failure> {
    // Clap already refused values out of range; these guard direct callers.
    let usage = Failure::Usage;
    check_rate_hz(args.rate_hz).map_err(|e| usage(format!("--rate-hz {}: {e}", args.rate_hz)))?;
    check_duration_s(args.duration_s)
        .map_err(|e| usage(format!("--duration-s {}: {e}", args.duration_s)))?;
    let builder = PeriodicBuilder::from_rate_hz(args.rate_hz)
        .map_err(|e| usage(format!("--rate-hz {}: {e}", args.rate_hz)))?;
    let cfg = builder.loop_config().map_err(|e| usage(e.to_string()))?;
    let ticks = ticks_within(args.duration_s, cfg.period_ns);
    if ticks == 0 {
        return Err(usage(format!(
            "--duration-s {} is shorter than one period ({} s at --rate-hz {}): no tick would run",
            args.duration_s,
            cfg.period_ns as f64 * 1e-9,
            args.rate_hz
        )));
    }
    let period_s = cfg.period_ns as f64 * 1e-9;
    let controller = ServoOnPlant::new(period_s)
        .map_err(|e| Failure::Run(format!("servo for period {period_s} s: {e}")))?;
    let csv = match &args.csv {
        Some(path) => Some(
            File::create(path)
                .map(|f| (BufWriter::new(f), path.clone()))
                .map_err(|e| Failure::Run(format!("cannot create {}: {e}", path.display())))?,
        ),
        None => None,
    };
    let (records, record_rx) =
        telemetry::channel(telemetry::capacity_for(args.rate_hz, TELEMETRY_BUFFER_S));
    let consumer = spawn_consumer(record_rx, csv)?;
    let mut builder = builder
        .max_ticks(ticks)
        .priority(args.priority)
        .telemetry(records)
        .name("jitter-control");
    if let Some(cpu) = args.cpu {
        builder = builder.cpu(cpu);
    }
    let (mut io, ctl) = channels(1024);
    // On failure the builder (and its sender) is dropped: the consumer ends by itself.
    let rt = builder
        .spawn(controller, ctl)
        .map_err(|e| Failure::Run(e.to_string()))?;
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
        std::thread::sleep(POLL);
    }
    let outcome = rt.join().map_err(|e| Failure::Run(e.to_string()))?;
    let consumed = consumer
        .join()
        .map_err(|_| Failure::Run("the telemetry consumer panicked".into()))?;
    let report = &outcome.report;
    print!("{}", summary_text(args, report, &consumed, torques));
    if let Some(e) = &consumed.csv_error {
        return Err(Failure::Run(e.clone()));
    }
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
            telemetry_received: consumed.received,
            telemetry_dropped: report.counters.telemetry_dropped,
            csv_rows: consumed.csv_rows,
            peak_rss_kb: peak_rss_kb(),
            tick: TICK_DESCRIPTION,
            warnings: &report.warnings,
        };
        let text = serde_json::to_string_pretty(&json).map_err(|e| Failure::Run(e.to_string()))?;
        std::fs::write(path, text + "\n")
            .map_err(|e| Failure::Run(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(())
}

/// What the telemetry consumer made of the records it received.
struct Consumed {
    /// Records received.
    received: u64,
    /// Wake-up latency of the records received (fixed memory).
    wake_latency: LatencyHistogram,
    /// Wake-up latency of the last record received, ns.
    last_wake_latency_ns: u64,
    /// CSV rows written (records, not the header).
    csv_rows: u64,
    /// The first CSV write error, if any (writing stops there).
    csv_error: Option<String>,
}

/// Starts the consumer: polls the telemetry channel every [`POLL`] (never parks in `recv`, so the
/// control thread's `try_send` never has to wake it), until the run ends and the channel is
/// drained.
fn spawn_consumer(
    rx: TelemetryReceiver,
    csv: Option<(BufWriter<File>, PathBuf)>,
) -> Result<JoinHandle<Consumed>, Failure> {
    std::thread::Builder::new()
        .name("jitter-telemetry".into())
        .stack_size(CONSUMER_STACK_BYTES)
        .spawn(move || consume(&rx, csv))
        .map_err(|e| Failure::Run(format!("cannot start the telemetry consumer: {e}")))
}

fn consume(rx: &TelemetryReceiver, mut csv: Option<(BufWriter<File>, PathBuf)>) -> Consumed {
    let mut out = Consumed {
        received: 0,
        wake_latency: LatencyHistogram::new(),
        last_wake_latency_ns: 0,
        csv_rows: 0,
        csv_error: None,
    };
    if let Some((w, path)) = &mut csv
        && let Err(e) = writeln!(w, "{CSV_HEADER}")
    {
        csv_failed(e, path, &mut out);
    }
    out.received = telemetry::consume(rx, POLL, |r| {
        out.wake_latency.record(r.wake_latency_ns);
        out.last_wake_latency_ns = r.wake_latency_ns;
        if out.csv_error.is_none()
            && let Some((w, path)) = &mut csv
        {
            match write_csv_row(w, &r) {
                Ok(()) => out.csv_rows += 1,
                Err(e) => csv_failed(e, path, &mut out),
            }
        }
    });
    if out.csv_error.is_none()
        && let Some((w, path)) = &mut csv
        && let Err(e) = w.flush()
    {
        csv_failed(e, path, &mut out);
    }
    out
}

fn csv_failed(e: std::io::Error, path: &std::path::Path, out: &mut Consumed) {
    out.csv_error = Some(format!("cannot write {}: {e}", path.display()));
}

const CSV_HEADER: &str =
    "release_index,wake_latency_ns,compute_ns,missed_deadline,skipped_after,safe_output";

fn write_csv_row(w: &mut impl std::io::Write, r: &TickRecord) -> std::io::Result<()> {
    writeln!(
        w,
        "{},{},{},{},{},{}",
        r.release_index,
        r.wake_latency_ns,
        r.compute_ns,
        u8::from(r.missed_deadline),
        r.skipped_after,
        u8::from(r.safe_output)
    )
}

/// The cyclictest-like summary and the histogram, as printed.
fn summary_text(args: &JitterArgs, r: &RunReport, consumed: &Consumed, torques: u64) -> String {
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
    let prio = r
        .setup
        .requested_priority
        .filter(|_| r.sched_fifo)
        .unwrap_or(0);
    let w = &r.wake_latency_us;
    let c = &r.compute_us;
    // cyclictest's own line: T:<thread> (<tid>) P:<prio> I:<interval µs> C:<cycles> Min Act Avg Max (µs).
    let _ = writeln!(
        s,
        "T: 0 ({:>6}) P:{prio:>2} I:{} C:{:>8} Min:{:>7} Act:{:>5} Avg:{:>5} Max:{:>8}",
        r.setup.tid,
        r.period_ns / 1_000,
        r.counters.ticks,
        w.min as u64,
        consumed.last_wake_latency_ns / 1_000,
        w.mean.round() as u64,
        w.max as u64,
    );
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
    let _ = writeln!(
        s,
        "telemetry records received {} (dropped {}){}",
        consumed.received,
        r.counters.telemetry_dropped,
        if args.csv.is_some() {
            format!(", CSV rows written {}", consumed.csv_rows)
        } else {
            String::new()
        }
    );
    if consumed.received < r.counters.ticks {
        let _ = writeln!(
            s,
            "(the histogram below covers the {} records received of {} ticks; the figures above cover every tick)",
            consumed.received, r.counters.ticks
        );
    }
    s.push_str(&histogram_text(&consumed.wake_latency, args.bucket_us));
    s
}

/// A text histogram of wake-up latency: one row per non-empty bucket, bar length on a log scale.
fn histogram_text(hist: &LatencyHistogram, bucket_us: Option<u64>) -> String {
    const ROWS: u64 = 40;
    let max_us = hist.max_ns().unwrap_or(0) / 1_000;
    let bucket = bucket_us
        .unwrap_or_else(|| nice_bucket_us(max_us as f64, ROWS))
        .max(1);
    // Latencies past the last bucket land in it; size it to hold the maximum.
    let buckets = usize::try_from(max_us / bucket + 1)
        .unwrap_or(1)
        .clamp(1, 10_000);
    let hist = hist.buckets_ns(bucket.saturating_mul(1_000), buckets);
    let top = hist.iter().map(|&(_, c)| c).max().unwrap_or(0).max(1) as f64;
    let mut s = format!("wake-up latency histogram ({bucket} µs buckets, bar ∝ log10 count):\n");
    for (lo_ns, count) in hist.into_iter().filter(|&(_, c)| c > 0) {
        let lo = lo_ns / 1_000;
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

/// Peak resident memory of this process so far, kB (`VmHWM` in /proc/self/status).
fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "NO" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_widths_are_one_two_five() {
        assert_eq!(nice_bucket_us(10.0, 40), 1);
        assert_eq!(nice_bucket_us(130.0, 40), 5);
        assert_eq!(nice_bucket_us(3_500.0, 40), 100);
    }

    #[test]
    fn histogram_lists_non_empty_buckets_and_catches_the_tail() {
        let mut h = LatencyHistogram::new();
        for ns in [1_500, 1_700, 9_000, 256_000] {
            h.record(ns);
        }
        let text = histogram_text(&h, Some(5));
        let rows: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(rows.len(), 3, "{text}");
        assert!(
            rows[0].trim_start().starts_with("0-5") && rows[0].contains(" 2 "),
            "{text}"
        );
        assert!(rows[2].trim_start().starts_with("255-260"), "{text}");
    }

    #[test]
    fn rate_and_duration_ranges() {
        for ok in ["1", "1000", "20000", "2e4", " 50.5 "] {
            assert!(parse_rate_hz(ok).is_ok(), "{ok}");
        }
        for bad in [
            "0.999", "20000.5", "1e9", "1e-9", "-5", "0", "NaN", "inf", "-inf", "x",
        ] {
            assert!(parse_rate_hz(bad).is_err(), "{bad}");
        }
        for ok in ["1e-6", "10", "86400"] {
            assert!(parse_duration_s(ok).is_ok(), "{ok}");
        }
        for bad in ["0", "-1", "86400.001", "NaN", "inf", "-inf", ""] {
            assert!(parse_duration_s(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ticks_fit_within_the_duration() {
        // 4 Hz for 0.9 s: releases at 0.25, 0.5, 0.75 s; a fourth would be at 1 s.
        assert_eq!(ticks_within(0.9, 250_000_000), 3);
        assert_eq!(ticks_within(1.0, 250_000_000), 4);
        assert_eq!(ticks_within(0.5, 1_000_000_000), 0);
        // 3 kHz (T = 333 333 ns) for 10 s: 30 000 ticks, 9.99999 s.
        assert_eq!(ticks_within(10.0, 333_333), 30_000);
        assert_eq!(ticks_within(86_400.0, 50_000), 1_728_000_000);
    }

    #[test]
    fn csv_rows_have_the_header_columns() {
        let mut buf = Vec::new();
        let r = TickRecord {
            release_index: 7,
            wake_latency_ns: 1_234,
            compute_ns: 56,
            missed_deadline: true,
            skipped_after: 2,
            safe_output: false,
        };
        write_csv_row(&mut buf, &r).expect("write to a Vec");
        assert_eq!(String::from_utf8_lossy(&buf), "7,1234,56,1,2,0\n");
        assert_eq!(CSV_HEADER.split(',').count(), 6);
    }
}
