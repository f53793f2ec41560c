//! Per-tick bookkeeping cost on the control thread, outside the measured compute time: adding a
//! tick to the summary histograms and counters, and offering its record to the telemetry channel
//! (delivered, or refused because the channel is full).
//!
//! `cargo bench -p runtime --bench telemetry`

use criterion::{Criterion, black_box, criterion_main};
use runtime::{TickCounters, TickRecord, TickStats, telemetry};

fn record(k: u64) -> TickRecord {
    TickRecord {
        release_index: k,
        // Spread over many histogram buckets, as real latencies are.
        wake_latency_ns: 5_000 + (k.wrapping_mul(7_919) % 60_000),
        compute_ns: 300 + (k.wrapping_mul(104_729) % 3_000),
        ..TickRecord::default()
    }
}

fn bookkeeping(c: &mut Criterion) {
    let mut stats = TickStats::new();
    let mut counters = TickCounters::default();
    let mut k = 0_u64;
    c.bench_function("summaries: TickStats::record + TickCounters::add", |b| {
        b.iter(|| {
            k += 1;
            let r = record(black_box(k));
            stats.record(&r);
            counters.add(&r);
        })
    });
    let (tx, rx) = telemetry::channel(1024);
    c.bench_function("telemetry: try_send + try_recv (one thread)", |b| {
        b.iter(|| {
            k += 1;
            let _ = tx.try_send(record(black_box(k)));
            black_box(rx.try_recv())
        })
    });
    let (full_tx, _full_rx) = telemetry::channel(1);
    let _ = full_tx.try_send(record(0));
    c.bench_function("telemetry: try_send into a full channel (dropped)", |b| {
        b.iter(|| black_box(full_tx.try_send(record(black_box(k)))).is_err())
    });
    black_box((stats.wake_latency.count(), counters.ticks));
}

/// The benchmark group (criterion's macro makes an undocumented `pub fn`).
#[allow(missing_docs)]
mod group {
    use super::{Criterion, bookkeeping};
    criterion::criterion_group! {
        name = benches;
        config = Criterion::default()
            .warm_up_time(std::time::Duration::from_millis(500))
            .measurement_time(std::time::Duration::from_secs(2));
        targets = bookkeeping
    }
}
criterion_main!(group::benches);
