//! Round-trip percentiles of a `SeqPacket` pair between two threads (100-byte frame out,
//! 244-byte frame back), both pinned to one CPU or left unpinned.
//!
//! `cargo run --release -p transport --example ping_pong -- [CPU] [N]`
#![allow(missing_docs)]

use std::thread;
use std::time::Instant;

use transport::{FrameTransport, SeqPacket};

fn pin(cpu: Option<usize>) {
    if let Some(cpu) = cpu {
        // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes inside it (cpu < 1024);
        // the call only reads it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu % 1024, &mut set);
            libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set);
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let cpu: Option<usize> = args.next().and_then(|a| a.parse().ok());
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let (a, b) = SeqPacket::pair()?;
    let echo = thread::spawn(move || {
        pin(cpu);
        let mut buf = [0u8; 512];
        let reply = [0u8; 244];
        while b.recv(&mut buf).is_ok() {
            if b.send(&reply).is_err() {
                break;
            }
        }
    });
    pin(cpu);
    let frame = [0u8; 100];
    let mut buf = [0u8; 512];
    let mut ns = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        a.send(&frame)?;
        a.recv(&mut buf)?;
        ns.push(t.elapsed().as_nanos());
    }
    drop(a);
    echo.join().map_err(|_| "echo thread panicked")?;
    ns.sort_unstable();
    let q = |p: f64| ns[((ns.len() - 1) as f64 * p) as usize] as f64 / 1e3;
    println!(
        "round trip over {n}: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs (cpu {cpu:?})",
        q(0.5),
        q(0.99),
        q(1.0)
    );
    Ok(())
}
