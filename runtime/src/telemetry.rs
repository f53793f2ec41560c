//! Per-tick telemetry: the control thread hands every [`TickRecord`] to a consumer over a bounded
//! `crossbeam-channel`, so that runs of any length need no per-tick storage.
//!
//! ```no_run
//! # use runtime::*;
//! # use runtime::synthetic::ServoOnPlant;
//! let (tx, rx) = telemetry::channel(telemetry::capacity_for(1000.0, 0.5));
//! let (_io, ctl) = channels(DEFAULT_OUTPUT_CAPACITY);
//! let rt = PeriodicBuilder::from_rate_hz(1000.0)?.max_ticks(10_000).telemetry(tx)
//!     .spawn(ServoOnPlant::new(1e-3)?, ctl)?;
//! // A consumer thread polling every 10 ms; it ends when the run has ended and it has drained
//! // the channel (the runtime drops its sender when the loop ends).
//! let consumer = std::thread::spawn(move || {
//!     let mut worst = 0;
//!     telemetry::consume(&rx, std::time::Duration::from_millis(10), |r| {
//!         worst = worst.max(r.wake_latency_ns);
//!     });
//!     worst
//! });
//! let outcome = rt.join()?;
//! let worst = consumer.join().unwrap_or(0);
//! // Records the consumer did not get were counted, never silently lost:
//! let c = outcome.report.counters;
//! assert_eq!(c.telemetry_sent + c.telemetry_dropped, c.ticks);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! On the control thread the only call is `Sender::try_send`: it never waits for room, and a
//! record that finds the channel full (or its receiver gone) is dropped and counted
//! ([`crate::TickCounters::telemetry_dropped`], [`crate::LiveStatus::telemetry_dropped`], a
//! warning in the report). The run's summaries ([`crate::RunReport::wake_latency_us`],
//! [`crate::RunReport::compute_us`]) do not depend on the channel: they are kept on the control
//! thread and cover every tick.
//!
//! How to consume (what keeps `try_send` cheap and wait-free in practice):
//! - **Poll** with `try_recv`/`try_iter` every few milliseconds rather than blocking in `recv`: a
//!   receiver parked in `recv` makes every `try_send` wake it (a mutex shared with the receiver
//!   and a futex syscall, on the control thread, every tick). A polling receiver never parks, and
//!   `try_send` is then a few atomic operations.
//! - **Size the channel** so that it never fills between two polls, with margin for the consumer
//!   being descheduled: [`capacity_for`] gives `rate × seconds`. `crossbeam`'s bounded channel is
//!   lock-free but not wait-free: when it is exactly full and the consumer is preempted in the
//!   middle of taking the very slot the producer wants next, `try_send` spins until the consumer
//!   resumes. A channel that never fills never meets that case.
//! - Only bounded channels with room are accepted ([`channel`] makes one;
//!   [`crate::PeriodicBuilder::telemetry`] refuses unbounded channels, whose sends allocate, and
//!   zero-capacity ones, which could never take a record without a waiting receiver).
//!
//! Per-tick cost on the control thread, after the tick's end time is taken (so outside
//! `compute_ns`), measured on the 2-vCPU dev VM (`cargo bench -p runtime --bench telemetry`):
//!
//! | operation | time |
//! | --- | --- |
//! | summaries: `TickStats::record` + `TickCounters::add` | 13 ns |
//! | `try_send` + `try_recv` (one thread) | 51 ns |
//! | `try_send` into a full channel (dropped, counted) | 16 ns |
//!
//! The runtime drops its sender when the loop ends, before [`crate::RuntimeHandle::is_finished`]
//! turns true, so a consumer draining until the channel is disconnected ends with the run (as
//! long as no other clone of the sender is alive).
//!
//! Must never, on the control thread: allocate, block, or panic (only `try_send`, whose result is
//! counted, is called there).

use std::time::Duration;

pub use crossbeam_channel::{Receiver, Sender, TryRecvError, TrySendError};

use crate::stats::TickRecord;

/// Sending end of the telemetry channel, given to [`crate::PeriodicBuilder::telemetry`].
pub type TelemetrySender = Sender<TickRecord>;
/// Receiving end of the telemetry channel, for the consumer.
pub type TelemetryReceiver = Receiver<TickRecord>;

/// A bounded telemetry channel holding up to `capacity` records (at least 1; 40 bytes each),
/// allocated now.
pub fn channel(capacity: usize) -> (TelemetrySender, TelemetryReceiver) {
    crossbeam_channel::bounded(capacity.max(1))
}

/// Capacity holding `seconds` of ticks at `rate_hz` (at least 1024 records, at most 2^22
/// = 160 MiB; a non-finite or non-positive product gives the minimum).
pub fn capacity_for(rate_hz: f64, seconds: f64) -> usize {
    const MIN: usize = 1024;
    const MAX: usize = 1 << 22;
    let n = (rate_hz * seconds).ceil();
    if n.is_finite() && n > MIN as f64 {
        // In (1024, +inf): clamped below 2^22 before the cast.
        n.min(MAX as f64) as usize
    } else {
        MIN
    }
}

/// The consumer loop: calls `f` for every record until the run has ended (every sender dropped)
/// and the channel is drained, sleeping `poll` whenever it is empty (polling, never parked in
/// `recv`: see the module docs). Runs on the consumer's thread; returns the number of records.
pub fn consume(rx: &TelemetryReceiver, poll: Duration, mut f: impl FnMut(TickRecord)) -> u64 {
    let mut n = 0_u64;
    loop {
        match rx.try_recv() {
            Ok(r) => {
                n += 1;
                f(r);
            }
            Err(TryRecvError::Empty) => std::thread::sleep(poll),
            Err(TryRecvError::Disconnected) => return n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_is_bounded_both_ways() {
        assert_eq!(capacity_for(1000.0, 0.5), 1024);
        assert_eq!(capacity_for(20_000.0, 0.5), 10_000);
        assert_eq!(capacity_for(1e12, 1e6), 1 << 22);
        assert_eq!(capacity_for(f64::NAN, 1.0), 1024);
        assert_eq!(capacity_for(-5.0, 1.0), 1024);
        assert_eq!(channel(0).0.capacity(), Some(1));
    }

    #[test]
    fn consume_drains_what_was_sent_before_the_sender_went_away() {
        let (tx, rx) = channel(4);
        let producer = std::thread::spawn(move || {
            for k in 0..100 {
                let r = TickRecord {
                    release_index: k,
                    ..TickRecord::default()
                };
                // Blocking send, test only: the control thread only ever uses `try_send`.
                let _ = tx.send(r);
            }
        });
        let mut seen = Vec::new();
        let n = consume(&rx, Duration::from_micros(50), |r| {
            seen.push(r.release_index)
        });
        let _ = producer.join();
        assert_eq!(n, 100);
        assert_eq!(seen, (0..100).collect::<Vec<_>>());
    }
}
