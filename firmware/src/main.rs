//! The ball-blocking arm's controller as Cortex-M firmware.
//!
//! SysTick interrupts every [`TICK_HZ`]⁻¹ s. Each interrupt looks at the mailbox
//! ([`control_core::mailbox`]): a new setup builds the controller ([`control_core::arm`]); a new
//! state is ticked (or answered with the safe state's output) and the servo's output goes back
//! as a compact frame ([`control_core::compact`]). The measuring clock's counts spent decoding,
//! in the controller and encoding are written beside each answer. A HardFault or a panic writes
//! the fault word and stops. The board is [`board`]; nothing else here is board-specific.
//!
//! Never allocates (there is no allocator); the interrupt handler never blocks.
#![no_std]
#![no_main]

mod board;

use core::ptr::{read_volatile, write_volatile};
use core::sync::atomic::{Ordering, compiler_fence};

use control_core::arm::{ArmController, ArmTarget};
use control_core::compact::{
    self, ArmSetupFrame, CompactCommand, CompactError, CompactState, Kind, MAX_FRAME_LEN,
    MAX_TARGETS,
};
use control_core::mailbox::{self, Answer};
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::{ExceptionFrame, entry, exception};

/// How often SysTick looks at the mailbox, Hz (20 kHz: 1,250 cycles of the 25 MHz clock).
const TICK_HZ: u32 = 20_000;

fn word(offset: usize) -> *mut u32 {
    (board::MAILBOX_BASE + offset) as *mut u32
}

fn read(offset: usize) -> u32 {
    // SAFETY: an aligned word inside the mailbox (offsets from control_core::mailbox).
    unsafe { read_volatile(word(offset)) }
}

fn write(offset: usize, value: u32) {
    // SAFETY: as in `read`.
    unsafe { write_volatile(word(offset), value) }
}

#[entry]
fn main() -> ! {
    for offset in (0..mailbox::REQUEST).step_by(4) {
        write(offset, 0);
    }
    write(mailbox::VERSION, mailbox::LAYOUT_VERSION);
    write(mailbox::CLOCK_HZ, board::SYSCLK_HZ);
    board::start_clock();
    let Some(mut core) = cortex_m::Peripherals::take() else {
        fault(mailbox::FAULT_PANIC, 0)
    };
    core.SYST.set_clock_source(SystClkSource::Core);
    core.SYST.set_reload(board::SYSCLK_HZ / TICK_HZ - 1);
    core.SYST.clear_current();
    core.SYST.enable_interrupt();
    compiler_fence(Ordering::SeqCst);
    write(mailbox::BOOT, mailbox::MAGIC);
    core.SYST.enable_counter();
    loop {
        cortex_m::asm::wfi();
    }
}

/// What the interrupt keeps between requests. All zeros at start (it lives in `.bss`, costing
/// no flash); the controller, whose `None` is not all zeros, is kept apart.
struct Firmware {
    last_request: u32,
    targets: heapless::Vec<ArmTarget, MAX_TARGETS>,
    request: [u8; MAX_FRAME_LEN],
    response: [u8; MAX_FRAME_LEN],
}

#[exception]
fn SysTick() {
    static mut FW: Firmware = Firmware {
        last_request: 0,
        targets: heapless::Vec::new(),
        request: [0; MAX_FRAME_LEN],
        response: [0; MAX_FRAME_LEN],
    };
    static mut CONTROLLER: Option<ArmController> = None;
    if read(mailbox::COMMAND) == mailbox::COMMAND_FAULT {
        // SAFETY: deliberately reads a word no memory answers: the fault path's self-test.
        unsafe { read_volatile(board::UNMAPPED as *const u32) };
    }
    let sequence = read(mailbox::REQUEST_SEQ);
    if sequence == FW.last_request {
        return;
    }
    FW.last_request = sequence;
    compiler_fence(Ordering::SeqCst);
    let t0 = board::clock();
    let len = (read(mailbox::REQUEST_LEN) as usize).min(MAX_FRAME_LEN);
    for (i, b) in FW.request.iter_mut().take(len).enumerate() {
        // SAFETY: a byte of the request area (len ≤ MAX_FRAME_LEN ≤ AREA_LEN).
        *b = unsafe { read_volatile((board::MAILBOX_BASE + mailbox::REQUEST + i) as *const u8) };
    }
    let (answer, detail, response_len, t1, t2) = handle(FW, CONTROLLER, len, t0);
    let t3 = board::clock();
    for (i, b) in FW.response.iter().take(response_len).enumerate() {
        // SAFETY: a byte of the response area (response_len ≤ MAX_FRAME_LEN ≤ AREA_LEN).
        unsafe { write_volatile((board::MAILBOX_BASE + mailbox::RESPONSE + i) as *mut u8, *b) };
    }
    write(mailbox::RESPONSE_LEN, response_len as u32);
    write(mailbox::ANSWER, answer as u32);
    write(mailbox::ANSWER_DETAIL, detail);
    write(mailbox::COUNTS_DECODE, t0.wrapping_sub(t1));
    write(mailbox::COUNTS_CONTROL, t1.wrapping_sub(t2));
    write(mailbox::COUNTS_ENCODE, t2.wrapping_sub(t3));
    write(mailbox::ANSWERED, read(mailbox::ANSWERED).wrapping_add(1));
    compiler_fence(Ordering::SeqCst);
    write(mailbox::RESPONSE_SEQ, sequence);
}

/// Decode, control, encode: (answer, detail, response length, clock after decoding, clock after
/// the controller).
fn handle(
    fw: &mut Firmware,
    controller: &mut Option<ArmController>,
    len: usize,
    t0: u32,
) -> (Answer, u32, usize, u32, u32) {
    let bytes = fw.request.get(..len).unwrap_or(&[]);
    let bad = |e: CompactError| (Answer::BadFrame, e.code(), 0, t0, t0);
    match compact::peek_kind(bytes) {
        Ok(Kind::ArmSetup) => {
            let frame = match ArmSetupFrame::decode(bytes) {
                Ok(f) => f,
                Err(e) => return bad(e),
            };
            let t1 = board::clock();
            let built = ArmController::new(&frame.setup);
            let t2 = board::clock();
            match built {
                Ok(c) => {
                    *controller = Some(c);
                    fw.targets = frame.targets;
                    (Answer::Ok, 0, 0, t1, t2)
                }
                Err(e) => {
                    *controller = None;
                    (Answer::SetupRefused, e.code(), 0, t1, t2)
                }
            }
        }
        Ok(Kind::State) => {
            let state = match CompactState::decode(bytes) {
                Ok(s) => s,
                Err(e) => return bad(e),
            };
            let t1 = board::clock();
            let Some(controller) = controller.as_mut() else {
                return (Answer::NoSetup, 0, 0, t1, t1);
            };
            let [joint] = state.joints.as_slice() else {
                return (Answer::JointCount, state.joints.len() as u32, 0, t1, t1);
            };
            let output = if state.safe {
                controller.safe(*joint)
            } else {
                controller.tick(&fw.targets, state.sim_time_s, *joint)
            };
            let t2 = board::clock();
            let mut command = CompactCommand {
                sequence: state.sequence,
                step: state.step,
                safe: state.safe,
                outputs: heapless::Vec::new(),
            };
            // One output into a capacity of MAX_JOINTS: always fits.
            let _ = command.outputs.push(output);
            match command.encode(&mut fw.response) {
                Ok(n) => (Answer::Ok, 0, n, t1, t2),
                Err(_) => (Answer::ResponseTooLong, 0, 0, t1, t2),
            }
        }
        Ok(Kind::Command) => bad(CompactError::Kind(Kind::Command as u8)),
        Err(e) => bad(e),
    }
}

/// Record a fault and stop: the host sees the fault word and ends the run.
fn fault(kind: u32, detail: u32) -> ! {
    write(mailbox::FAULT_DETAIL, detail);
    compiler_fence(Ordering::SeqCst);
    write(mailbox::FAULT, kind);
    loop {
        cortex_m::asm::wfi();
    }
}

#[exception]
unsafe fn HardFault(frame: &ExceptionFrame) -> ! {
    fault(mailbox::FAULT_HARD, frame.pc())
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    fault(mailbox::FAULT_PANIC, 0)
}
