//! Compact frames for a microcontroller link (a shared-memory mailbox, a UART): each frame is
//! sized to what it carries (a one-joint state is 44 bytes, not the 2,692 of [`crate::frames`]),
//! little-endian, checked as strictly: magic, version, kind, declared length, counts within the
//! type's capacity, every number finite, and a CRC-32 over the whole frame.
//!
//! Three kinds:
//! - [`CompactState`] (host → controller): step, time, each joint's angle and velocity;
//! - [`CompactCommand`] (controller → host): each joint's [`ServoOutput`] whole (torque, request,
//!   gains, status with its detail, whether the limit acted), so the host records exactly what
//!   the controller did;
//! - [`ArmSetupFrame`] (host → controller, once): an [`ArmSetup`] and its targets.
//!
//! Layout: a 12-byte header (magic `"HC"`, version, kind, sequence u32, total length u16, count
//! u8, flags u8), the body, then the CRC-32 ([`crate::frames::crc32`]) of everything before it.
//!
//! Never allocates, blocks or panics: encoding into a short buffer and decoding any bytes give a
//! typed error.

use crate::arm::{ArmServoKind, ArmSetup, ArmTarget};
use crate::frames::crc32;
use crate::gains::{Branch, CriticalGains, Field, GainError};
use crate::model::ArmModel;
use crate::servo::{JointState, ServoOutput, ServoStatus};
use crate::servo_fixed::FixedSaturation;

/// The magic bytes that open every compact frame.
pub const MAGIC: [u8; 2] = *b"HC";
/// The compact format's version.
pub const VERSION: u8 = 1;
/// Header length, bytes.
pub const HEADER_LEN: usize = 12;
/// Checksum length, bytes.
pub const CRC_LEN: usize = 4;
/// Most joints a state or command carries.
pub const MAX_JOINTS: usize = 48;
/// Most targets an arm setup carries.
pub const MAX_TARGETS: usize = 64;
/// Bytes per joint in a state: angle and velocity.
const STATE_JOINT_LEN: usize = 16;
/// Bytes per joint in a command: five f64 (torque, request, stiffness, damping, status detail)
/// and four bytes (status, status detail, limited, spare).
const COMMAND_JOINT_LEN: usize = 44;
/// Fixed part of an arm setup's body.
const SETUP_FIXED_LEN: usize = 8 + 13 * 8;
/// Largest compact frame of any kind: a command for [`MAX_JOINTS`] joints.
pub const MAX_FRAME_LEN: usize = max(
    frame_len(Kind::Command, MAX_JOINTS),
    max(
        frame_len(Kind::State, MAX_JOINTS),
        frame_len(Kind::ArmSetup, MAX_TARGETS),
    ),
);

const fn max(a: usize, b: usize) -> usize {
    if a > b { a } else { b }
}

/// What a compact frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// [`CompactState`].
    State = 1,
    /// [`CompactCommand`].
    Command = 2,
    /// [`ArmSetupFrame`].
    ArmSetup = 3,
}

/// Why bytes are not a compact frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactError {
    /// Fewer bytes than the header and checksum, or than the header's length says.
    Short,
    /// The magic bytes are wrong.
    Magic,
    /// Another version of the format.
    Version(u8),
    /// Another kind than the one asked for.
    Kind(u8),
    /// The header's length disagrees with its count, or with the bytes given.
    Length,
    /// More joints or targets than the capacity.
    Count(u8),
    /// The checksum does not match.
    Checksum,
    /// A number that must be finite is not (its byte offset in the frame).
    NonFinite(u16),
    /// An enumeration's code is unknown (its byte offset in the frame).
    Code(u16),
    /// The buffer to encode into is too short.
    BufferTooShort,
}

impl CompactError {
    /// The error as one word (the kind in the high half, its value in the low), for a mailbox.
    pub fn code(&self) -> u32 {
        let (kind, value) = match *self {
            Self::Short => (1, 0),
            Self::Magic => (2, 0),
            Self::Version(v) => (3, u16::from(v)),
            Self::Kind(k) => (4, u16::from(k)),
            Self::Length => (5, 0),
            Self::Count(n) => (6, u16::from(n)),
            Self::Checksum => (7, 0),
            Self::NonFinite(at) => (8, at),
            Self::Code(at) => (9, at),
            Self::BufferTooShort => (10, 0),
        };
        (kind << 16) | u32::from(value)
    }

    /// The error [`Self::code`] gave `code`.
    pub fn from_code(code: u32) -> Option<Self> {
        let value = (code & 0xFFFF) as u16;
        let byte = u8::try_from(value).ok();
        Some(match code >> 16 {
            1 => Self::Short,
            2 => Self::Magic,
            3 => Self::Version(byte?),
            4 => Self::Kind(byte?),
            5 => Self::Length,
            6 => Self::Count(byte?),
            7 => Self::Checksum,
            8 => Self::NonFinite(value),
            9 => Self::Code(value),
            10 => Self::BufferTooShort,
            _ => return None,
        })
    }
}

impl core::fmt::Display for CompactError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Short => write!(f, "compact frame: too short"),
            Self::Magic => write!(f, "compact frame: wrong magic"),
            Self::Version(v) => write!(f, "compact frame: version {v}, expected {VERSION}"),
            Self::Kind(k) => write!(f, "compact frame: kind {k} where another was expected"),
            Self::Length => write!(f, "compact frame: length disagrees with its count"),
            Self::Count(n) => write!(f, "compact frame: count {n} beyond capacity"),
            Self::Checksum => write!(f, "compact frame: checksum mismatch"),
            Self::NonFinite(at) => write!(f, "compact frame: non-finite number at byte {at}"),
            Self::Code(at) => write!(f, "compact frame: unknown code at byte {at}"),
            Self::BufferTooShort => write!(f, "compact frame: buffer too short to encode"),
        }
    }
}

/// A frame's header fields as decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The frame's kind.
    pub kind: Kind,
    /// Its sequence number.
    pub sequence: u32,
    /// Joints or targets in its body.
    pub count: u8,
    /// Kind-specific flags.
    pub flags: u8,
}

/// The frame length for `kind` with `count` joints or targets.
pub const fn frame_len(kind: Kind, count: usize) -> usize {
    HEADER_LEN
        + CRC_LEN
        + match kind {
            Kind::State => 12 + count * STATE_JOINT_LEN,
            Kind::Command => 4 + count * COMMAND_JOINT_LEN,
            Kind::ArmSetup => SETUP_FIXED_LEN + count * 16,
        }
}

const fn capacity(kind: Kind) -> usize {
    match kind {
        Kind::State | Kind::Command => MAX_JOINTS,
        Kind::ArmSetup => MAX_TARGETS,
    }
}

/// The kind a frame's header announces, without checking the rest.
pub fn peek_kind(bytes: &[u8]) -> Result<Kind, CompactError> {
    match bytes.get(3).copied() {
        Some(1) => Ok(Kind::State),
        Some(2) => Ok(Kind::Command),
        Some(3) => Ok(Kind::ArmSetup),
        Some(k) => Err(CompactError::Kind(k)),
        None => Err(CompactError::Short),
    }
}

/// Check a whole frame of `kind` (header, length, count, checksum) and return its header and
/// body.
fn open(bytes: &[u8], kind: Kind) -> Result<(Header, &[u8]), CompactError> {
    let head = bytes.get(..HEADER_LEN).ok_or(CompactError::Short)?;
    if head[..2] != MAGIC {
        return Err(CompactError::Magic);
    }
    if head[2] != VERSION {
        return Err(CompactError::Version(head[2]));
    }
    if head[3] != kind as u8 {
        return Err(CompactError::Kind(head[3]));
    }
    let sequence = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
    let len = usize::from(u16::from_le_bytes([head[8], head[9]]));
    let count = head[10];
    let flags = head[11];
    if usize::from(count) > capacity(kind) {
        return Err(CompactError::Count(count));
    }
    if len != frame_len(kind, usize::from(count)) {
        return Err(CompactError::Length);
    }
    let frame = bytes.get(..len).ok_or(CompactError::Short)?;
    let (signed, sum) = frame.split_at(len - CRC_LEN);
    if crc32(signed).to_le_bytes() != sum {
        return Err(CompactError::Checksum);
    }
    let header = Header {
        kind,
        sequence,
        count,
        flags,
    };
    Ok((header, &signed[HEADER_LEN..]))
}

/// A little-endian reader over a checked body; every read is within it (lengths were checked),
/// and a short read yields zeros rather than panicking.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some(s) = self.bytes.get(self.at..self.at + N) {
            out.copy_from_slice(s);
        }
        self.at += N;
        out
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    /// The offset in the frame of the next read (for errors).
    fn offset(&self) -> u16 {
        u16::try_from(HEADER_LEN + self.at).unwrap_or(u16::MAX)
    }
    fn any_f64(&mut self) -> f64 {
        f64::from_le_bytes(self.take())
    }
    fn f64(&mut self) -> Result<f64, CompactError> {
        let at = self.offset();
        let v = self.any_f64();
        if v.is_finite() {
            Ok(v)
        } else {
            Err(CompactError::NonFinite(at))
        }
    }
}

/// A little-endian writer into a buffer checked long enough up front.
struct Writer<'a> {
    bytes: &'a mut [u8],
    at: usize,
}

impl Writer<'_> {
    fn put(&mut self, v: &[u8]) {
        if let Some(s) = self.bytes.get_mut(self.at..self.at + v.len()) {
            s.copy_from_slice(v);
        }
        self.at += v.len();
    }
    fn u8(&mut self, v: u8) {
        self.put(&[v]);
    }
    fn u32(&mut self, v: u32) {
        self.put(&v.to_le_bytes());
    }
    fn f64(&mut self, v: f64) {
        self.put(&v.to_le_bytes());
    }
}

/// Write the header, run `body`, then the checksum: the encoded length.
fn seal(
    buf: &mut [u8],
    header: Header,
    body: impl FnOnce(&mut Writer<'_>),
) -> Result<usize, CompactError> {
    let count = usize::from(header.count);
    if count > capacity(header.kind) {
        return Err(CompactError::Count(header.count));
    }
    let len = frame_len(header.kind, count);
    let frame = buf.get_mut(..len).ok_or(CompactError::BufferTooShort)?;
    let mut w = Writer {
        bytes: frame,
        at: 0,
    };
    w.put(&MAGIC);
    w.u8(VERSION);
    w.u8(header.kind as u8);
    w.u32(header.sequence);
    // `len` ≤ MAX_FRAME_LEN < 65,536.
    w.put(&u16::try_from(len).unwrap_or(u16::MAX).to_le_bytes());
    w.u8(header.count);
    w.u8(header.flags);
    body(&mut w);
    let signed = len - CRC_LEN;
    let sum = crc32(frame.get(..signed).unwrap_or(&[]));
    if let Some(s) = frame.get_mut(signed..) {
        s.copy_from_slice(&sum.to_le_bytes());
    }
    Ok(len)
}

/// Flag of a [`CompactState`]: answer with the safe state's output for it, not a tick.
pub const STATE_SAFE: u8 = 1;

/// A plant state for the controller.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CompactState {
    /// Sequence number of the frame.
    pub sequence: u32,
    /// Whether the controller is asked for its safe state's output rather than a tick.
    pub safe: bool,
    /// Plant step of the state.
    pub step: u32,
    /// Simulated time of the state, s.
    pub sim_time_s: f64,
    /// The joints, in the model's order.
    pub joints: heapless::Vec<JointState, MAX_JOINTS>,
}

impl CompactState {
    /// Encode into `buf`: the length written.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, CompactError> {
        let header = Header {
            kind: Kind::State,
            sequence: self.sequence,
            count: u8::try_from(self.joints.len()).unwrap_or(u8::MAX),
            flags: if self.safe { STATE_SAFE } else { 0 },
        };
        seal(buf, header, |w| {
            w.u32(self.step);
            w.f64(self.sim_time_s);
            for j in &self.joints {
                w.f64(j.position_rad);
                w.f64(j.velocity_rad_s);
            }
        })
    }

    /// Decode and check `bytes` (every number finite).
    pub fn decode(bytes: &[u8]) -> Result<Self, CompactError> {
        let (header, body) = open(bytes, Kind::State)?;
        let mut r = Reader { bytes: body, at: 0 };
        let step = r.u32();
        let sim_time_s = r.f64()?;
        let mut joints = heapless::Vec::new();
        for _ in 0..header.count {
            let position_rad = r.f64()?;
            let velocity_rad_s = r.f64()?;
            // The count was checked against the capacity.
            joints
                .push(JointState {
                    position_rad,
                    velocity_rad_s,
                })
                .map_err(|_| CompactError::Count(header.count))?;
        }
        if header.flags & !STATE_SAFE != 0 {
            return Err(CompactError::Code(11));
        }
        Ok(Self {
            sequence: header.sequence,
            safe: header.flags & STATE_SAFE != 0,
            step,
            sim_time_s,
            joints,
        })
    }
}

/// Flag of a [`CompactCommand`]: these are the safe state's torques.
pub const COMMAND_SAFE: u8 = 1;

/// The controller's answer to a state: each joint's servo output whole.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CompactCommand {
    /// Sequence number of the frame (the state's it answers).
    pub sequence: u32,
    /// The plant step of the state it answers.
    pub step: u32,
    /// Whether these are the safe state's torques.
    pub safe: bool,
    /// Each joint's output.
    pub outputs: heapless::Vec<ServoOutput, MAX_JOINTS>,
}

impl CompactCommand {
    /// Encode into `buf`: the length written.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, CompactError> {
        let header = Header {
            kind: Kind::Command,
            sequence: self.sequence,
            count: u8::try_from(self.outputs.len()).unwrap_or(u8::MAX),
            flags: if self.safe { COMMAND_SAFE } else { 0 },
        };
        seal(buf, header, |w| {
            w.u32(self.step);
            for o in &self.outputs {
                let (code, detail, value) = status_code(o.status);
                w.f64(o.torque_nm);
                w.f64(o.requested_torque_nm);
                w.f64(o.stiffness_nm_per_rad);
                w.f64(o.damping_nms_per_rad);
                w.f64(value);
                w.u8(code);
                w.u8(detail);
                w.u8(u8::from(o.torque_limited));
                w.u8(0);
            }
        })
    }

    /// Decode and check `bytes`: torque, request and gains finite, status codes known.
    pub fn decode(bytes: &[u8]) -> Result<Self, CompactError> {
        let (header, body) = open(bytes, Kind::Command)?;
        let mut r = Reader { bytes: body, at: 0 };
        let step = r.u32();
        let mut outputs = heapless::Vec::new();
        for _ in 0..header.count {
            let torque_nm = r.f64()?;
            let requested_torque_nm = r.f64()?;
            let stiffness_nm_per_rad = r.f64()?;
            let damping_nms_per_rad = r.f64()?;
            let value = r.any_f64();
            let at = r.offset();
            let (code, detail, limited, spare) = (r.u8(), r.u8(), r.u8(), r.u8());
            let status = status_of(code, detail, value).ok_or(CompactError::Code(at))?;
            if limited > 1 || spare != 0 {
                return Err(CompactError::Code(at + 2));
            }
            outputs
                .push(ServoOutput {
                    torque_nm,
                    status,
                    stiffness_nm_per_rad,
                    damping_nms_per_rad,
                    torque_limited: limited == 1,
                    requested_torque_nm,
                })
                .map_err(|_| CompactError::Count(header.count))?;
        }
        if header.flags & !COMMAND_SAFE != 0 {
            return Err(CompactError::Code(11));
        }
        Ok(Self {
            sequence: header.sequence,
            step,
            safe: header.flags & COMMAND_SAFE != 0,
            outputs,
        })
    }
}

/// A [`ServoStatus`] as (code, detail, value): exactly, so that it decodes to the same status.
pub fn status_code(status: ServoStatus) -> (u8, u8, f64) {
    match status {
        ServoStatus::Idle => (0, 0, 0.0),
        ServoStatus::Tracking => (1, 0, 0.0),
        ServoStatus::GainClamped => (2, 0, 0.0),
        ServoStatus::Infeasible(e) => {
            let (detail, value) = match e {
                GainError::NonFinite(field) => (field_code(field), 0.0),
                GainError::NonPositiveInertia => (16, 0.0),
                GainError::NonPositiveTime => (17, 0.0),
                GainError::Unreachable { limit_rad } => (18, limit_rad),
                GainError::NoStableGain { coasting_rad } => (19, coasting_rad),
                GainError::Indeterminate => (20, 0.0),
                GainError::OutOfRange => (21, 0.0),
            };
            (3, detail, value)
        }
        ServoStatus::Holding => (4, 0, 0.0),
        ServoStatus::BadState => (5, 0, 0.0),
        ServoStatus::Saturated(s) => {
            let bits = [
                s.position,
                s.velocity,
                s.setpoint,
                s.error,
                s.feedforward,
                s.gains,
                s.request,
            ]
            .iter()
            .enumerate()
            .fold(0u8, |acc, (i, &b)| acc | (u8::from(b) << i));
            (6, bits, 0.0)
        }
    }
}

/// The status (code, detail, value) encodes, if the codes are known.
pub fn status_of(code: u8, detail: u8, value: f64) -> Option<ServoStatus> {
    Some(match code {
        0 => ServoStatus::Idle,
        1 => ServoStatus::Tracking,
        2 => ServoStatus::GainClamped,
        3 => ServoStatus::Infeasible(match detail {
            0..=7 => GainError::NonFinite(field_of(detail)?),
            16 => GainError::NonPositiveInertia,
            17 => GainError::NonPositiveTime,
            18 => GainError::Unreachable { limit_rad: value },
            19 => GainError::NoStableGain {
                coasting_rad: value,
            },
            20 => GainError::Indeterminate,
            21 => GainError::OutOfRange,
            _ => return None,
        }),
        4 => ServoStatus::Holding,
        5 => ServoStatus::BadState,
        6 if detail < 0x80 => {
            let bit = |i: u8| detail & (1 << i) != 0;
            ServoStatus::Saturated(FixedSaturation {
                position: bit(0),
                velocity: bit(1),
                setpoint: bit(2),
                error: bit(3),
                feedforward: bit(4),
                gains: bit(5),
                request: bit(6),
            })
        }
        _ => return None,
    })
}

fn field_code(field: Field) -> u8 {
    match field {
        Field::Inertia => 0,
        Field::Position => 1,
        Field::Velocity => 2,
        Field::Setpoint => 3,
        Field::Arrival => 4,
        Field::TimeToGo => 5,
        Field::Period => 6,
        Field::Margin => 7,
    }
}

fn field_of(code: u8) -> Option<Field> {
    Some(match code {
        0 => Field::Inertia,
        1 => Field::Position,
        2 => Field::Velocity,
        3 => Field::Setpoint,
        4 => Field::Arrival,
        5 => Field::TimeToGo,
        6 => Field::Period,
        7 => Field::Margin,
        _ => return None,
    })
}

/// An arm controller's setup and its targets, sent once before the first state.
#[derive(Debug, Clone, PartialEq)]
pub struct ArmSetupFrame {
    /// Sequence number of the frame.
    pub sequence: u32,
    /// The controller's setup.
    pub setup: ArmSetup,
    /// The targets, in increasing time order.
    pub targets: heapless::Vec<ArmTarget, MAX_TARGETS>,
}

impl ArmSetupFrame {
    /// Encode into `buf`: the length written.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, CompactError> {
        let header = Header {
            kind: Kind::ArmSetup,
            sequence: self.sequence,
            count: u8::try_from(self.targets.len()).unwrap_or(u8::MAX),
            flags: 0,
        };
        let s = &self.setup;
        let (kind, decimation, a, b, branch) = match s.kind {
            ArmServoKind::Analytic => (0u8, 0u32, 0.0, 0.0, 0u8),
            ArmServoKind::FixedGain(g) => (
                1,
                0,
                g.stiffness_nm_per_rad,
                g.damping_nms_per_rad,
                match g.branch {
                    Branch::Principal => 0,
                    Branch::Lower => 1,
                    Branch::AtSetpoint => 2,
                },
            ),
            ArmServoKind::StaticTiming { time_constants } => (2, 0, time_constants, 0.0, 0),
            ArmServoKind::AnalyticF32 => (3, 0, 0.0, 0.0, 0),
            ArmServoKind::AnalyticFixed { gain_decimation } => (4, gain_decimation, 0.0, 0.0, 0),
        };
        seal(buf, header, |w| {
            w.u8(kind);
            w.u8(branch);
            w.u8(0);
            w.u8(0);
            w.u32(decimation);
            for v in [
                a,
                b,
                s.model.length_m,
                s.model.thickness_m,
                s.model.mass_kg,
                s.model.gravity_m_s2,
                s.state_period_s,
                s.control_period_s,
                s.torque_limit_nm,
                s.stability_margin,
                s.tolerance_rad,
                0.0,
                0.0,
            ] {
                w.f64(v);
            }
            for t in &self.targets {
                w.f64(t.time_s);
                w.f64(t.angle_rad);
            }
        })
    }

    /// Decode and check `bytes` (every number finite, codes known; the setup's ranges are the
    /// controller's to check).
    pub fn decode(bytes: &[u8]) -> Result<Self, CompactError> {
        let (header, body) = open(bytes, Kind::ArmSetup)?;
        let mut r = Reader { bytes: body, at: 0 };
        let at = r.offset();
        let (kind, branch, spare0, spare1) = (r.u8(), r.u8(), r.u8(), r.u8());
        if spare0 != 0 || spare1 != 0 {
            return Err(CompactError::Code(at + 2));
        }
        let decimation = r.u32();
        let mut v = [0.0; 13];
        for slot in &mut v {
            *slot = r.f64()?;
        }
        let [
            a,
            b,
            length_m,
            thickness_m,
            mass_kg,
            gravity_m_s2,
            state_period_s,
            control_period_s,
            torque_limit_nm,
            stability_margin,
            tolerance_rad,
            _,
            _,
        ] = v;
        let branch = match branch {
            0 => Branch::Principal,
            1 => Branch::Lower,
            2 => Branch::AtSetpoint,
            _ => return Err(CompactError::Code(at + 1)),
        };
        let kind = match kind {
            0 => ArmServoKind::Analytic,
            1 => ArmServoKind::FixedGain(CriticalGains {
                stiffness_nm_per_rad: a,
                damping_nms_per_rad: b,
                branch,
            }),
            2 => ArmServoKind::StaticTiming { time_constants: a },
            3 => ArmServoKind::AnalyticF32,
            4 => ArmServoKind::AnalyticFixed {
                gain_decimation: decimation,
            },
            _ => return Err(CompactError::Code(at)),
        };
        let mut targets = heapless::Vec::new();
        for _ in 0..header.count {
            let time_s = r.f64()?;
            let angle_rad = r.f64()?;
            targets
                .push(ArmTarget { time_s, angle_rad })
                .map_err(|_| CompactError::Count(header.count))?;
        }
        Ok(Self {
            sequence: header.sequence,
            setup: ArmSetup {
                kind,
                model: ArmModel {
                    length_m,
                    thickness_m,
                    mass_kg,
                    gravity_m_s2,
                },
                state_period_s,
                control_period_s,
                torque_limit_nm,
                stability_margin,
                tolerance_rad,
            },
            targets,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn state(n: usize) -> CompactState {
        let mut s = CompactState {
            sequence: 7,
            safe: false,
            step: 100,
            sim_time_s: 0.5,
            joints: heapless::Vec::new(),
        };
        for i in 0..n {
            let _ = s.joints.push(JointState {
                position_rad: i as f64 * 0.1,
                velocity_rad_s: -(i as f64),
            });
        }
        s
    }

    #[test]
    fn a_one_joint_state_is_44_bytes_and_round_trips() {
        let mut buf = [0u8; MAX_FRAME_LEN];
        let s = state(1);
        let n = s.encode(&mut buf).expect("fits");
        assert_eq!(n, 44);
        assert_eq!(CompactState::decode(&buf[..n]), Ok(s));
    }

    #[test]
    fn every_corruption_is_refused() {
        let mut buf = [0u8; MAX_FRAME_LEN];
        let n = state(3).encode(&mut buf).expect("fits");
        for i in 0..n {
            for bit in 0..8 {
                let mut b = buf;
                b[i] ^= 1 << bit;
                assert!(CompactState::decode(&b[..n]).is_err(), "byte {i} bit {bit}");
            }
        }
        assert_eq!(
            CompactState::decode(&buf[..n - 1]),
            Err(CompactError::Short)
        );
        assert_eq!(
            CompactCommand::decode(&buf[..n]),
            Err(CompactError::Kind(1))
        );
    }

    #[test]
    fn a_non_finite_state_is_refused_where_it_is() {
        let mut buf = [0u8; MAX_FRAME_LEN];
        let mut s = state(2);
        s.joints[1].velocity_rad_s = f64::NAN;
        let n = s.encode(&mut buf).expect("encodes");
        assert_eq!(
            CompactState::decode(&buf[..n]),
            Err(CompactError::NonFinite(
                u16::try_from(HEADER_LEN + 12 + 24).unwrap()
            ))
        );
    }

    #[test]
    fn error_codes_round_trip() {
        for e in [
            CompactError::Short,
            CompactError::Magic,
            CompactError::Version(9),
            CompactError::Kind(7),
            CompactError::Length,
            CompactError::Count(200),
            CompactError::Checksum,
            CompactError::NonFinite(40),
            CompactError::Code(11),
            CompactError::BufferTooShort,
        ] {
            assert_eq!(CompactError::from_code(e.code()), Some(e));
        }
        assert_eq!(CompactError::from_code(0), None);
    }

    #[test]
    fn encoding_into_a_short_buffer_is_an_error() {
        let mut buf = [0u8; 43];
        assert_eq!(state(1).encode(&mut buf), Err(CompactError::BufferTooShort));
    }

    fn any_status() -> impl Strategy<Value = ServoStatus> {
        (0u8..7, 0u8..22, -1e3f64..1e3).prop_filter_map("known codes", |(c, d, v)| {
            let d = if c == 6 { d % 0x80 } else { d };
            status_of(c, d, v)
        })
    }

    proptest! {
        #[test]
        fn commands_round_trip_exactly(
            outs in proptest::collection::vec(
                (any::<f64>(), any::<f64>(), any::<f64>(), any::<f64>(), any_status(), any::<bool>()),
                0..=MAX_JOINTS,
            ),
            seq in any::<u32>(), step in any::<u32>(), safe in any::<bool>(),
        ) {
            let finite = |v: f64| if v.is_finite() { v } else { 1.0 };
            let mut c = CompactCommand { sequence: seq, step, safe, outputs: heapless::Vec::new() };
            for (t, r, k, d, status, limited) in outs {
                let _ = c.outputs.push(ServoOutput {
                    torque_nm: finite(t),
                    requested_torque_nm: finite(r),
                    stiffness_nm_per_rad: finite(k),
                    damping_nms_per_rad: finite(d),
                    status,
                    torque_limited: limited,
                });
            }
            let mut buf = [0u8; MAX_FRAME_LEN];
            let n = c.encode(&mut buf).expect("fits");
            prop_assert_eq!(n, frame_len(Kind::Command, c.outputs.len()));
            let back = CompactCommand::decode(&buf[..n]).expect("decodes");
            prop_assert_eq!(back, c);
        }

        #[test]
        fn any_bytes_decode_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = CompactState::decode(&bytes);
            let _ = CompactCommand::decode(&bytes);
            let _ = ArmSetupFrame::decode(&bytes);
            let _ = peek_kind(&bytes);
        }

        #[test]
        fn setups_round_trip(
            kind in 0u8..5, decimation in 1u32..16, a in 0.1f64..1e3,
            targets in proptest::collection::vec((0.0f64..100.0, -3.0f64..3.0), 0..=MAX_TARGETS),
        ) {
            let kind = match kind {
                0 => ArmServoKind::Analytic,
                1 => ArmServoKind::FixedGain(CriticalGains {
                    stiffness_nm_per_rad: a, damping_nms_per_rad: 2.0 * a, branch: Branch::Lower,
                }),
                2 => ArmServoKind::StaticTiming { time_constants: a },
                3 => ArmServoKind::AnalyticF32,
                _ => ArmServoKind::AnalyticFixed { gain_decimation: decimation },
            };
            let mut f = ArmSetupFrame {
                sequence: 1,
                setup: ArmSetup {
                    kind,
                    model: ArmModel { length_m: 1.0, thickness_m: 0.06, mass_kg: 2.0, gravity_m_s2: 9.8 },
                    state_period_s: 0.005,
                    control_period_s: 0.005,
                    torque_limit_nm: 1000.0,
                    stability_margin: 0.8,
                    tolerance_rad: 0.05,
                },
                targets: heapless::Vec::new(),
            };
            for (time_s, angle_rad) in targets {
                let _ = f.targets.push(ArmTarget { time_s, angle_rad });
            }
            let mut buf = [0u8; MAX_FRAME_LEN];
            let n = f.encode(&mut buf).expect("fits");
            prop_assert_eq!(ArmSetupFrame::decode(&buf[..n]).expect("decodes"), f);
        }
    }
}
