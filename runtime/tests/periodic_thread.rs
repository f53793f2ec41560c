//! The real control thread (SCHED_FIFO where the OS permits), run for real time. Nothing here
//! asserts a latency: only that the counts add up and that the watchdog acts within N ticks.

use std::time::{Duration, Instant};

use runtime::{Controller, PeriodicBuilder, StateSample, TickInfo, channels};

/// Echoes the state's value; the safe output is `u64::MAX`.
struct Echo;

impl Controller for Echo {
    type State = u64;
    type Output = u64;
    fn tick(&mut self, _: &TickInfo, state: Option<StateSample<u64>>) -> u64 {
        state.map_or(0, |s| s.value)
    }
    fn safe_output(&mut self, _: &TickInfo, _: Option<StateSample<u64>>) -> u64 {
        u64::MAX
    }
}

#[test]
fn one_second_at_1_khz_ticks_plus_skipped_match_elapsed_periods() {
    let (mut io, ctl) = channels::<u64, u64>(4096);
    let rt = PeriodicBuilder::from_rate_hz(1_000.0)
        .expect("valid rate")
        .priority(80)
        .spawn(Echo, ctl)
        .expect("control thread starts");
    let start = Instant::now();
    let mut k = 0;
    while start.elapsed() < Duration::from_secs(1) {
        k += 1;
        io.states.publish(k);
        while io.outputs.try_recv().is_some() {}
        std::thread::sleep(Duration::from_micros(300));
    }
    let outcome = rt.stop().expect("control thread ends cleanly");
    let r = &outcome.report;
    eprintln!("{}", serde_json::to_string_pretty(r).unwrap_or_default());
    let periods = r.elapsed_ns / r.period_ns;
    let passed = r.counters.ticks + r.counters.skipped_releases;
    assert!(
        passed.abs_diff(periods) <= 1,
        "ticks + skipped = {passed}, elapsed periods = {periods}"
    );
    assert_eq!(r.releases, passed);
    assert!(r.counters.ticks > 0);
    assert_eq!(r.records_kept as u64, r.counters.ticks);
    // Whatever the OS granted, the report says it (a refusal is a warning, never silent).
    assert_eq!(r.sched_fifo, r.setup.sched_fifo);
    assert_eq!(
        !r.sched_fifo,
        r.warnings.iter().any(|w| w.contains("NORMAL priority"))
    );
}

#[test]
fn watchdog_gives_the_safe_output_within_n_ticks_after_state_stops() {
    const N: u64 = 20;
    let (mut io, ctl) = channels::<u64, u64>(8192);
    let rt = PeriodicBuilder::from_rate_hz(1_000.0)
        .expect("valid rate")
        .priority(80)
        .watchdog_ticks(N)
        .spawn(Echo, ctl)
        .expect("control thread starts");
    let mut outputs = Vec::new();
    // Feed one state per output received, for 300 outputs.
    io.states.publish(1);
    while outputs.len() < 300 {
        if let Some(o) = io.outputs.recv_timeout(Duration::from_millis(100)) {
            outputs.push(o);
            io.states.publish(outputs.len() as u64 + 1);
        }
    }
    // Stop feeding; wait (bounded, as a liveness guard only) for a safe output.
    let guard = Instant::now();
    while !outputs.last().is_some_and(|o| o.safe) && guard.elapsed() < Duration::from_secs(20) {
        if let Some(o) = io.outputs.recv_timeout(Duration::from_millis(100)) {
            outputs.push(o);
        }
    }
    let outcome = rt.stop().expect("control thread ends cleanly");
    assert_eq!(outcome.report.counters.outputs_dropped, 0);
    let last_seq = outputs
        .iter()
        .filter_map(|o| o.state_seq)
        .max()
        .expect("states were seen");
    let fresh_at = outputs
        .iter()
        .position(|o| o.state_seq == Some(last_seq))
        .expect("last state seen");
    let safe_at = outputs
        .iter()
        .skip(fresh_at)
        .position(|o| o.safe)
        .expect("a safe output after the state stopped");
    // The tick that saw the last state fresh, then N stale ticks: the N-th is safe.
    assert_eq!(
        safe_at as u64, N,
        "safe output {safe_at} ticks after the last fresh state"
    );
    let safe = outputs[fresh_at + safe_at];
    assert_eq!(safe.value, u64::MAX);
    assert!(outcome.report.counters.watchdog_trips >= 1);
    assert!(outcome.report.counters.safe_ticks >= 1);
}
