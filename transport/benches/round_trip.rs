//! Round trip of a torque-frame-sized datagram out and a state-frame-sized one back, between two
//! threads of one process over a `SeqPacket` pair: the cost the controller pays per tick in
//! lockstep, minus the plant step. `seqpacket_round_trip/*` sends raw bytes;
//! `framelink_round_trip/same_cpu` sends real frames through a `FrameLink` on both ends (encode,
//! CRC-32, decode and guard included).
//!
//! `same_cpu` pins both threads to CPU 0 (the placement that matters most on this VM); `any_cpu` leaves
//! placement to the scheduler (on a 2-vCPU VM a cross-CPU wake costs 55–130 µs).
//!
//! Run: `cargo bench -p transport`
#![allow(missing_docs)]

use std::hint::black_box;
use std::thread;

use control_core::frames::{
    JointState, STATE_FRAME_LEN, StateFrame, TORQUE_FRAME_LEN, TorqueFrame,
};
use criterion::{Criterion, criterion_group, criterion_main};
use transport::{FrameLink, FrameTransport, SeqPacket};

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
        let reply = [0u8; STATE_FRAME_LEN];
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
    let frame = [0u8; TORQUE_FRAME_LEN];
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

fn framelink_ping_pong(c: &mut Criterion) {
    let (ours, theirs) = SeqPacket::pair().expect("socketpair");
    let echo = thread::spawn(move || {
        pin_to(0);
        let mut plant = FrameLink::new(theirs);
        let mut state = StateFrame::new(0, 0, 0.0);
        let _ = state.push_joint(JointState::default());
        while let Ok(t) = plant.recv_torques(None) {
            state.sequence = t.sequence;
            state.step = t.step;
            if plant.send_state(&state).is_err() {
                break;
            }
        }
    });
    pin_to(0);
    let mut ctl = FrameLink::new(ours);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3600);
    let mut k = 0u64;
    c.bench_function("framelink_round_trip/same_cpu", |b| {
        b.iter(|| {
            let mut t = TorqueFrame::new(k, k);
            let _ = t.push_torque(0.5);
            ctl.send_torques(black_box(&t)).expect("send");
            black_box(ctl.recv_state(deadline).expect("recv"));
            k += 1;
        });
    });
    drop(ctl);
    echo.join().expect("echo thread");
    unpin();
}

fn round_trip(c: &mut Criterion) {
    ping_pong(c, "seqpacket_round_trip/same_cpu", Some(0));
    ping_pong(c, "seqpacket_round_trip/any_cpu", None);
    framelink_ping_pong(c);
}

criterion_group!(benches, round_trip);
criterion_main!(benches);
