//! Wire frames between the plant and the controller: fixed-size, versioned, checksummed,
//! sequence-numbered state frames (plant → controller) and torque frames (controller → plant).
//!
//! This module is what a firmware on a real bus would speak too, so it never allocates and never
//! panics: encoding writes into a caller's `&mut [u8]`, decoding reads any `&[u8]` and either
//! returns a frame whose every value is finite and in range or a [`DecodeError`] that says why
//! the bytes were rejected. [`FrameGuard`] adds what one frame cannot know (stale and repeated
//! sequence numbers) and counts every rejection by reason.
//!
//! The vocabulary is generic: a state frame names bodies of the scene by number ([`BodyId`]), says
//! what happened to them ([`Event`]) and what force the scene's static geometry put on them
//! ([`ContactForce`]), and where its moving bodies are ([`BodyMotion`]: a floating-base
//! character's root and every link, world pose and velocity); what a body is (a thrown ball, a
//! dropped weight, a link of a chain or of a walker) is the scene's business, not the wire's.
//!
//! ```
//! use control_core::frames::{JointState, StateFrame, STATE_FRAME_LEN};
//! let mut frame = StateFrame::new(1, 0, 0.0);
//! frame.push_joint(JointState { position_rad: 0.5, velocity_rad_s: -1.0 }).ok();
//! let mut buf = [0u8; STATE_FRAME_LEN];
//! let n = frame.encode(&mut buf).ok();
//! assert_eq!(n, Some(STATE_FRAME_LEN));
//! assert_eq!(StateFrame::decode(&buf), Ok(frame));
//! ```
//!
//! # Layout (version 5, all integers and floats little-endian)
//! Every frame starts with an 8-byte header: magic `b"HILF"`, version (u8), kind (u8: 1 state,
//! 2 torque), total length in bytes (u16, including header and checksum). It ends with the
//! CRC-32 (IEEE 802.3, reflected, as zlib) of every byte before it. Unused joint, event,
//! contact and body slots and reserved bytes are zero. Frames are fixed-size whatever their joint count, so a receive
//! buffer of [`MAX_FRAME_LEN`] bytes fits both kinds.
//!
//! | state frame bytes | field |
//! |---|---|
//! | 0..8 | header (kind 1, length 3076) |
//! | 8..16 | sequence (u64) |
//! | 16..24 | plant step index (u64) |
//! | 24..32 | simulation time, s (f64) |
//! | 32..40 | measured cost of the step, ns (u64) |
//! | 40, 41 | joint count, event count (u8) |
//! | 42..44 | flags (u16, [`StateFlags`]) |
//! | 44..48 | sequence of the torque frame that drove the step, low 32 bits (u32, 0: none) |
//! | 48..52 | torque frames the plant refused so far, all reasons (u32) |
//! | 52..56 | of those, refused for a torque beyond the plant's limit (u32) |
//! | 56..824 | [`MAX_JOINTS`] × (position rad, velocity rad/s) (f64, f64) |
//! | 824..888 | [`MAX_EVENTS`] × 8-byte event: tag, reserved (0), body id (u16), 4 reserved |
//! | 888 | contact count (u8) |
//! | 889 | body count (u8) |
//! | 890..896 | reserved (0) |
//! | 896..1408 | [`MAX_CONTACTS`] × 32-byte contact: body id (u16), point (u8: 0 the whole body, k ≥ 1 the body's contact point k), 5 reserved (0), world force x, y, z, N (f64 × 3) |
//! | 1408..3072 | [`MAX_BODIES`] × 104-byte body (body k of the frame is the scene's body k): centre of mass x, y, z, m; orientation quaternion w, x, y, z; velocity of the centre of mass x, y, z, m/s; angular velocity x, y, z, rad/s (f64 × 13, world frame) |
//! | 3072..3076 | CRC-32 |
//!
//! | torque frame bytes | field |
//! |---|---|
//! | 0..8 | header (kind 2, length 420) |
//! | 8..16 | sequence (u64) |
//! | 16..24 | plant step the torques are for (u64) |
//! | 24..28 | flags (u32, [`TorqueFlags`]) |
//! | 28 | joint count (u8) |
//! | 29..32 | reserved |
//! | 32..416 | [`MAX_JOINTS`] × torque, N·m (f64) |
//! | 416..420 | CRC-32 |
//!
//! Event tags: 1 contact began, 2 contact ended, 3 plane crossed. Versions 1 (244-byte state
//! frames, ball/weight body kinds, no plant counters), 2 (252-byte state frames, no contact
//! forces), 3 (388-byte state frames, no bodies) and 4 (2692-byte state frames, four contacts
//! and no contact points) are refused as
//! [`DecodeError::WrongVersion`]. A body's orientation must be a unit quaternion within
//! [`UNIT_QUATERNION_TOLERANCE`] (a plant computing in f32 normalises to about 1e-7).
//!
//! Encoding is faithful: it writes non-finite values as they are, so a receiver can see (and
//! count) what a broken sender produced. Decoding rejects them.
//!
//! Never does: allocate, panic, or accept a frame with a non-finite value, an unknown flag, an
//! unknown event, more contacts than [`MAX_CONTACTS`], more bodies than [`MAX_BODIES`], an
//! orientation that is not a unit quaternion or a non-zero reserved byte.
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic
    )
)]

use core::fmt;

/// Most joints a frame carries.
pub const MAX_JOINTS: usize = 48;
/// Most events a state frame carries. A plant with more events in one step sends the rest in
/// the following frames.
pub const MAX_EVENTS: usize = 8;
/// Most contact forces a state frame carries (whole bodies' and contact points'; a plant with
/// more says which it leaves out).
pub const MAX_CONTACTS: usize = 16;
/// Most bodies whose motion a state frame carries.
pub const MAX_BODIES: usize = 16;
/// How far from 1 the norm of a body's orientation quaternion may be.
pub const UNIT_QUATERNION_TOLERANCE: f64 = 1e-5;
/// The four bytes every frame starts with.
pub const MAGIC: [u8; 4] = *b"HILF";
/// The layout version this module writes and accepts.
pub const VERSION: u8 = 5;
/// Length of the common header (magic, version, kind, length), bytes.
pub const HEADER_LEN: usize = 8;
/// Encoded length of a [`StateFrame`], bytes.
pub const STATE_FRAME_LEN: usize = 3076;
/// Encoded length of a [`TorqueFrame`], bytes.
pub const TORQUE_FRAME_LEN: usize = 420;
/// A buffer of this many bytes holds a frame of either kind.
pub const MAX_FRAME_LEN: usize = STATE_FRAME_LEN;

const CRC_LEN: usize = 4;
const EVENT_LEN: usize = 8;
const STATE_JOINTS_AT: usize = 56;
const STATE_EVENTS_AT: usize = STATE_JOINTS_AT + MAX_JOINTS * 16;
const STATE_CONTACT_COUNT_AT: usize = STATE_EVENTS_AT + MAX_EVENTS * EVENT_LEN;
const CONTACT_COUNT_RESERVED: usize = 6;
const STATE_CONTACTS_AT: usize = STATE_CONTACT_COUNT_AT + 2 + CONTACT_COUNT_RESERVED;
const STATE_BODIES_AT: usize = STATE_CONTACTS_AT + MAX_CONTACTS * CONTACT_LEN;
const BODY_LEN: usize = 13 * 8;
const CONTACT_LEN: usize = 32;
const CONTACT_RESERVED: usize = 5;
const TORQUE_JOINTS_AT: usize = 32;

// The layout tables above are the contract; these keep the constants honest.
const _: () = assert!(STATE_CONTACT_COUNT_AT == 888 && STATE_CONTACTS_AT == 896);
const _: () = assert!(2 + 1 + CONTACT_RESERVED + 3 * 8 == CONTACT_LEN);
const _: () = assert!(STATE_BODIES_AT == 1408);
const _: () = assert!(STATE_BODIES_AT + MAX_BODIES * BODY_LEN + CRC_LEN == STATE_FRAME_LEN);
const _: () = assert!(TORQUE_JOINTS_AT + MAX_JOINTS * 8 + CRC_LEN == TORQUE_FRAME_LEN);
// Every count travels in a u8.
const _: () = assert!(MAX_JOINTS <= u8::MAX as usize);
const _: () = assert!(MAX_EVENTS <= u8::MAX as usize);
const _: () = assert!(MAX_CONTACTS <= u8::MAX as usize);
const _: () = assert!(MAX_BODIES <= u8::MAX as usize);
const _: () = assert!(STATE_FRAME_LEN <= u16::MAX as usize && STATE_FRAME_LEN >= TORQUE_FRAME_LEN);

// ---------------------------------------------------------------------------------------------
// CRC-32

// Only ever evaluated at compile time (into `CRC32_TABLE`): an index out of bounds would fail the
// build, not panic at run time.
#[allow(clippy::indexing_slicing)]
const fn crc32_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
}

static CRC32_TABLE: [u32; 256] = crc32_table();

/// CRC-32 (IEEE 802.3 polynomial, reflected, initial and final XOR `0xFFFF_FFFF`: the one zlib,
/// PNG and Ethernet use) of `bytes`. `crc32(b"123456789") == 0xCBF4_3926`.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in bytes {
        let slot = usize::from((crc as u8) ^ b);
        // The table has 256 entries and `slot` is a u8: the fallback never happens.
        crc = CRC32_TABLE.get(slot).copied().unwrap_or(0) ^ (crc >> 8);
    }
    !crc
}

// ---------------------------------------------------------------------------------------------
// Frame contents

/// Which kind of frame a header announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum FrameKind {
    /// Plant → controller: joint states and events ([`StateFrame`]).
    State = 1,
    /// Controller → plant: joint torques ([`TorqueFrame`]).
    Torque = 2,
}

impl FrameKind {
    const fn len(self) -> usize {
        match self {
            Self::State => STATE_FRAME_LEN,
            Self::Torque => TORQUE_FRAME_LEN,
        }
    }
}

/// A body of the scene, by its id in the scene description (ids are unique across the scene; the
/// scene says what the body is). The arm itself is never named: every contact event is between
/// the arm and this body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct BodyId(pub u16);

/// Something that happened in the plant during the step a state frame reports.
///
/// Within one frame, contact events come before plane crossings, so a body that touched the arm
/// in the same step as it crossed the plane shows its contact first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Event {
    /// The arm and `body` started touching.
    ContactBegan {
        /// The body the arm touched.
        body: BodyId,
    },
    /// The arm and `body` stopped touching.
    ContactEnded {
        /// The body the arm let go of.
        body: BodyId,
    },
    /// The centre of `body` crossed the scene's crossing plane during the step.
    PlaneCrossed {
        /// The body that crossed.
        body: BodyId,
    },
}

const TAG_CONTACT_BEGAN: u8 = 1;
const TAG_CONTACT_ENDED: u8 = 2;
const TAG_PLANE_CROSSED: u8 = 3;

impl Event {
    const fn to_wire(self) -> [u8; EVENT_LEN] {
        let (tag, body) = match self {
            Self::ContactBegan { body } => (TAG_CONTACT_BEGAN, body),
            Self::ContactEnded { body } => (TAG_CONTACT_ENDED, body),
            Self::PlaneCrossed { body } => (TAG_PLANE_CROSSED, body),
        };
        let id = body.0.to_le_bytes();
        [tag, 0, id[0], id[1], 0, 0, 0, 0]
    }

    const fn from_wire(bytes: [u8; EVENT_LEN]) -> Option<Self> {
        let [tag, r0, id0, id1, r1, r2, r3, r4] = bytes;
        if (r0 | r1 | r2 | r3 | r4) != 0 {
            return None;
        }
        let body = BodyId(u16::from_le_bytes([id0, id1]));
        match tag {
            TAG_CONTACT_BEGAN => Some(Self::ContactBegan { body }),
            TAG_CONTACT_ENDED => Some(Self::ContactEnded { body }),
            TAG_PLANE_CROSSED => Some(Self::PlaneCrossed { body }),
            _ => None,
        }
    }
}

/// The force the scene's static geometry (walls, floors) put on one body during the step a state
/// frame reports: the sum over every contact between them, world frame, N, averaged over the step
/// (the contact impulses of the step divided by its duration). Which body an id names is the
/// scene's business (a chain plant: the link's index in URDF link order).
///
/// A plant may also report where on a body the force acted: entries with [`Self::point`] k ≥ 1
/// carry the part of the body's force at its contact point k (the humanoid plant: its soles'
/// bottom corners), each also counted in the body's own entry (point 0), which comes first.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ContactForce {
    /// The body pushed.
    pub body: BodyId,
    /// 0: the force on the whole body; k ≥ 1: the part of it at the body's contact point k
    /// (which point a number names is the plant's documented convention).
    pub point: u8,
    /// The force on it, world frame, N (x, y, z).
    pub force_n: [f64; 3],
}

/// Where one moving body of the scene is and how it moves, world frame: what a floating-base
/// character's controller needs of its root and of every link (balance, world-frame servos,
/// the whole body's centre of mass). Body `k` of a frame is the scene's body `k`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BodyMotion {
    /// Its centre of mass, m (x, y, z).
    pub com_m: [f64; 3],
    /// Its orientation, a unit quaternion (w, x, y, z): body frame to world frame.
    pub orientation: [f64; 4],
    /// Velocity of its centre of mass, m/s (x, y, z).
    pub velocity_m_s: [f64; 3],
    /// Its angular velocity, rad/s (x, y, z).
    pub angular_velocity_rad_s: [f64; 3],
}

impl Default for BodyMotion {
    /// At the origin, not rotated (the identity quaternion), at rest.
    fn default() -> Self {
        Self {
            com_m: [0.0; 3],
            orientation: [1.0, 0.0, 0.0, 0.0],
            velocity_m_s: [0.0; 3],
            angular_velocity_rad_s: [0.0; 3],
        }
    }
}

impl BodyMotion {
    /// Whether all 13 values are finite.
    pub fn is_finite(&self) -> bool {
        self.to_array().iter().all(|v| v.is_finite())
    }

    /// The 13 values in wire order: centre of mass, orientation, velocity, angular velocity.
    const fn to_array(self) -> [f64; 13] {
        let [x, y, z] = self.com_m;
        let [qw, qx, qy, qz] = self.orientation;
        let [vx, vy, vz] = self.velocity_m_s;
        let [wx, wy, wz] = self.angular_velocity_rad_s;
        [x, y, z, qw, qx, qy, qz, vx, vy, vz, wx, wy, wz]
    }

    /// The inverse of [`Self::to_array`].
    const fn from_array(v: [f64; 13]) -> Self {
        let [x, y, z, qw, qx, qy, qz, vx, vy, vz, wx, wy, wz] = v;
        Self {
            com_m: [x, y, z],
            orientation: [qw, qx, qy, qz],
            velocity_m_s: [vx, vy, vz],
            angular_velocity_rad_s: [wx, wy, wz],
        }
    }
}

/// Position and velocity of one joint, in the plant's joint convention: the servo's own type,
/// so a decoded state feeds a servo as it is.
pub use crate::servo::JointState;

/// Flags of a [`StateFrame`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StateFlags(u16);

impl StateFlags {
    /// No flag set.
    pub const NONE: Self = Self(0);
    /// This is the plant's last frame: it reached the scene's end time and closes its end of the
    /// transport after sending it. A peer that closes without this flag was lost.
    pub const FINAL: Self = Self(1);
    const KNOWN: u16 = Self::FINAL.0;

    /// Whether every flag of `other` is set in `self`.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// `self` with the flags of `other` set too.
    #[must_use]
    pub const fn with(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// The raw bits.
    pub const fn bits(self) -> u16 {
        self.0
    }
}

/// Flags of a [`TorqueFrame`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TorqueFlags(u32);

impl TorqueFlags {
    /// No flag set.
    pub const NONE: Self = Self(0);
    /// The controller is in its safe state (damping only, torque-limited).
    pub const SAFE_STATE: Self = Self(1);
    const KNOWN: u32 = Self::SAFE_STATE.0;

    /// Whether every flag of `other` is set in `self`.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// `self` with the flags of `other` set too.
    #[must_use]
    pub const fn with(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// The raw bits.
    pub const fn bits(self) -> u32 {
        self.0
    }
}

/// Plant → controller: the state after a plant step, and what happened during it.
#[derive(Debug, Clone, PartialEq)]
pub struct StateFrame {
    /// Sequence number: strictly increasing over the frames one sender sends.
    pub sequence: u64,
    /// Index of the plant step this state is at (0 = the initial state, k = after k steps).
    pub step: u64,
    /// Simulation time of this state, s.
    pub sim_time_s: f64,
    /// Wall-clock cost of the plant step that produced this state, ns (diagnostic; 0 for step 0).
    pub step_cost_ns: u64,
    /// Flags.
    pub flags: StateFlags,
    /// The low 32 bits of the sequence number of the torque frame whose torques drove the step
    /// that produced this state (0: none, e.g. step 0 or zero torque held from the start). Lets
    /// the controller measure the round trip exactly, in real time too, where the plant holds the
    /// newest torques.
    pub applied_torque_sequence: u32,
    /// The plant's running total of torque frames it refused since it started, for any reason
    /// (malformed, oversize, stale, repeated, non-finite, over its torque limit), saturating.
    pub plant_rejected_frames: u32,
    /// The part of [`Self::plant_rejected_frames`] refused for a torque beyond the plant's
    /// limit (the whole frame is refused, never clamped), saturating.
    pub plant_over_limit_frames: u32,
    /// Joint states, at most [`MAX_JOINTS`].
    pub joints: heapless::Vec<JointState, MAX_JOINTS>,
    /// Events of the step, at most [`MAX_EVENTS`].
    pub events: heapless::Vec<Event, MAX_EVENTS>,
    /// Contact forces of the step on bodies the scene's static geometry pushed, at most
    /// [`MAX_CONTACTS`] (which bodies, when more were pushed, is the plant's documented choice).
    pub contacts: heapless::Vec<ContactForce, MAX_CONTACTS>,
    /// The motion of the scene's moving bodies, body order, at most [`MAX_BODIES`] (none for a
    /// scene that reports joints only).
    pub bodies: heapless::Vec<BodyMotion, MAX_BODIES>,
}

/// Controller → plant: the torques to apply during one plant step.
#[derive(Debug, Clone, PartialEq)]
pub struct TorqueFrame {
    /// Sequence number: strictly increasing over the frames one sender sends.
    pub sequence: u64,
    /// The plant step these torques are meant for: applied while stepping from `step` to
    /// `step + 1` (in lockstep the plant waits for exactly this step; in real time it applies the
    /// newest frame it has).
    pub step: u64,
    /// Flags.
    pub flags: TorqueFlags,
    /// Joint torques, N·m, at most [`MAX_JOINTS`].
    pub torques_nm: heapless::Vec<f64, MAX_JOINTS>,
}

impl StateFrame {
    /// A frame with no joints, no events and no flags.
    pub const fn new(sequence: u64, step: u64, sim_time_s: f64) -> Self {
        Self {
            sequence,
            step,
            sim_time_s,
            step_cost_ns: 0,
            flags: StateFlags::NONE,
            applied_torque_sequence: 0,
            plant_rejected_frames: 0,
            plant_over_limit_frames: 0,
            joints: heapless::Vec::new(),
            events: heapless::Vec::new(),
            contacts: heapless::Vec::new(),
            bodies: heapless::Vec::new(),
        }
    }

    /// Appends a joint; gives it back when [`MAX_JOINTS`] are there already.
    pub fn push_joint(&mut self, joint: JointState) -> Result<(), JointState> {
        self.joints.push(joint)
    }

    /// Appends an event; gives it back when [`MAX_EVENTS`] are there already.
    pub fn push_event(&mut self, event: Event) -> Result<(), Event> {
        self.events.push(event)
    }

    /// Appends a contact force; gives it back when [`MAX_CONTACTS`] are there already.
    pub fn push_contact(&mut self, contact: ContactForce) -> Result<(), ContactForce> {
        self.contacts.push(contact)
    }

    /// Appends a body's motion; gives it back when [`MAX_BODIES`] are there already.
    pub fn push_body(&mut self, body: BodyMotion) -> Result<(), BodyMotion> {
        self.bodies.push(body)
    }

    /// The contact forces of the step, in the order the plant pushed them.
    pub fn contacts(&self) -> &[ContactForce] {
        &self.contacts
    }

    /// The contact force on the whole of `body` during the step, world frame, N (the first
    /// entry naming it with point 0), or `None` when the frame carries none for it.
    pub fn contact_force_on(&self, body: BodyId) -> Option<[f64; 3]> {
        self.contacts
            .iter()
            .find(|c| c.body == body && c.point == 0)
            .map(|c| c.force_n)
    }

    /// Writes the frame into the start of `buf` and returns the number of bytes written
    /// ([`STATE_FRAME_LEN`]).
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, EncodeError> {
        let mut w = Writer::start(buf, FrameKind::State)?;
        w.u64(self.sequence);
        w.u64(self.step);
        w.f64(self.sim_time_s);
        w.u64(self.step_cost_ns);
        w.u8(count_u8(self.joints.len()));
        w.u8(count_u8(self.events.len()));
        w.u16(self.flags.0);
        w.u32(self.applied_torque_sequence);
        w.u32(self.plant_rejected_frames);
        w.u32(self.plant_over_limit_frames);
        for j in 0..MAX_JOINTS {
            let s = self.joints.get(j).copied().unwrap_or_default();
            w.f64(s.position_rad);
            w.f64(s.velocity_rad_s);
        }
        for e in 0..MAX_EVENTS {
            w.bytes(&self.events.get(e).map_or([0; EVENT_LEN], |e| e.to_wire()));
        }
        w.u8(count_u8(self.contacts.len()));
        w.u8(count_u8(self.bodies.len()));
        w.bytes(&[0; CONTACT_COUNT_RESERVED]);
        for c in 0..MAX_CONTACTS {
            let contact = self.contacts.get(c).copied().unwrap_or_default();
            w.u16(contact.body.0);
            w.u8(contact.point);
            w.bytes(&[0; CONTACT_RESERVED]);
            for x in contact.force_n {
                w.f64(x);
            }
        }
        for b in 0..MAX_BODIES {
            // Unused slots are all zero (not the identity quaternion).
            let values = self.bodies.get(b).map_or([0.0; 13], |m| m.to_array());
            for x in values {
                w.f64(x);
            }
        }
        Ok(w.finish())
    }

    /// Reads a frame from exactly `bytes` (one whole datagram).
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::start(bytes, FrameKind::State)?;
        let sequence = r.u64();
        let step = r.u64();
        let sim_time_s = finite(r.f64(), Field::SimTime)?;
        let step_cost_ns = r.u64();
        let joint_count = r.u8();
        let event_count = r.u8();
        let flags = r.u16();
        let applied_torque_sequence = r.u32();
        let plant_rejected_frames = r.u32();
        let plant_over_limit_frames = r.u32();
        if plant_over_limit_frames > plant_rejected_frames {
            return Err(DecodeError::CountsDisagree {
                rejected: plant_rejected_frames,
                over_limit: plant_over_limit_frames,
            });
        }
        if usize::from(joint_count) > MAX_JOINTS {
            return Err(DecodeError::JointCountOutOfRange {
                count: joint_count,
                max: MAX_JOINTS,
            });
        }
        if usize::from(event_count) > MAX_EVENTS {
            return Err(DecodeError::EventCountOutOfRange {
                count: event_count,
                max: MAX_EVENTS,
            });
        }
        if flags & !StateFlags::KNOWN != 0 {
            return Err(DecodeError::UnknownFlags {
                bits: u32::from(flags),
            });
        }
        let mut joints = heapless::Vec::new();
        for j in 0..joint_count {
            let position_rad = finite(r.f64(), Field::Position { joint: j })?;
            let velocity_rad_s = finite(r.f64(), Field::Velocity { joint: j })?;
            // At most MAX_JOINTS iterations (checked above): the push cannot fail.
            let _ = joints.push(JointState {
                position_rad,
                velocity_rad_s,
            });
        }
        r.zeros((MAX_JOINTS - usize::from(joint_count)) * 16)?;
        let mut events = heapless::Vec::new();
        for index in 0..event_count {
            let raw = r.array::<EVENT_LEN>();
            let event =
                Event::from_wire(raw).ok_or(DecodeError::BadEvent { index, tag: raw[0] })?;
            let _ = events.push(event);
        }
        r.zeros((MAX_EVENTS - usize::from(event_count)) * EVENT_LEN)?;
        let contact_count = r.u8();
        if usize::from(contact_count) > MAX_CONTACTS {
            return Err(DecodeError::ContactCountOutOfRange {
                count: contact_count,
                max: MAX_CONTACTS,
            });
        }
        let body_count = r.u8();
        if usize::from(body_count) > MAX_BODIES {
            return Err(DecodeError::BodyCountOutOfRange {
                count: body_count,
                max: MAX_BODIES,
            });
        }
        r.zeros(CONTACT_COUNT_RESERVED)?;
        let mut contacts = heapless::Vec::new();
        for index in 0..contact_count {
            let body = BodyId(r.u16());
            let point = r.u8();
            r.zeros(CONTACT_RESERVED)?;
            let mut force_n = [0.0; 3];
            for (axis, x) in (0u8..).zip(force_n.iter_mut()) {
                *x = finite(r.f64(), Field::ContactForce { index, axis })?;
            }
            // At most MAX_CONTACTS iterations (checked above): the push cannot fail.
            let _ = contacts.push(ContactForce {
                body,
                point,
                force_n,
            });
        }
        r.zeros((MAX_CONTACTS - usize::from(contact_count)) * CONTACT_LEN)?;
        let mut bodies = heapless::Vec::new();
        for index in 0..body_count {
            let mut values = [0.0; 13];
            for (component, x) in (0u8..).zip(values.iter_mut()) {
                *x = finite(r.f64(), Field::Body { index, component })?;
            }
            let body = BodyMotion::from_array(values);
            let [qw, qx, qy, qz] = body.orientation;
            // |‖q‖ − 1| ≤ tol exactly when ‖q‖² lies in [(1 − tol)², (1 + tol)²] (no sqrt in core).
            let norm2 = qw * qw + qx * qx + qy * qy + qz * qz;
            let (lo, hi) = (
                (1.0 - UNIT_QUATERNION_TOLERANCE) * (1.0 - UNIT_QUATERNION_TOLERANCE),
                (1.0 + UNIT_QUATERNION_TOLERANCE) * (1.0 + UNIT_QUATERNION_TOLERANCE),
            );
            if !(lo..=hi).contains(&norm2) {
                return Err(DecodeError::NotUnitQuaternion { index });
            }
            // At most MAX_BODIES iterations (checked above): the push cannot fail.
            let _ = bodies.push(body);
        }
        r.zeros((MAX_BODIES - usize::from(body_count)) * BODY_LEN)?;
        Ok(Self {
            sequence,
            step,
            sim_time_s,
            step_cost_ns,
            flags: StateFlags(flags),
            applied_torque_sequence,
            plant_rejected_frames,
            plant_over_limit_frames,
            joints,
            events,
            contacts,
            bodies,
        })
    }
}

impl TorqueFrame {
    /// A frame with no joints and no flags.
    pub const fn new(sequence: u64, step: u64) -> Self {
        Self {
            sequence,
            step,
            flags: TorqueFlags::NONE,
            torques_nm: heapless::Vec::new(),
        }
    }

    /// Appends a joint torque (N·m); gives it back when [`MAX_JOINTS`] are there already.
    pub fn push_torque(&mut self, torque_nm: f64) -> Result<(), f64> {
        self.torques_nm.push(torque_nm)
    }

    /// Writes the frame into the start of `buf` and returns the number of bytes written
    /// ([`TORQUE_FRAME_LEN`]).
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, EncodeError> {
        let mut w = Writer::start(buf, FrameKind::Torque)?;
        w.u64(self.sequence);
        w.u64(self.step);
        w.u32(self.flags.0);
        w.u8(count_u8(self.torques_nm.len()));
        w.bytes(&[0; 3]);
        for j in 0..MAX_JOINTS {
            w.f64(self.torques_nm.get(j).copied().unwrap_or(0.0));
        }
        Ok(w.finish())
    }

    /// Reads a frame from exactly `bytes` (one whole datagram).
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::start(bytes, FrameKind::Torque)?;
        let sequence = r.u64();
        let step = r.u64();
        let flags = r.u32();
        let joint_count = r.u8();
        r.zeros(3)?;
        if usize::from(joint_count) > MAX_JOINTS {
            return Err(DecodeError::JointCountOutOfRange {
                count: joint_count,
                max: MAX_JOINTS,
            });
        }
        if flags & !TorqueFlags::KNOWN != 0 {
            return Err(DecodeError::UnknownFlags { bits: flags });
        }
        let mut torques_nm = heapless::Vec::new();
        for j in 0..joint_count {
            let _ = torques_nm.push(finite(r.f64(), Field::Torque { joint: j })?);
        }
        r.zeros((MAX_JOINTS - usize::from(joint_count)) * 8)?;
        Ok(Self {
            sequence,
            step,
            flags: TorqueFlags(flags),
            torques_nm,
        })
    }
}

/// Reads which kind of frame `bytes` claims to be, checking only magic, version and kind (to
/// dispatch a datagram before decoding it).
pub fn peek_kind(bytes: &[u8]) -> Result<FrameKind, DecodeError> {
    let header = read_header(bytes)?;
    match header.kind {
        1 => Ok(FrameKind::State),
        2 => Ok(FrameKind::Torque),
        found => Err(DecodeError::UnknownKind { found }),
    }
}

/// A frame type that travels with a sequence number: what [`FrameGuard`] can check.
pub trait SequencedFrame: Sized {
    /// Decodes one whole datagram.
    fn decode_frame(bytes: &[u8]) -> Result<Self, DecodeError>;
    /// The frame's sequence number.
    fn sequence(&self) -> u64;
}

impl SequencedFrame for StateFrame {
    fn decode_frame(bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::decode(bytes)
    }
    fn sequence(&self) -> u64 {
        self.sequence
    }
}

impl SequencedFrame for TorqueFrame {
    fn decode_frame(bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::decode(bytes)
    }
    fn sequence(&self) -> u64 {
        self.sequence
    }
}

// ---------------------------------------------------------------------------------------------
// Errors

/// A value in a frame, named for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// [`StateFrame::sim_time_s`].
    SimTime,
    /// Position of joint `joint` in a state frame.
    Position {
        /// Joint index.
        joint: u8,
    },
    /// Velocity of joint `joint` in a state frame.
    Velocity {
        /// Joint index.
        joint: u8,
    },
    /// Torque of joint `joint` in a torque frame.
    Torque {
        /// Joint index.
        joint: u8,
    },
    /// Component `axis` (0 x, 1 y, 2 z) of contact force `index` in a state frame.
    ContactForce {
        /// Contact index in the frame.
        index: u8,
        /// 0, 1, 2: x, y, z.
        axis: u8,
    },
    /// Value `component` of body `index`'s motion in a state frame, wire order (0–2 centre of
    /// mass, 3–6 orientation w, x, y, z, 7–9 velocity, 10–12 angular velocity).
    Body {
        /// Body index in the frame.
        index: u8,
        /// 0..13, wire order.
        component: u8,
    },
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SimTime => f.write_str("sim_time_s"),
            Self::Position { joint } => write!(f, "joints[{joint}].position_rad"),
            Self::Velocity { joint } => write!(f, "joints[{joint}].velocity_rad_s"),
            Self::Torque { joint } => write!(f, "torques_nm[{joint}]"),
            Self::ContactForce { index, axis } => {
                write!(f, "contacts[{index}].force_n[{axis}]")
            }
            Self::Body { index, component } => {
                let (name, k) = match component {
                    0..=2 => ("com_m", *component),
                    3..=6 => ("orientation", component - 3),
                    7..=9 => ("velocity_m_s", component - 7),
                    _ => ("angular_velocity_rad_s", component.saturating_sub(10)),
                };
                write!(f, "bodies[{index}].{name}[{k}]")
            }
        }
    }
}

/// Why a byte string was not accepted as a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// Fewer bytes than a header.
    TooShort {
        /// Bytes needed.
        needed: usize,
        /// Bytes received.
        got: usize,
    },
    /// The frame does not start with [`MAGIC`].
    BadMagic {
        /// The first four bytes.
        found: [u8; 4],
    },
    /// A layout version this decoder does not speak.
    WrongVersion {
        /// Version in the header.
        found: u8,
        /// [`VERSION`].
        expected: u8,
    },
    /// The header's kind byte names no known frame kind.
    UnknownKind {
        /// Kind byte in the header.
        found: u8,
    },
    /// A valid frame of the other kind.
    WrongKind {
        /// Kind in the header.
        found: FrameKind,
        /// Kind the decoder was asked for.
        expected: FrameKind,
    },
    /// The header's length, the kind's length and the bytes received disagree.
    BadLength {
        /// Length in the header.
        declared: u16,
        /// Length of this kind of frame.
        expected: usize,
        /// Bytes received.
        received: usize,
    },
    /// The CRC-32 carried in the frame is not the CRC-32 of its bytes.
    ChecksumMismatch {
        /// CRC-32 computed over the received bytes.
        computed: u32,
        /// CRC-32 carried by the frame.
        carried: u32,
    },
    /// More joints than [`MAX_JOINTS`].
    JointCountOutOfRange {
        /// Joint count in the frame.
        count: u8,
        /// [`MAX_JOINTS`].
        max: usize,
    },
    /// More events than [`MAX_EVENTS`].
    EventCountOutOfRange {
        /// Event count in the frame.
        count: u8,
        /// [`MAX_EVENTS`].
        max: usize,
    },
    /// More contact forces than [`MAX_CONTACTS`].
    ContactCountOutOfRange {
        /// Contact count in the frame.
        count: u8,
        /// [`MAX_CONTACTS`].
        max: usize,
    },
    /// More bodies than [`MAX_BODIES`].
    BodyCountOutOfRange {
        /// Body count in the frame.
        count: u8,
        /// [`MAX_BODIES`].
        max: usize,
    },
    /// A body whose orientation is not a unit quaternion (within
    /// [`UNIT_QUATERNION_TOLERANCE`]).
    NotUnitQuaternion {
        /// Body index in the frame.
        index: u8,
    },
    /// A NaN or infinite value.
    NonFinite {
        /// Which value.
        field: Field,
    },
    /// An event slot that decodes to no known event (unknown tag, or a non-zero reserved byte
    /// in the slot).
    BadEvent {
        /// Event index in the frame.
        index: u8,
        /// Tag byte of the slot.
        tag: u8,
    },
    /// Flag bits this version does not define.
    UnknownFlags {
        /// The flags field.
        bits: u32,
    },
    /// A reserved byte or an unused slot is not zero.
    NonZeroPadding {
        /// Offset of the first non-zero byte in the frame.
        offset: usize,
    },
    /// A state frame whose count of torque frames refused over the limit exceeds its count of
    /// all refused torque frames.
    CountsDisagree {
        /// [`StateFrame::plant_rejected_frames`].
        rejected: u32,
        /// [`StateFrame::plant_over_limit_frames`].
        over_limit: u32,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::TooShort { needed, got } => {
                write!(f, "frame too short: {got} bytes, need at least {needed}")
            }
            Self::BadMagic { found } => write!(f, "bad magic {found:02x?}, expected {MAGIC:02x?}"),
            Self::WrongVersion { found, expected } => {
                write!(f, "wrong frame version {found}, expected {expected}")
            }
            Self::UnknownKind { found } => write!(f, "unknown frame kind {found}"),
            Self::WrongKind { found, expected } => {
                write!(f, "wrong frame kind {found:?}, expected {expected:?}")
            }
            Self::BadLength {
                declared,
                expected,
                received,
            } => write!(
                f,
                "bad frame length: header says {declared}, kind needs {expected}, received {received}"
            ),
            Self::ChecksumMismatch { computed, carried } => write!(
                f,
                "checksum mismatch: frame carries {carried:#010x}, bytes give {computed:#010x}"
            ),
            Self::JointCountOutOfRange { count, max } => {
                write!(f, "joint count {count} out of range (max {max})")
            }
            Self::EventCountOutOfRange { count, max } => {
                write!(f, "event count {count} out of range (max {max})")
            }
            Self::ContactCountOutOfRange { count, max } => {
                write!(f, "contact count {count} out of range (max {max})")
            }
            Self::BodyCountOutOfRange { count, max } => {
                write!(f, "body count {count} out of range (max {max})")
            }
            Self::NotUnitQuaternion { index } => write!(
                f,
                "bodies[{index}].orientation is not a unit quaternion (tolerance {UNIT_QUATERNION_TOLERANCE})"
            ),
            Self::NonFinite { field } => write!(f, "non-finite value in {field}"),
            Self::BadEvent { index, tag } => write!(f, "bad event {index} (tag {tag})"),
            Self::UnknownFlags { bits } => write!(f, "unknown flag bits {bits:#x}"),
            Self::NonZeroPadding { offset } => {
                write!(f, "non-zero reserved or unused byte at offset {offset}")
            }
            Self::CountsDisagree {
                rejected,
                over_limit,
            } => write!(
                f,
                "plant counts {over_limit} torque frames refused over the limit but only {rejected} refused in all"
            ),
        }
    }
}

impl core::error::Error for DecodeError {}

/// Why a frame could not be encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// The output buffer is smaller than the frame.
    BufferTooSmall {
        /// Bytes the frame needs.
        needed: usize,
        /// Bytes the buffer has.
        got: usize,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::BufferTooSmall { needed, got } => {
                write!(f, "buffer too small for frame: {got} bytes, need {needed}")
            }
        }
    }
}

impl core::error::Error for EncodeError {}

// ---------------------------------------------------------------------------------------------
// Receive-side guard

/// Why [`FrameGuard`] turned a datagram away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rejected {
    /// The bytes are not a valid frame.
    Malformed(DecodeError),
    /// A valid frame older than one already accepted.
    Stale {
        /// The frame's sequence number.
        sequence: u64,
        /// The newest sequence number accepted so far.
        newest: u64,
    },
    /// A valid frame with the sequence number of the newest accepted one.
    Repeated {
        /// The repeated sequence number.
        sequence: u64,
    },
    /// A datagram longer than any frame (the transport had to cut it to fit a
    /// [`MAX_FRAME_LEN`]-byte buffer, so its bytes were never decoded); counted by
    /// [`FrameGuard::reject_oversize`] under [`RejectCounts::oversize`].
    Oversize {
        /// Length of the datagram, bytes.
        datagram: usize,
    },
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed(e) => write!(f, "malformed frame: {e}"),
            Self::Stale { sequence, newest } => {
                write!(f, "stale frame: sequence {sequence} after {newest}")
            }
            Self::Repeated { sequence } => write!(f, "repeated frame: sequence {sequence}"),
            Self::Oversize { datagram } => write!(
                f,
                "oversize datagram: {datagram} bytes, no frame is longer than {MAX_FRAME_LEN}"
            ),
        }
    }
}

impl core::error::Error for Rejected {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            Self::Malformed(e) => Some(e),
            _ => None,
        }
    }
}

/// Rejections counted by reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RejectCounts {
    /// Datagrams longer than [`MAX_FRAME_LEN`] (cut by the transport, never decoded). Not
    /// included in `bad_length`.
    pub oversize: u64,
    /// Too short, or header length disagreeing with the bytes or the kind (for a datagram of
    /// at most [`MAX_FRAME_LEN`] bytes).
    pub bad_length: u64,
    /// Bad magic.
    pub bad_magic: u64,
    /// Unsupported version.
    pub wrong_version: u64,
    /// Unknown kind or the other direction's kind.
    pub wrong_kind: u64,
    /// CRC-32 mismatch.
    pub checksum: u64,
    /// Joint, event or contact count out of range, bad event, unknown flags, non-zero padding,
    /// plant counts that disagree.
    pub bad_content: u64,
    /// NaN or infinite values.
    pub non_finite: u64,
    /// Sequence number older than the newest accepted.
    pub stale: u64,
    /// Sequence number equal to the newest accepted.
    pub repeated: u64,
}

impl RejectCounts {
    /// All rejections.
    pub const fn total(&self) -> u64 {
        self.oversize
            .wrapping_add(self.bad_length)
            .wrapping_add(self.bad_magic)
            .wrapping_add(self.wrong_version)
            .wrapping_add(self.wrong_kind)
            .wrapping_add(self.checksum)
            .wrapping_add(self.bad_content)
            .wrapping_add(self.non_finite)
            .wrapping_add(self.stale)
            .wrapping_add(self.repeated)
    }

    fn count(&mut self, why: &Rejected) {
        let slot = match why {
            Rejected::Malformed(e) => match e {
                DecodeError::TooShort { .. } | DecodeError::BadLength { .. } => {
                    &mut self.bad_length
                }
                DecodeError::BadMagic { .. } => &mut self.bad_magic,
                DecodeError::WrongVersion { .. } => &mut self.wrong_version,
                DecodeError::UnknownKind { .. } | DecodeError::WrongKind { .. } => {
                    &mut self.wrong_kind
                }
                DecodeError::ChecksumMismatch { .. } => &mut self.checksum,
                DecodeError::NonFinite { .. } => &mut self.non_finite,
                DecodeError::JointCountOutOfRange { .. }
                | DecodeError::EventCountOutOfRange { .. }
                | DecodeError::ContactCountOutOfRange { .. }
                | DecodeError::BodyCountOutOfRange { .. }
                | DecodeError::NotUnitQuaternion { .. }
                | DecodeError::BadEvent { .. }
                | DecodeError::UnknownFlags { .. }
                | DecodeError::NonZeroPadding { .. }
                | DecodeError::CountsDisagree { .. } => &mut self.bad_content,
            },
            Rejected::Stale { .. } => &mut self.stale,
            Rejected::Repeated { .. } => &mut self.repeated,
            Rejected::Oversize { .. } => &mut self.oversize,
        };
        *slot = slot.wrapping_add(1);
    }
}

/// The receive side of one frame stream: decodes, refuses stale and repeated sequence numbers,
/// and counts every rejection by reason. Use one guard per direction and peer.
///
/// Gaps (sequence numbers skipped) are not rejections: the frame is accepted and the number of
/// skipped frames is added to [`FrameGuard::skipped`].
#[derive(Debug, Clone, Default)]
pub struct FrameGuard {
    newest: Option<u64>,
    accepted: u64,
    skipped: u64,
    rejected: RejectCounts,
}

impl FrameGuard {
    /// A guard that has accepted nothing yet (the first valid frame is accepted whatever its
    /// sequence number).
    pub const fn new() -> Self {
        Self {
            newest: None,
            accepted: 0,
            skipped: 0,
            rejected: RejectCounts {
                oversize: 0,
                bad_length: 0,
                bad_magic: 0,
                wrong_version: 0,
                wrong_kind: 0,
                checksum: 0,
                bad_content: 0,
                non_finite: 0,
                stale: 0,
                repeated: 0,
            },
        }
    }

    /// Decodes `bytes` as an `F` and accepts it if its sequence number is newer than every one
    /// accepted before; otherwise counts and returns why not.
    pub fn accept<F: SequencedFrame>(&mut self, bytes: &[u8]) -> Result<F, Rejected> {
        let verdict = F::decode_frame(bytes)
            .map_err(Rejected::Malformed)
            .and_then(|frame| {
                let sequence = frame.sequence();
                match self.newest {
                    Some(newest) if sequence < newest => Err(Rejected::Stale { sequence, newest }),
                    Some(newest) if sequence == newest => Err(Rejected::Repeated { sequence }),
                    Some(newest) => {
                        self.skipped = self
                            .skipped
                            .wrapping_add(sequence.wrapping_sub(newest).wrapping_sub(1));
                        Ok(frame)
                    }
                    None => Ok(frame),
                }
            });
        match &verdict {
            Ok(frame) => {
                self.newest = Some(frame.sequence());
                self.accepted = self.accepted.wrapping_add(1);
            }
            Err(why) => self.rejected.count(why),
        }
        verdict
    }

    /// Counts a datagram of `datagram` bytes that was too long to be any frame (a transport that
    /// receives into a [`MAX_FRAME_LEN`]-byte buffer reports it instead of its bytes) and
    /// returns the rejection. Leaves the sequence state as it was.
    pub fn reject_oversize(&mut self, datagram: usize) -> Rejected {
        let why = Rejected::Oversize { datagram };
        self.rejected.count(&why);
        why
    }

    /// Rejections so far, by reason.
    pub const fn rejected(&self) -> &RejectCounts {
        &self.rejected
    }

    /// Frames accepted so far.
    pub const fn accepted(&self) -> u64 {
        self.accepted
    }

    /// Sequence numbers skipped between accepted frames (lost or dropped frames).
    pub const fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The newest sequence number accepted, if any.
    pub const fn newest_sequence(&self) -> Option<u64> {
        self.newest
    }
}

// ---------------------------------------------------------------------------------------------
// Byte-level helpers

fn count_u8(n: usize) -> u8 {
    // Lengths of vectors of capacity MAX_JOINTS / MAX_EVENTS / MAX_CONTACTS (≤ 255, asserted
    // above).
    u8::try_from(n).unwrap_or(u8::MAX)
}

fn finite(value: f64, field: Field) -> Result<f64, DecodeError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(DecodeError::NonFinite { field })
    }
}

struct Header {
    kind: u8,
    length: u16,
}

fn read_header(bytes: &[u8]) -> Result<Header, DecodeError> {
    let Some(&[m0, m1, m2, m3, version, kind, l0, l1]) = bytes.first_chunk::<HEADER_LEN>() else {
        return Err(DecodeError::TooShort {
            needed: HEADER_LEN,
            got: bytes.len(),
        });
    };
    if [m0, m1, m2, m3] != MAGIC {
        return Err(DecodeError::BadMagic {
            found: [m0, m1, m2, m3],
        });
    }
    if version != VERSION {
        return Err(DecodeError::WrongVersion {
            found: version,
            expected: VERSION,
        });
    }
    Ok(Header {
        kind,
        length: u16::from_le_bytes([l0, l1]),
    })
}

/// Writes little-endian fields one after the other into a buffer already checked to be long
/// enough; a write past the end is dropped (it cannot happen: every frame's layout is checked at
/// compile time against its length).
struct Writer<'a> {
    buf: &'a mut [u8],
    at: usize,
}

impl<'a> Writer<'a> {
    fn start(buf: &'a mut [u8], kind: FrameKind) -> Result<Self, EncodeError> {
        let len = kind.len();
        let got = buf.len();
        let buf = buf
            .get_mut(..len)
            .ok_or(EncodeError::BufferTooSmall { needed: len, got })?;
        let mut w = Self { buf, at: 0 };
        w.bytes(&MAGIC);
        w.u8(VERSION);
        w.u8(kind as u8);
        w.u16(u16::try_from(len).unwrap_or(u16::MAX));
        Ok(w)
    }

    fn bytes(&mut self, src: &[u8]) {
        let end = self.at.saturating_add(src.len());
        if let Some(dst) = self.buf.get_mut(self.at..end) {
            dst.copy_from_slice(src);
        }
        self.at = end;
    }

    fn u8(&mut self, v: u8) {
        self.bytes(&[v]);
    }
    fn u16(&mut self, v: u16) {
        self.bytes(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
    fn f64(&mut self, v: f64) {
        self.bytes(&v.to_le_bytes());
    }

    /// Appends the CRC-32 of everything written and returns the frame length.
    fn finish(mut self) -> usize {
        let body_len = self.buf.len().saturating_sub(CRC_LEN);
        let crc = crc32(self.buf.get(..body_len).unwrap_or(&[]));
        self.at = body_len;
        self.u32(crc);
        self.buf.len()
    }
}

/// Reads little-endian fields from a frame whose header, length and checksum are already
/// checked; a read past the end yields zeros (it cannot happen for the same reason as above).
struct Reader<'a> {
    frame: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// Checks header, length and checksum, and positions the reader after the header.
    fn start(bytes: &'a [u8], expected: FrameKind) -> Result<Self, DecodeError> {
        let header = read_header(bytes)?;
        let found = match header.kind {
            1 => FrameKind::State,
            2 => FrameKind::Torque,
            found => return Err(DecodeError::UnknownKind { found }),
        };
        if found != expected {
            return Err(DecodeError::WrongKind { found, expected });
        }
        let len = expected.len();
        if usize::from(header.length) != len || bytes.len() != len {
            return Err(DecodeError::BadLength {
                declared: header.length,
                expected: len,
                received: bytes.len(),
            });
        }
        let (body, crc) = bytes.split_at(len - CRC_LEN);
        let carried = crc
            .first_chunk::<CRC_LEN>()
            .map_or(0, |c| u32::from_le_bytes(*c));
        let computed = crc32(body);
        if computed != carried {
            return Err(DecodeError::ChecksumMismatch { computed, carried });
        }
        Ok(Self {
            frame: body,
            at: HEADER_LEN,
        })
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        let end = self.at.saturating_add(N);
        let out = self
            .frame
            .get(self.at..end)
            .and_then(|s| s.first_chunk::<N>())
            .copied()
            .unwrap_or([0; N]);
        self.at = end;
        out
    }

    fn u8(&mut self) -> u8 {
        u8::from_le_bytes(self.array())
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.array())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }
    fn f64(&mut self) -> f64 {
        f64::from_le_bytes(self.array())
    }

    /// Skips `n` bytes that must all be zero.
    fn zeros(&mut self, n: usize) -> Result<(), DecodeError> {
        let start = self.at;
        let end = start.saturating_add(n);
        self.at = end;
        let region = self.frame.get(start..end).unwrap_or(&[]);
        match region.iter().position(|&b| b != 0) {
            Some(i) => Err(DecodeError::NonZeroPadding { offset: start + i }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample_state(sequence: u64) -> StateFrame {
        let mut f = StateFrame::new(sequence, 41, 0.205);
        f.step_cost_ns = 12_345;
        f.flags = StateFlags::FINAL;
        f.applied_torque_sequence = 0xDEAD_BEEF;
        f.plant_rejected_frames = 0x0102_0304;
        f.plant_over_limit_frames = 0x0001_0203;
        f.push_joint(JointState {
            position_rad: 1.25,
            velocity_rad_s: -0.5,
        })
        .unwrap();
        f.push_event(Event::ContactBegan { body: BodyId(3) })
            .unwrap();
        f.push_event(Event::ContactEnded {
            body: BodyId(65535),
        })
        .unwrap();
        f.push_event(Event::PlaneCrossed { body: BodyId(7) })
            .unwrap();
        f.push_contact(ContactForce {
            body: BodyId(2),
            point: 0,
            force_n: [-12.5, 0.75, 0.0],
        })
        .unwrap();
        f.push_contact(ContactForce {
            body: BodyId(2),
            point: 3,
            force_n: [-2.5, 0.5, 0.0],
        })
        .unwrap();
        let half = core::f64::consts::FRAC_1_SQRT_2;
        f.push_body(BodyMotion {
            com_m: [1.5, 1.25, -0.5],
            orientation: [half, 0.0, 0.0, half],
            velocity_m_s: [0.25, -2.0, 0.0],
            angular_velocity_rad_s: [0.0, 0.0, 3.0],
        })
        .unwrap();
        f
    }

    fn sample_torque(sequence: u64) -> TorqueFrame {
        let mut f = TorqueFrame::new(sequence, 41);
        f.flags = TorqueFlags::SAFE_STATE;
        f.push_torque(-3.5).unwrap();
        f.push_torque(0.25).unwrap();
        f
    }

    fn encoded_state(f: &StateFrame) -> [u8; STATE_FRAME_LEN] {
        let mut buf = [0u8; STATE_FRAME_LEN];
        assert_eq!(f.encode(&mut buf), Ok(STATE_FRAME_LEN));
        buf
    }

    fn encoded_torque(f: &TorqueFrame) -> [u8; TORQUE_FRAME_LEN] {
        let mut buf = [0u8; TORQUE_FRAME_LEN];
        assert_eq!(f.encode(&mut buf), Ok(TORQUE_FRAME_LEN));
        buf
    }

    /// Rewrites the checksum so that a deliberately altered body passes the CRC check and
    /// reaches the deeper checks.
    fn reseal(buf: &mut [u8]) {
        let n = buf.len() - CRC_LEN;
        let crc = crc32(&buf[..n]);
        buf[n..].copy_from_slice(&crc.to_le_bytes());
    }

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn state_frame_round_trips() {
        let f = sample_state(9);
        assert_eq!(StateFrame::decode(&encoded_state(&f)), Ok(f));
        let full = {
            let mut f = StateFrame::new(u64::MAX, u64::MAX, f64::MAX);
            for j in 0..MAX_JOINTS {
                f.push_joint(JointState {
                    position_rad: j as f64,
                    velocity_rad_s: -(j as f64),
                })
                .unwrap();
            }
            for e in 0..MAX_EVENTS {
                f.push_event(Event::PlaneCrossed {
                    body: BodyId(e as u16),
                })
                .unwrap();
            }
            for c in 0..MAX_CONTACTS {
                f.push_contact(ContactForce {
                    body: BodyId(u16::MAX - c as u16),
                    point: u8::MAX - c as u8,
                    force_n: [f64::MAX, -f64::MAX, c as f64],
                })
                .unwrap();
            }
            for k in 0..MAX_BODIES {
                let a = k as f64 * 0.1;
                f.push_body(BodyMotion {
                    com_m: [f64::MAX, -f64::MAX, a],
                    orientation: [a.cos(), 0.0, a.sin(), 0.0],
                    velocity_m_s: [a, -a, f64::MIN_POSITIVE],
                    angular_velocity_rad_s: [-f64::MAX, 0.0, a],
                })
                .unwrap();
            }
            assert!(f.push_body(BodyMotion::default()).is_err());
            f.plant_rejected_frames = u32::MAX;
            f.plant_over_limit_frames = u32::MAX;
            assert!(f.push_contact(ContactForce::default()).is_err());
            assert!(f.push_joint(JointState::default()).is_err());
            assert!(
                f.push_event(Event::PlaneCrossed { body: BodyId(0) })
                    .is_err()
            );
            f
        };
        assert_eq!(StateFrame::decode(&encoded_state(&full)), Ok(full));
    }

    #[test]
    fn torque_frame_round_trips() {
        let f = sample_torque(9);
        assert_eq!(TorqueFrame::decode(&encoded_torque(&f)), Ok(f));
        assert_eq!(
            peek_kind(&encoded_torque(&sample_torque(1))),
            Ok(FrameKind::Torque)
        );
    }

    #[test]
    fn encoding_into_a_short_buffer_is_refused() {
        let mut buf = [0u8; STATE_FRAME_LEN - 1];
        assert_eq!(
            sample_state(1).encode(&mut buf),
            Err(EncodeError::BufferTooSmall {
                needed: STATE_FRAME_LEN,
                got: STATE_FRAME_LEN - 1
            })
        );
    }

    #[test]
    fn each_kind_of_damage_gets_its_own_error() {
        let good = encoded_state(&sample_state(1));
        assert!(matches!(
            StateFrame::decode(&good[..5]),
            Err(DecodeError::TooShort { .. })
        ));
        assert!(matches!(
            StateFrame::decode(&good[..100]),
            Err(DecodeError::BadLength { received: 100, .. })
        ));
        let mut b = good;
        b[0] = b'X';
        assert!(matches!(
            StateFrame::decode(&b),
            Err(DecodeError::BadMagic { .. })
        ));
        for old in [1, 2, 3, 4] {
            let mut b = good;
            b[4] = old;
            assert_eq!(
                StateFrame::decode(&b),
                Err(DecodeError::WrongVersion {
                    found: old,
                    expected: 5
                })
            );
        }
        assert_eq!(
            TorqueFrame::decode(&good),
            Err(DecodeError::WrongKind {
                found: FrameKind::State,
                expected: FrameKind::Torque
            })
        );
        let mut b = good;
        b[5] = 9;
        assert_eq!(
            StateFrame::decode(&b),
            Err(DecodeError::UnknownKind { found: 9 })
        );
        let mut b = good;
        b[30] ^= 0x10;
        assert!(matches!(
            StateFrame::decode(&b),
            Err(DecodeError::ChecksumMismatch { .. })
        ));
        let mut b = good;
        b[40] = (MAX_JOINTS + 1) as u8;
        reseal(&mut b);
        assert!(matches!(
            StateFrame::decode(&b),
            Err(DecodeError::JointCountOutOfRange { count: 49, .. })
        ));
        let mut b = good;
        b[41] = 200;
        reseal(&mut b);
        assert!(matches!(
            StateFrame::decode(&b),
            Err(DecodeError::EventCountOutOfRange { count: 200, .. })
        ));
        let mut b = good;
        b[STATE_EVENTS_AT] = 77;
        reseal(&mut b);
        assert_eq!(
            StateFrame::decode(&b),
            Err(DecodeError::BadEvent { index: 0, tag: 77 })
        );
        // The reserved byte between tag and body id (a version-1 body kind) must be zero.
        let mut b = good;
        b[STATE_EVENTS_AT + EVENT_LEN + 1] = 1;
        reseal(&mut b);
        assert_eq!(
            StateFrame::decode(&b),
            Err(DecodeError::BadEvent { index: 1, tag: 2 })
        );
        // More torque frames refused over the limit than refused in all.
        let mut b = good;
        b[52..56].copy_from_slice(&0x0102_0305u32.to_le_bytes());
        reseal(&mut b);
        assert_eq!(
            StateFrame::decode(&b),
            Err(DecodeError::CountsDisagree {
                rejected: 0x0102_0304,
                over_limit: 0x0102_0305
            })
        );
        let mut b = good;
        b[42] = 0x80;
        reseal(&mut b);
        assert_eq!(
            StateFrame::decode(&b),
            Err(DecodeError::UnknownFlags { bits: 0x80 })
        );
        let mut b = good;
        b[STATE_JOINTS_AT + 16] = 1; // joint 1 is unused in the sample
        reseal(&mut b);
        assert_eq!(
            StateFrame::decode(&b),
            Err(DecodeError::NonZeroPadding {
                offset: STATE_JOINTS_AT + 16
            })
        );
        // Contacts: a count beyond MAX_CONTACTS, the reserved bytes after the count and in a
        // slot, an unused slot.
        let mut b = good;
        b[STATE_CONTACT_COUNT_AT] = 17;
        reseal(&mut b);
        assert_eq!(
            StateFrame::decode(&b),
            Err(DecodeError::ContactCountOutOfRange { count: 17, max: 16 })
        );
        for offset in [
            STATE_CONTACT_COUNT_AT + 2,
            STATE_CONTACT_COUNT_AT + 7,
            STATE_CONTACTS_AT + 3,
            STATE_CONTACTS_AT + 7,
            STATE_CONTACTS_AT + 2 * CONTACT_LEN, // contact 2 is unused in the sample
            STATE_CONTACTS_AT + 2 * CONTACT_LEN + 2,
            STATE_FRAME_LEN - CRC_LEN - 1,
        ] {
            let mut b = good;
            b[offset] = 0x40;
            reseal(&mut b);
            assert_eq!(
                StateFrame::decode(&b),
                Err(DecodeError::NonZeroPadding { offset }),
                "{offset}"
            );
        }
    }

    #[test]
    fn non_finite_values_are_named() {
        let mut f = sample_state(1);
        f.joints[0].velocity_rad_s = f64::NAN;
        assert_eq!(
            StateFrame::decode(&encoded_state(&f)),
            Err(DecodeError::NonFinite {
                field: Field::Velocity { joint: 0 }
            })
        );
        let mut f = sample_state(1);
        f.sim_time_s = f64::INFINITY;
        assert_eq!(
            StateFrame::decode(&encoded_state(&f)),
            Err(DecodeError::NonFinite {
                field: Field::SimTime
            })
        );
        for axis in 0..3u8 {
            let mut f = sample_state(1);
            f.contacts[0].force_n[usize::from(axis)] = f64::NAN;
            let e = StateFrame::decode(&encoded_state(&f)).unwrap_err();
            assert_eq!(
                e,
                DecodeError::NonFinite {
                    field: Field::ContactForce { index: 0, axis }
                }
            );
            assert_eq!(
                e.to_string(),
                format!("non-finite value in contacts[0].force_n[{axis}]")
            );
        }
        let mut f = sample_state(1);
        f.contacts[0].force_n[0] = f64::INFINITY;
        assert!(StateFrame::decode(&encoded_state(&f)).is_err());
        let mut f = sample_torque(1);
        f.torques_nm[1] = f64::NEG_INFINITY;
        let e = TorqueFrame::decode(&encoded_torque(&f)).unwrap_err();
        assert_eq!(
            e,
            DecodeError::NonFinite {
                field: Field::Torque { joint: 1 }
            }
        );
        assert_eq!(e.to_string(), "non-finite value in torques_nm[1]");
    }

    #[test]
    fn the_guard_rejects_and_counts_each_reason() {
        let mut g = FrameGuard::new();
        assert!(
            g.accept::<StateFrame>(&encoded_state(&sample_state(5)))
                .is_ok()
        );
        // Repeated.
        assert_eq!(
            g.accept::<StateFrame>(&encoded_state(&sample_state(5))),
            Err(Rejected::Repeated { sequence: 5 })
        );
        // Stale.
        assert_eq!(
            g.accept::<StateFrame>(&encoded_state(&sample_state(4))),
            Err(Rejected::Stale {
                sequence: 4,
                newest: 5
            })
        );
        // Corrupted checksum.
        let mut b = encoded_state(&sample_state(6));
        b[STATE_FRAME_LEN - 1] ^= 0xFF;
        assert!(matches!(
            g.accept::<StateFrame>(&b),
            Err(Rejected::Malformed(DecodeError::ChecksumMismatch { .. }))
        ));
        // Wrong version.
        let mut b = encoded_state(&sample_state(6));
        b[4] = 0;
        assert!(g.accept::<StateFrame>(&b).is_err());
        // NaN.
        let mut f = sample_state(6);
        f.joints[0].position_rad = f64::NAN;
        assert!(g.accept::<StateFrame>(&encoded_state(&f)).is_err());
        // A gap is accepted and noted.
        assert!(
            g.accept::<StateFrame>(&encoded_state(&sample_state(9)))
                .is_ok()
        );
        let c = *g.rejected();
        assert_eq!(
            c,
            RejectCounts {
                checksum: 1,
                wrong_version: 1,
                non_finite: 1,
                stale: 1,
                repeated: 1,
                ..RejectCounts::default()
            }
        );
        assert_eq!(c.total(), 5);
        assert_eq!(g.accepted(), 2);
        assert_eq!(g.skipped(), 3);
        assert_eq!(g.newest_sequence(), Some(9));
    }

    #[test]
    fn the_plant_counters_sit_where_the_layout_table_says() {
        let b = encoded_state(&sample_state(1));
        assert_eq!(b[48..52], 0x0102_0304u32.to_le_bytes());
        assert_eq!(b[52..56], 0x0001_0203u32.to_le_bytes());
        assert_eq!(b[6..8], (STATE_FRAME_LEN as u16).to_le_bytes());
        assert_eq!(STATE_FRAME_LEN, 3076);
        assert_eq!(MAX_FRAME_LEN, 3076);
        assert_eq!(b[4], 5);
        // Event 2 of the sample: plane crossed (tag 3), body 7.
        let e = STATE_EVENTS_AT + 2 * EVENT_LEN;
        assert_eq!(b[e..e + EVENT_LEN], [3, 0, 7, 0, 0, 0, 0, 0]);
        // Two contacts: count at 888, one body: count at 889, then body 2 with (-12.5, 0.75, 0) N
        // from 896 and body 2's point 3 with (-2.5, 0.5, 0) N from 928.
        assert_eq!(b[888..896], [2, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(b[896..904], [2, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(b[904..912], (-12.5f64).to_le_bytes());
        assert_eq!(b[912..920], 0.75f64.to_le_bytes());
        assert_eq!(b[920..928], 0.0f64.to_le_bytes());
        assert_eq!(b[928..936], [2, 0, 3, 0, 0, 0, 0, 0]);
        assert_eq!(b[936..944], (-2.5f64).to_le_bytes());
        assert!(b[960..1408].iter().all(|&x| x == 0));
        let f = StateFrame::decode(&b).unwrap();
        assert_eq!(f.contact_force_on(BodyId(2)), Some([-12.5, 0.75, 0.0]));
        assert_eq!(f.contact_force_on(BodyId(3)), None);
        assert_eq!(f.contacts().len(), 2);
        assert_eq!(f.contacts()[1].point, 3);
        // The body from 1408: 13 f64, then 15 empty slots of zeros up to the checksum.
        let half = core::f64::consts::FRAC_1_SQRT_2;
        let expected = [
            1.5, 1.25, -0.5, half, 0.0, 0.0, half, 0.25, -2.0, 0.0, 0.0, 0.0, 3.0,
        ];
        for (k, x) in expected.iter().enumerate() {
            assert_eq!(
                b[1408 + 8 * k..1416 + 8 * k],
                x.to_le_bytes(),
                "component {k}"
            );
        }
        assert!(b[1512..3072].iter().all(|&x| x == 0));
        assert_eq!(f.bodies.len(), 1);
    }

    #[test]
    fn bodies_are_checked_when_decoded() {
        let good = encoded_state(&sample_state(1));
        // A count beyond MAX_BODIES.
        let mut b = good;
        b[STATE_CONTACT_COUNT_AT + 1] = (MAX_BODIES + 1) as u8;
        reseal(&mut b);
        assert_eq!(
            StateFrame::decode(&b),
            Err(DecodeError::BodyCountOutOfRange {
                count: (MAX_BODIES + 1) as u8,
                max: MAX_BODIES
            })
        );
        // A quaternion of norm 2, and one just inside and just outside the tolerance.
        for (w, ok) in [
            (2.0, false),
            (1.0 + 0.5 * UNIT_QUATERNION_TOLERANCE, true),
            (1.0 + 2.0 * UNIT_QUATERNION_TOLERANCE, false),
        ] {
            let mut f = sample_state(1);
            f.bodies[0].orientation = [w, 0.0, 0.0, 0.0];
            let got = StateFrame::decode(&encoded_state(&f));
            if ok {
                assert_eq!(got, Ok(f));
            } else {
                assert_eq!(got, Err(DecodeError::NotUnitQuaternion { index: 0 }));
            }
        }
        // A NaN in each part of a body is named.
        for (component, name) in [
            (1, "bodies[0].com_m[1]"),
            (4, "bodies[0].orientation[1]"),
            (9, "bodies[0].velocity_m_s[2]"),
            (12, "bodies[0].angular_velocity_rad_s[2]"),
        ] {
            let mut b = good;
            let at = STATE_BODIES_AT + 8 * component;
            b[at..at + 8].copy_from_slice(&f64::NAN.to_le_bytes());
            reseal(&mut b);
            let e = StateFrame::decode(&b).unwrap_err();
            assert_eq!(
                e,
                DecodeError::NonFinite {
                    field: Field::Body {
                        index: 0,
                        component: component as u8
                    }
                }
            );
            assert!(e.to_string().contains(name), "{e}");
        }
        // A non-zero byte in an unused body slot.
        let mut b = good;
        b[STATE_BODIES_AT + BODY_LEN + 5] = 1;
        reseal(&mut b);
        assert!(matches!(
            StateFrame::decode(&b),
            Err(DecodeError::NonZeroPadding { .. })
        ));
        // The guard counts both as bad content.
        let mut g = FrameGuard::new();
        let mut b = good;
        b[STATE_CONTACT_COUNT_AT + 1] = 200;
        reseal(&mut b);
        assert!(g.accept::<StateFrame>(&b).is_err());
        assert_eq!(g.rejected().bad_content, 1);
    }

    #[test]
    fn oversize_datagrams_are_counted_apart_and_leave_the_sequence_alone() {
        let mut g = FrameGuard::new();
        assert!(
            g.accept::<StateFrame>(&encoded_state(&sample_state(5)))
                .is_ok()
        );
        let why = g.reject_oversize(4096);
        assert_eq!(why, Rejected::Oversize { datagram: 4096 });
        assert_eq!(
            why.to_string(),
            "oversize datagram: 4096 bytes, no frame is longer than 3076"
        );
        assert_eq!(
            *g.rejected(),
            RejectCounts {
                oversize: 1,
                ..RejectCounts::default()
            }
        );
        assert_eq!(g.rejected().total(), 1);
        assert_eq!(g.newest_sequence(), Some(5));
        assert!(
            g.accept::<StateFrame>(&encoded_state(&sample_state(6)))
                .is_ok()
        );
        assert_eq!(g.skipped(), 0);
    }

    #[test]
    fn the_guard_works_for_torque_frames_too() {
        let mut g = FrameGuard::new();
        assert!(
            g.accept::<TorqueFrame>(&encoded_torque(&sample_torque(0)))
                .is_ok()
        );
        assert!(
            g.accept::<TorqueFrame>(&encoded_torque(&sample_torque(0)))
                .is_err()
        );
        assert!(
            g.accept::<TorqueFrame>(&encoded_state(&sample_state(1)))
                .is_err()
        );
        assert_eq!(g.rejected().repeated, 1);
        assert_eq!(g.rejected().wrong_kind, 1);
    }

    #[test]
    fn errors_display_their_reason() {
        let e = Rejected::Malformed(DecodeError::WrongVersion {
            found: 7,
            expected: 3,
        });
        assert_eq!(
            e.to_string(),
            "malformed frame: wrong frame version 7, expected 3"
        );
        assert_eq!(
            DecodeError::ContactCountOutOfRange { count: 9, max: 4 }.to_string(),
            "contact count 9 out of range (max 4)"
        );
        assert!(core::error::Error::source(&e).is_some());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// The fuzz target: arbitrary bytes through every decoder and the guard never panic.
        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..450)) {
            let _ = StateFrame::decode(&bytes);
            let _ = TorqueFrame::decode(&bytes);
            let _ = peek_kind(&bytes);
            let mut g = FrameGuard::new();
            let _ = g.accept::<StateFrame>(&bytes);
            let _ = g.accept::<TorqueFrame>(&bytes);
        }

        /// Arbitrary bytes behind a valid header and checksum reach the content checks, which
        /// either accept a frame that re-encodes to the same bytes or reject it.
        #[test]
        fn sealed_arbitrary_bodies_decode_or_are_rejected(
            body in proptest::collection::vec(any::<u8>(), STATE_FRAME_LEN),
            state in any::<bool>(),
        ) {
            let kind = if state { FrameKind::State } else { FrameKind::Torque };
            let len = kind.len();
            let mut b = body[..len].to_vec();
            b[..4].copy_from_slice(&MAGIC);
            b[4] = VERSION;
            b[5] = kind as u8;
            b[6..8].copy_from_slice(&(len as u16).to_le_bytes());
            reseal(&mut b);
            let mut out = [0u8; MAX_FRAME_LEN];
            if state {
                if let Ok(f) = StateFrame::decode(&b) {
                    f.encode(&mut out).unwrap();
                    prop_assert_eq!(&out[..len], &b[..]);
                }
            } else if let Ok(f) = TorqueFrame::decode(&b) {
                f.encode(&mut out).unwrap();
                prop_assert_eq!(&out[..len], &b[..]);
            }
        }

        /// The contact section, written byte by byte with any count, any body ids and points,
        /// any force bits (NaN and ±∞ included), and reserved bytes and unused slots sometimes non-zero: the
        /// frame decodes exactly when the count is at most MAX_CONTACTS, every used force is
        /// finite and every reserved and unused byte is zero, and then re-encodes to the same
        /// bytes.
        #[test]
        fn the_contact_section_decodes_exactly_when_it_is_valid(
            count in 0u8..=18,
            slots in proptest::array::uniform4((
                any::<u16>(),
                any::<u8>(),
                proptest::array::uniform3(any::<u64>()),
                proptest::option::weighted(0.1, (0..CONTACT_RESERVED, 1u8..=255)),
            )),
            after_count in proptest::option::weighted(0.1, (0..CONTACT_COUNT_RESERVED, 1u8..=255)),
        ) {
            let mut b = encoded_state(&sample_state(3));
            b[STATE_CONTACT_COUNT_AT] = count;
            let mut valid = usize::from(count) <= MAX_CONTACTS;
            if let Some((at, x)) = after_count {
                b[STATE_CONTACT_COUNT_AT + 2 + at] = x;
                valid = false;
            }
            for (k, (id, point, bits, reserved)) in slots.iter().enumerate() {
                let at = STATE_CONTACTS_AT + k * CONTACT_LEN;
                let used = k < usize::from(count);
                let slot = &mut b[at..at + CONTACT_LEN];
                slot.fill(0);
                slot[..2].copy_from_slice(&id.to_le_bytes());
                slot[2] = *point;
                if let Some((r, x)) = reserved {
                    slot[3 + r] = *x;
                    valid = false;
                }
                for (a, bits) in bits.iter().enumerate() {
                    slot[8 + 8 * a..16 + 8 * a].copy_from_slice(&bits.to_le_bytes());
                    let x = f64::from_bits(*bits);
                    if (used && !x.is_finite()) || (!used && *bits != 0) {
                        valid = false;
                    }
                }
                if !used && (*id != 0 || *point != 0) {
                    valid = false;
                }
            }
            reseal(&mut b);
            match StateFrame::decode(&b) {
                Ok(f) => {
                    prop_assert!(valid);
                    prop_assert_eq!(f.contacts.len(), usize::from(count));
                    let mut out = [0u8; STATE_FRAME_LEN];
                    f.encode(&mut out).unwrap();
                    prop_assert_eq!(&out[..], &b[..]);
                }
                Err(_) => prop_assert!(!valid),
            }
        }

        /// Flipping any one bit of a valid frame gets it rejected (CRC-32 catches every
        /// single-bit error).
        #[test]
        fn any_single_bit_flip_is_rejected(bit in 0..STATE_FRAME_LEN * 8) {
            let mut b = encoded_state(&sample_state(3));
            b[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(StateFrame::decode(&b).is_err());
        }

        #[test]
        fn finite_frames_round_trip(
            seq in any::<u64>(), step in any::<u64>(), t in -1e9f64..1e9,
            joints in proptest::collection::vec((-1e6f64..1e6, -1e6f64..1e6), 0..=MAX_JOINTS),
            torques in proptest::collection::vec(-1e6f64..1e6, 0..=MAX_JOINTS),
            ids in proptest::collection::vec((0u8..3, any::<u16>()), 0..=MAX_EVENTS),
            contacts in proptest::collection::vec(
                (any::<u16>(), proptest::array::uniform3(-1e9f64..1e9)),
                0..=MAX_CONTACTS,
            ),
            (rejected, over_limit) in any::<u32>().prop_flat_map(|r| (Just(r), 0..=r)),
            bodies in proptest::collection::vec(
                (
                    proptest::array::uniform3(-1e9f64..1e9),
                    proptest::array::uniform4(-1.0f64..1.0),
                    proptest::array::uniform3(-1e9f64..1e9),
                    proptest::array::uniform3(-1e9f64..1e9),
                ),
                0..=MAX_BODIES,
            ),
        ) {
            let mut s = StateFrame::new(seq, step, t);
            s.plant_rejected_frames = rejected;
            s.plant_over_limit_frames = over_limit;
            for (p, v) in joints {
                s.push_joint(JointState { position_rad: p, velocity_rad_s: v }).unwrap();
            }
            for (tag, id) in ids {
                let body = BodyId(id);
                let e = match tag {
                    0 => Event::ContactBegan { body },
                    1 => Event::ContactEnded { body },
                    _ => Event::PlaneCrossed { body },
                };
                s.push_event(e).unwrap();
            }
            for (id, force_n) in contacts {
                s.push_contact(ContactForce { body: BodyId(id), point: 0, force_n }).unwrap();
            }
            for (com_m, q, velocity_m_s, angular_velocity_rad_s) in bodies {
                let n = q.iter().map(|x| x * x).sum::<f64>().sqrt();
                let orientation = if n > 1e-3 { q.map(|x| x / n) } else { [1.0, 0.0, 0.0, 0.0] };
                s.push_body(BodyMotion { com_m, orientation, velocity_m_s, angular_velocity_rad_s })
                    .unwrap();
            }
            prop_assert_eq!(StateFrame::decode(&encoded_state(&s)), Ok(s));
            let mut t = TorqueFrame::new(seq, step);
            for x in torques {
                t.push_torque(x).unwrap();
            }
            prop_assert_eq!(TorqueFrame::decode(&encoded_torque(&t)), Ok(t));
        }
    }
}
