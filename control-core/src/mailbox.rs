//! The shared-memory mailbox between a host and a controller running as firmware: a region of
//! the microcontroller's RAM that the host also maps (under QEMU, the board's RAM backed by a
//! host file). The layout and the protocol live here so that both sides agree by construction;
//! neither the host's mapping nor the firmware's volatile accesses are in this crate.
//!
//! Protocol, one request at a time:
//! 1. The firmware boots, clears the words and writes [`MAGIC`] at [`BOOT`] last.
//! 2. The host writes a compact frame ([`crate::compact`]) at [`REQUEST`], its length at
//!    [`REQUEST_LEN`], then, last and as one 32-bit store, a new value at [`REQUEST_SEQ`].
//! 3. The firmware's periodic tick sees the new sequence, answers (a compact frame at
//!    [`RESPONSE`], its length at [`RESPONSE_LEN`], an [`Answer`] and its detail, the
//!    instruction-clock counts of each phase) and writes the request's sequence at
//!    [`RESPONSE_SEQ`], last.
//! 4. A fault in the firmware writes [`FAULT_HARD`] or [`FAULT_PANIC`] at [`FAULT`] and the
//!    faulting address at [`FAULT_DETAIL`], then the firmware stops.
//!
//! Every shared word is a naturally aligned little-endian u32 written whole (a word written in
//! pieces can be read torn by the other side).

/// Boot word's value once the firmware is ready: `"HILM"` little-endian.
pub const MAGIC: u32 = u32::from_le_bytes(*b"HILM");
/// The mailbox layout's version, at [`VERSION`].
pub const LAYOUT_VERSION: u32 = 1;

/// Offset of the boot word ([`MAGIC`] once ready).
pub const BOOT: usize = 0x00;
/// Offset of the layout version.
pub const VERSION: usize = 0x04;
/// Offset of the host's request sequence (written last by the host).
pub const REQUEST_SEQ: usize = 0x08;
/// Offset of the firmware's answered sequence (written last by the firmware).
pub const RESPONSE_SEQ: usize = 0x0C;
/// Offset of the request's length in bytes.
pub const REQUEST_LEN: usize = 0x10;
/// Offset of the response's length in bytes (0: no frame, see the answer).
pub const RESPONSE_LEN: usize = 0x14;
/// Offset of the [`Answer`] to the last request.
pub const ANSWER: usize = 0x18;
/// Offset of the answer's detail (a [`crate::compact::CompactError`] or setup error code).
pub const ANSWER_DETAIL: usize = 0x1C;
/// Offset of the fault word: 0, [`FAULT_HARD`] or [`FAULT_PANIC`].
pub const FAULT: usize = 0x20;
/// Offset of the fault's detail (the faulting program counter).
pub const FAULT_DETAIL: usize = 0x24;
/// Offset of the count of requests answered.
pub const ANSWERED: usize = 0x28;
/// Offset of the measuring clock's counts spent decoding the last request.
pub const COUNTS_DECODE: usize = 0x2C;
/// Offset of the counts spent in the controller (the tick or the setup).
pub const COUNTS_CONTROL: usize = 0x30;
/// Offset of the counts spent encoding the answer.
pub const COUNTS_ENCODE: usize = 0x34;
/// Offset of the measuring clock's frequency, Hz.
pub const CLOCK_HZ: usize = 0x38;
/// Offset of a host command word ([`COMMAND_FAULT`]: fault now, to test the fault path).
pub const COMMAND: usize = 0x3C;
/// Offset of the request frame.
pub const REQUEST: usize = 0x100;
/// Room for a frame in either direction, bytes.
pub const AREA_LEN: usize = 0x1000;
/// Offset of the response frame.
pub const RESPONSE: usize = REQUEST + AREA_LEN;
/// The mailbox's whole length, bytes.
pub const LEN: usize = RESPONSE + AREA_LEN;

// Every compact frame fits either area.
const _: () = assert!(crate::compact::MAX_FRAME_LEN <= AREA_LEN);

/// Fault word: the processor took a HardFault.
pub const FAULT_HARD: u32 = 0xF0;
/// Fault word: the firmware panicked (control-core never does; this is the handler's proof).
pub const FAULT_PANIC: u32 = 0xF1;
/// Command word: take a HardFault now (read an unmapped address). Tests the fault path.
pub const COMMAND_FAULT: u32 = 0xFA17;

/// What the firmware made of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Answer {
    /// Answered: the response holds the frame (none for a setup).
    Ok = 0,
    /// The request is not a valid compact frame (detail: [`crate::compact::CompactError::code`]).
    BadFrame = 1,
    /// The setup was refused by the controller (detail: [`crate::arm::ArmSetupError::code`]).
    SetupRefused = 2,
    /// A state came before any setup.
    NoSetup = 3,
    /// A state with another number of joints than the controller has.
    JointCount = 4,
    /// The answer does not fit the response area.
    ResponseTooLong = 5,
}

impl Answer {
    /// The answer with this code.
    pub fn from_code(code: u32) -> Option<Self> {
        Some(match code {
            0 => Self::Ok,
            1 => Self::BadFrame,
            2 => Self::SetupRefused,
            3 => Self::NoSetup,
            4 => Self::JointCount,
            5 => Self::ResponseTooLong,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_is_aligned_and_answers_round_trip() {
        for w in [
            BOOT,
            VERSION,
            REQUEST_SEQ,
            RESPONSE_SEQ,
            REQUEST_LEN,
            RESPONSE_LEN,
            ANSWER,
            ANSWER_DETAIL,
            FAULT,
            FAULT_DETAIL,
            ANSWERED,
            COUNTS_DECODE,
            COUNTS_CONTROL,
            COUNTS_ENCODE,
            CLOCK_HZ,
            COMMAND,
        ] {
            assert_eq!(w % 4, 0);
            assert!(w + 4 <= REQUEST);
        }
        for code in 0..6 {
            assert_eq!(Answer::from_code(code).map(|a| a as u32), Some(code));
        }
        assert_eq!(Answer::from_code(6), None);
    }
}
