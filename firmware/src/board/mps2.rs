//! ARM MPS2 with the AN385 (Cortex-M3) or AN386 (Cortex-M4F) FPGA image, as QEMU's
//! `mps2-an385` and `mps2-an386` emulate it: 25 MHz system clock, the mailbox at the base of the
//! 16 MB PSRAM (QEMU's machine RAM, which the host backs with a file), CMSDK APB timer 0 as the
//! measuring clock. Never blocks, allocates or panics.

use core::ptr::{read_volatile, write_volatile};

/// Core clock (SysTick's, with CLKSOURCE = processor) and the APB timers' clock, Hz.
pub const SYSCLK_HZ: u32 = 25_000_000;
/// The mailbox's base address: the PSRAM.
pub const MAILBOX_BASE: usize = 0x2100_0000;
/// CMSDK APB timer 0.
const TIMER0_BASE: usize = 0x4000_0000;
/// A word no memory answers (reading it takes a bus fault, escalated to HardFault).
pub const UNMAPPED: usize = 0xF000_0000;

/// Start the measuring clock: timer 0 counting down from 2³² − 1 at [`SYSCLK_HZ`].
pub fn start_clock() {
    // SAFETY: CMSDK APB timer 0's RELOAD (+0x8), VALUE (+0x4) and CTRL (+0x0) registers, which
    // exist on this board; nothing else uses the timer.
    unsafe {
        write_volatile((TIMER0_BASE + 0x8) as *mut u32, u32::MAX);
        write_volatile((TIMER0_BASE + 0x4) as *mut u32, u32::MAX);
        write_volatile(TIMER0_BASE as *mut u32, 1);
    }
}

/// The measuring clock now: it counts down, so an interval is `earlier - later` (wrapping).
#[inline(always)]
pub fn clock() -> u32 {
    // SAFETY: timer 0's VALUE register (read only has no side effects).
    unsafe { read_volatile((TIMER0_BASE + 0x4) as *const u32) }
}
