//! Round trip of a torque-frame-sized datagram (100 bytes) out and a state-frame-sized one
//! (244 bytes) back, between two threads of one process over a `SeqPacket` pair: the cost the
//! controller pays per tick in lockstep, minus the plant step.
//!
//! `same_cpu` pins both threads to CPU 0 (the placement DESIGN.md recommends); `any_cpu` leaves
//! placement to the scheduler (on a 2-vCPU VM a cross-CPU wake costs 55–130 µs).
//!
//! Run: `CARGO_TARGET_DIR=/work/targets/sim cargo bench -p transport`
#![allow(missing_docs)]

use std::hint::black_box;
use std::thread;

use criterion::{Criterion, criterion_group, criterion_main};
use transport::{FrameTransport, SeqPacket};

fn pin_to(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes inside it; the call only
    // reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set);
    }
}

fn unpin() {
    // SAFETY: as in `pin_to`.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for cpu in 0..64 {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set);
    }
}

fn ping_pong(c: &mut Criterion, name: &str, pin: Option<usize>) {
    let (ours, theirs) = SeqPacket::pair().expect("socketpair");
    let echo = thread::spawn(move || {
        if let Some(cpu) = pin {
            pin_to(cpu);
        }
        let mut buf = [0u8; 512];
        let reply = [0u8; 244];
        while theirs.recv(&mut buf).is_ok() {
            if theirs.send(&reply).is_err() {
                break;
            }
        }
    });
    match pin {
        Some(cpu) => pin_to(cpu),
        None => unpin(),
    }
    let frame = [0u8; 100];
    let mut buf = [0u8; 512];
    c.bench_function(name, |b| {
        b.iter(|| {
            ours.send(black_box(&frame)).expect("send");
            black_box(ours.recv(&mut buf).expect("recv"));
        });
    });
    drop(ours);
    echo.join().expect("echo thread");
    unpin();
}

fn round_trip(c: &mut Criterion) {
    ping_pong(c, "seqpacket_round_trip/same_cpu", Some(0));
    ping_pong(c, "seqpacket_round_trip/any_cpu", None);
}

criterion_group!(benches, round_trip);
criterion_main!(benches);
