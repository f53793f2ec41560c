//! Hand-over cost of the control-thread exchange: newest-state-in (triple buffer) and
//! outputs-out (rtrb SPSC ring), on one thread (the cost of each call) and across two spinning
//! threads (state → echo → output round trip; half of it is one hand-over).
//!
//! `cargo bench -p runtime --bench exchange`

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use criterion::{Criterion, black_box, criterion_main};
use runtime::{OutputSample, channels};

/// A state the size of a small multi-joint frame.
type Frame = [f64; 8];

fn sample(value: Frame, k: u64) -> OutputSample<Frame> {
    OutputSample {
        value,
        release_index: k,
        state_seq: Some(k),
        safe: false,
        sent_ns: 0,
    }
}

fn single_thread(c: &mut Criterion) {
    let (mut io, mut ctl) = channels::<Frame, Frame>(64);
    let mut k = 0_u64;
    c.bench_function("state: publish + poll (64-byte frame)", |b| {
        b.iter(|| {
            k += 1;
            io.states.publish_at(black_box([k as f64; 8]), k);
            black_box(ctl.states.poll(k))
        })
    });
    c.bench_function("state: poll only (no new state)", |b| {
        b.iter(|| black_box(ctl.states.poll(black_box(k))))
    });
    c.bench_function("output: try_send + try_recv (64-byte frame)", |b| {
        b.iter(|| {
            k += 1;
            let _ = ctl.outputs.try_send(sample(black_box([1.0; 8]), k));
            black_box(io.outputs.try_recv())
        })
    });
}

fn cross_thread(c: &mut Criterion) {
    let (mut io, mut ctl) = channels::<Frame, Frame>(64);
    let stop = Arc::new(AtomicBool::new(false));
    let echo_stop = Arc::clone(&stop);
    let echo = std::thread::spawn(move || {
        let mut last = 0;
        while !echo_stop.load(Ordering::Relaxed) {
            if let Some(s) = ctl.states.poll(0)
                && s.seq != last
            {
                last = s.seq;
                let _ = ctl.outputs.try_send(sample(s.value, s.seq));
            }
            std::hint::spin_loop();
        }
    });
    let mut seq = 0_u64;
    c.bench_function(
        "round trip across threads: publish state → echo → output",
        |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    seq = io.states.publish([seq as f64; 8]);
                    loop {
                        if let Some(o) = io.outputs.try_recv()
                            && o.state_seq == Some(seq)
                        {
                            break;
                        }
                        std::hint::spin_loop();
                    }
                }
                start.elapsed()
            })
        },
    );
    stop.store(true, Ordering::Relaxed);
    let _ = echo.join();
}

/// The benchmark group (criterion's macro makes an undocumented `pub fn`).
#[allow(missing_docs)]
mod group {
    use super::{Criterion, cross_thread, single_thread};
    criterion::criterion_group! {
        name = benches;
        config = Criterion::default()
            .warm_up_time(std::time::Duration::from_millis(500))
            .measurement_time(std::time::Duration::from_secs(2));
        targets = single_thread, cross_thread
    }
}
criterion_main!(group::benches);
