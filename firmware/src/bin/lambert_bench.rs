//! Instructions per Lambert W call on the Cortex-M: control-core's compact f32 functions, its
//! micromath f32 ones, and the `lambert_w` crate's f32 ones, on the same inputs. Run under QEMU
//! with `-icount shift=6` and semihosting; prints one line per function:
//! `name calls instructions_per_call`, then exits. `tests/mcu.rs` runs it and holds the compact
//! functions to at most the crate's cost.
#![no_std]
#![no_main]

#[path = "../board/mod.rs"]
#[allow(dead_code)]
mod board;

use core::hint::black_box;

use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hprintln};

/// QEMU's `-icount` shift the instruction conversion assumes: 2^6 ns per instruction.
const ICOUNT_SHIFT: u64 = 6;
/// Inputs per branch.
const N: usize = 96;

/// Arguments of W₀ over its domain: the branch point's neighbourhood, around zero, and up to
/// 1e30, spaced evenly in each region.
fn w0_inputs() -> [f32; N] {
    let mut x = [0.0f32; N];
    for (i, v) in x.iter_mut().enumerate() {
        let t = i as f32 / (N - 1) as f32;
        *v = match i % 3 {
            0 => -0.367_879 + 0.3 * t,
            1 => -0.05 + 0.1 * t,
            _ => libm::powf(10.0, -3.0 + 33.0 * t),
        };
    }
    x
}

/// Arguments of W₋₁ over its domain (−1/e, 0): near the branch point, the middle, and down to
/// tiny magnitudes.
fn wm1_inputs() -> [f32; N] {
    let mut x = [0.0f32; N];
    for (i, v) in x.iter_mut().enumerate() {
        let t = i as f32 / (N - 1) as f32;
        *v = match i % 2 {
            0 => -0.367_879 + 0.36 * t,
            _ => -libm::powf(10.0, -30.0 + 29.0 * t),
        };
    }
    x
}

/// One benchmarked function: its name, its inputs, the function.
type Row<'a> = (&'a str, &'a [f32], &'a dyn Fn(f32) -> f32);

/// Instructions per call of `f` over `inputs`, less the loop's own (measured with an identity).
fn per_call(inputs: &[f32], f: impl Fn(f32) -> f32) -> u64 {
    let run = |g: &dyn Fn(f32) -> f32| {
        let t0 = board::clock();
        for &x in inputs {
            black_box(g(black_box(x)));
        }
        u64::from(t0.wrapping_sub(board::clock()))
    };
    let loop_only = run(&|x| x);
    let counts = run(&f).saturating_sub(loop_only);
    let ns = counts * 1_000_000_000 / u64::from(board::SYSCLK_HZ);
    (ns >> ICOUNT_SHIFT) / inputs.len() as u64
}

#[entry]
fn main() -> ! {
    board::start_clock();
    let w0 = w0_inputs();
    let wm1 = wm1_inputs();
    use control_core::lambert_w::{compact_f32, micromath_f32};
    let rows: [Row<'_>; 6] = [
        ("compact_f32::w0", &w0, &|x| {
            compact_f32::w0(x).unwrap_or(0.0)
        }),
        ("micromath_f32::w0", &w0, &|x| {
            micromath_f32::w0(x).unwrap_or(0.0)
        }),
        ("lambert_w::lambert_w0f", &w0, &lambert_w::lambert_w0f),
        ("compact_f32::wm1", &wm1, &|x| {
            compact_f32::wm1(x).unwrap_or(0.0)
        }),
        ("micromath_f32::wm1", &wm1, &|x| {
            micromath_f32::wm1(x).unwrap_or(0.0)
        }),
        ("lambert_w::lambert_wm1f", &wm1, &lambert_w::lambert_wm1f),
    ];
    for (name, inputs, f) in rows {
        hprintln!("{} {} {}", name, inputs.len(), per_call(inputs, f));
    }
    debug::exit(debug::EXIT_SUCCESS);
    loop {
        cortex_m::asm::wfi();
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    debug::exit(debug::EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}
