//! [`FrameLink`]: one end of a frame stream — a [`FrameTransport`], the [`FrameGuard`] that checks
//! what arrives, and the buffers — used alike by the controller (which receives state frames and
//! sends torque frames, in lockstep and in real time) and by the plant (the other way round).
//!
//! Receiving returns only **accepted** frames: every datagram that is not one (malformed, the
//! wrong kind, a bad checksum, a non-finite value, a stale or repeated sequence number, or longer
//! than any frame) is counted in [`FrameLink::rejected`] by reason and skipped. Skipping never
//! extends a wait: a receive with a deadline returns [`LinkError::TimedOut`] at that deadline
//! whether the peer sent nothing or only garbage.
//!
//! Oversize datagrams (longer than [`MAX_FRAME_LEN`]) are counted under their own reason,
//! [`RejectCounts::oversize`] (not `bad_length`), via [`FrameGuard::reject_oversize`]; the
//! transport delivers the datagram cut to the buffer, and the next datagram is received as usual.
//!
//! One link receives one kind of frame (its guard tracks one sequence): the controller's link
//! receives states, the plant's receives torques.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use control_core::frames::{StateFrame, TorqueFrame};
//! use transport::{FrameLink, SeqPacket};
//! let (a, b) = SeqPacket::pair()?;
//! let (mut controller, plant) = (FrameLink::new(a), FrameLink::new(b));
//! plant.send_state(&StateFrame::new(1, 0, 0.0))?;
//! let state = controller.recv_state(Instant::now() + Duration::from_secs(1))?;
//! assert_eq!(state.step, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Never does: allocate per frame, hand out a frame its guard refused, let a rejected datagram
//! push a deadline back, or end a run because of what a peer sent (only because of what the
//! transport says).

use std::fmt;
use std::io;
use std::time::Instant;

use control_core::frames::{
    EncodeError, FrameGuard, MAX_FRAME_LEN, RejectCounts, SequencedFrame, StateFrame, TorqueFrame,
};

use crate::{FrameTransport, SeqPacket, TransportError};

/// Why a [`FrameLink`] call failed. Rejected datagrams are not errors: they are counted and
/// skipped.
#[derive(Debug)]
#[non_exhaustive]
pub enum LinkError {
    /// The peer closed its end (normally: its process exited or crashed).
    PeerClosed,
    /// No accepted frame arrived before the deadline.
    TimedOut,
    /// Any other operating-system error.
    Io(io::Error),
    /// A frame could not be encoded (cannot happen with the link's own buffer; kept so that
    /// nothing is hidden).
    Encode(EncodeError),
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PeerClosed => f.write_str("peer closed the connection"),
            Self::TimedOut => f.write_str("timed out waiting for an accepted frame"),
            Self::Io(e) => write!(f, "transport I/O error: {e}"),
            Self::Encode(e) => write!(f, "cannot encode frame: {e}"),
        }
    }
}

impl std::error::Error for LinkError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            Self::Encode(e) => Some(e),
            Self::PeerClosed | Self::TimedOut => None,
        }
    }
}

impl From<TransportError> for LinkError {
    fn from(e: TransportError) -> Self {
        match e {
            TransportError::PeerClosed => Self::PeerClosed,
            TransportError::TimedOut => Self::TimedOut,
            TransportError::Io(e) => Self::Io(e),
            // Truncated datagrams are counted by the receiver before this is reached, and the
            // link never sends an empty frame; anything else is reported, not hidden.
            other => Self::Io(io::Error::other(other.to_string())),
        }
    }
}

impl From<EncodeError> for LinkError {
    fn from(e: EncodeError) -> Self {
        Self::Encode(e)
    }
}

/// The receiving state of a link: the guard and the buffer one datagram lands in.
struct RecvState {
    guard: FrameGuard,
    buf: [u8; MAX_FRAME_LEN],
}

impl fmt::Debug for RecvState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvState")
            .field("guard", &self.guard)
            .finish_non_exhaustive()
    }
}

/// One end of a frame stream: transport, guard, receive buffer and rejection counts. See the
/// [module docs](self).
#[derive(Debug)]
pub struct FrameLink<T: FrameTransport = SeqPacket> {
    transport: T,
    recv: RecvState,
}

impl<T: FrameTransport> FrameLink<T> {
    /// A link over `transport` whose guard has accepted nothing yet.
    pub fn new(transport: T) -> Self {
        Self {
            transport,
            recv: RecvState {
                guard: FrameGuard::new(),
                buf: [0; MAX_FRAME_LEN],
            },
        }
    }

    /// The transport (e.g. to send raw bytes in a fault test, or to get its descriptor).
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// Receives until an accepted state frame arrives or `deadline` passes
    /// ([`LinkError::TimedOut`]). Every rejected datagram is counted and skipped and does not
    /// extend the wait. A deadline already past returns [`LinkError::TimedOut`] at once.
    pub fn recv_state(&mut self, deadline: Instant) -> Result<StateFrame, LinkError> {
        self.receiver().recv_state(deadline)
    }

    /// Receives until an accepted torque frame arrives or `deadline` passes; `None` waits as
    /// long as it takes. Rejected datagrams are counted and skipped, as for
    /// [`Self::recv_state`].
    pub fn recv_torques(&mut self, deadline: Option<Instant>) -> Result<TorqueFrame, LinkError> {
        self.receiver().recv_torques(deadline)
    }

    /// Without blocking: the next accepted torque frame if one is queued, `None` if none is
    /// (rejected datagrams queued before it are counted and skipped).
    pub fn try_recv_torques(&mut self) -> Result<Option<TorqueFrame>, LinkError> {
        self.receiver().try_recv_torques()
    }

    /// Encodes `frame` into a stack buffer (no allocation) and sends it.
    pub fn send_state(&self, frame: &StateFrame) -> Result<(), LinkError> {
        self.sender().send_state(frame)
    }

    /// Encodes `frame` into a stack buffer (no allocation) and sends it.
    pub fn send_torques(&self, frame: &TorqueFrame) -> Result<(), LinkError> {
        self.sender().send_torques(frame)
    }

    /// Rejections so far, by reason (oversize datagrams under [`RejectCounts::oversize`]).
    pub fn rejected(&self) -> &RejectCounts {
        self.recv.guard.rejected()
    }

    /// The receive guard: frames accepted, sequence numbers skipped, newest sequence.
    pub fn guard(&self) -> &FrameGuard {
        &self.recv.guard
    }

    /// A receiving half and a sending half at once, so that one thread can receive while
    /// another sends (with `std::thread::scope`; needs `T: Sync`). Both work on this link: what
    /// the receiver counts shows in [`Self::rejected`] afterwards.
    pub fn split(&mut self) -> (LinkReceiver<'_, T>, LinkSender<'_, T>) {
        let transport = &self.transport;
        (
            LinkReceiver {
                transport,
                recv: &mut self.recv,
            },
            LinkSender { transport },
        )
    }

    fn receiver(&mut self) -> LinkReceiver<'_, T> {
        self.split().0
    }

    fn sender(&self) -> LinkSender<'_, T> {
        LinkSender {
            transport: &self.transport,
        }
    }
}

/// The receiving half of a [`FrameLink`] ([`FrameLink::split`]).
#[derive(Debug)]
pub struct LinkReceiver<'a, T: FrameTransport = SeqPacket> {
    transport: &'a T,
    recv: &'a mut RecvState,
}

/// The sending half of a [`FrameLink`] ([`FrameLink::split`]).
#[derive(Debug)]
pub struct LinkSender<'a, T: FrameTransport = SeqPacket> {
    transport: &'a T,
}

// Manual impls: a derive would require `T: Clone`, but only a reference is copied.
impl<T: FrameTransport> Clone for LinkSender<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: FrameTransport> Copy for LinkSender<'_, T> {}

/// How long one receive may wait.
#[derive(Clone, Copy)]
enum Wait {
    Until(Instant),
    Forever,
    NotAtAll,
}

impl<T: FrameTransport> LinkReceiver<'_, T> {
    /// As [`FrameLink::recv_state`].
    pub fn recv_state(&mut self, deadline: Instant) -> Result<StateFrame, LinkError> {
        self.next(Wait::Until(deadline))?.ok_or(LinkError::TimedOut)
    }

    /// As [`FrameLink::recv_torques`].
    pub fn recv_torques(&mut self, deadline: Option<Instant>) -> Result<TorqueFrame, LinkError> {
        let wait = deadline.map_or(Wait::Forever, Wait::Until);
        self.next(wait)?.ok_or(LinkError::TimedOut)
    }

    /// As [`FrameLink::try_recv_torques`].
    pub fn try_recv_torques(&mut self) -> Result<Option<TorqueFrame>, LinkError> {
        self.next(Wait::NotAtAll)
    }

    /// As [`FrameLink::rejected`].
    pub fn rejected(&self) -> &RejectCounts {
        self.recv.guard.rejected()
    }

    /// As [`FrameLink::guard`].
    pub fn guard(&self) -> &FrameGuard {
        &self.recv.guard
    }

    /// The one receive loop: the next accepted `F`, or `None` when the wait is over (the
    /// deadline passed, or nothing was queued for [`Wait::NotAtAll`]).
    fn next<F: SequencedFrame>(&mut self, wait: Wait) -> Result<Option<F>, LinkError> {
        let RecvState { guard, buf } = &mut *self.recv;
        loop {
            let received = match wait {
                Wait::Until(deadline) => {
                    // Recomputed before every datagram: skipping garbage eats into the wait.
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(None);
                    }
                    match self.transport.recv_timeout(buf, left) {
                        Err(TransportError::TimedOut) => return Ok(None),
                        other => other,
                    }
                }
                Wait::Forever => self.transport.recv(buf),
                Wait::NotAtAll => match self.transport.try_recv(buf) {
                    Ok(Some(n)) => Ok(n),
                    Ok(None) => return Ok(None),
                    Err(e) => Err(e),
                },
            };
            match received {
                Ok(n) => {
                    if let Ok(frame) = guard.accept::<F>(buf.get(..n).unwrap_or(&[])) {
                        return Ok(Some(frame));
                    }
                }
                Err(TransportError::Truncated { datagram, .. }) => {
                    guard.reject_oversize(datagram);
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

impl<T: FrameTransport> LinkSender<'_, T> {
    /// As [`FrameLink::send_state`].
    pub fn send_state(&self, frame: &StateFrame) -> Result<(), LinkError> {
        let mut out = [0u8; MAX_FRAME_LEN];
        let n = frame.encode(&mut out)?;
        self.send_bytes(out.get(..n).unwrap_or(&out))
    }

    /// As [`FrameLink::send_torques`].
    pub fn send_torques(&self, frame: &TorqueFrame) -> Result<(), LinkError> {
        let mut out = [0u8; MAX_FRAME_LEN];
        let n = frame.encode(&mut out)?;
        self.send_bytes(out.get(..n).unwrap_or(&out))
    }

    fn send_bytes(&self, bytes: &[u8]) -> Result<(), LinkError> {
        self.transport.send(bytes).map_err(LinkError::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use control_core::frames::{
        BodyId, Event, JointState, STATE_FRAME_LEN, StateFlags, TORQUE_FRAME_LEN,
    };

    fn state(sequence: u64) -> StateFrame {
        let mut f = StateFrame::new(sequence, sequence, sequence as f64 * 0.005);
        f.push_joint(JointState {
            position_rad: 0.25,
            velocity_rad_s: -1.0,
        })
        .unwrap();
        f.push_event(Event::PlaneCrossed { body: BodyId(4) })
            .unwrap();
        f.plant_rejected_frames = 3;
        f.plant_over_limit_frames = 1;
        f
    }

    fn state_bytes(f: &StateFrame) -> [u8; STATE_FRAME_LEN] {
        let mut b = [0u8; STATE_FRAME_LEN];
        f.encode(&mut b).unwrap();
        b
    }

    fn torques(sequence: u64, tau: f64) -> TorqueFrame {
        let mut f = TorqueFrame::new(sequence, sequence);
        f.push_torque(tau).unwrap();
        f
    }

    /// One datagram of each kind of garbage a state receiver can meet, and the count each
    /// adds to.
    fn garbage() -> Vec<Vec<u8>> {
        let good = state_bytes(&state(1));
        let mut bad_crc = good;
        bad_crc[30] ^= 1;
        let mut nan = state(2);
        nan.joints[0].position_rad = f64::NAN;
        let mut torque = [0u8; TORQUE_FRAME_LEN];
        torques(9, 1.0).encode(&mut torque).unwrap();
        vec![
            b"not a frame at all".to_vec(),  // bad magic
            bad_crc.to_vec(),                // checksum
            state_bytes(&nan).to_vec(),      // non-finite
            torque.to_vec(),                 // wrong kind
            good[..100].to_vec(),            // bad length
            vec![0xA5; 4096],                // oversize
            state_bytes(&state(0)).to_vec(), // stale once sequence 5 is accepted
        ]
    }

    #[test]
    fn frames_of_both_kinds_go_through() {
        let (a, b) = SeqPacket::pair().unwrap();
        let (mut ctl, mut plant) = (FrameLink::new(a), FrameLink::new(b));
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut s = state(7);
        s.flags = StateFlags::FINAL;
        plant.send_state(&s).unwrap();
        assert_eq!(ctl.recv_state(deadline).unwrap(), s);
        ctl.send_torques(&torques(1, -2.5)).unwrap();
        assert_eq!(plant.recv_torques(None).unwrap(), torques(1, -2.5));
        assert!(plant.try_recv_torques().unwrap().is_none());
        ctl.send_torques(&torques(2, 0.5)).unwrap();
        assert_eq!(plant.recv_torques(Some(deadline)).unwrap(), torques(2, 0.5));
        drop(ctl);
        assert!(matches!(
            plant.recv_torques(Some(deadline)),
            Err(LinkError::PeerClosed)
        ));
        assert!(matches!(plant.send_state(&s), Err(LinkError::PeerClosed)));
        assert_eq!(plant.rejected().total(), 0);
        assert_eq!(plant.guard().accepted(), 2);
    }

    /// A peer that sends only garbage times out at the deadline like a silent one, and every
    /// datagram it sent is counted under its reason.
    #[test]
    fn a_garbage_only_peer_times_out_at_the_deadline_with_every_datagram_counted() {
        let (a, b) = SeqPacket::pair().unwrap();
        let mut ctl = FrameLink::new(a);
        // A valid frame first, so that a repeat of it is garbage too.
        b.send(&state_bytes(&state(5))).unwrap();
        let garbage = garbage();
        let n_garbage = garbage.len() + 1; // and one repeat
        let t0 = Instant::now();
        let wait = Duration::from_millis(300);
        let sender = std::thread::spawn(move || {
            for g in &garbage {
                b.send(g).unwrap();
                std::thread::sleep(Duration::from_millis(20));
            }
            b.send(&state_bytes(&state(5))).unwrap();
            // Keep the socket open past the deadline: silence, not end-of-file.
            std::thread::sleep(Duration::from_millis(600));
            drop(b);
        });
        assert_eq!(ctl.recv_state(t0 + wait).unwrap().sequence, 5);
        let got = ctl.recv_state(t0 + wait);
        let elapsed = t0.elapsed();
        assert!(matches!(got, Err(LinkError::TimedOut)), "{got:?}");
        assert!(elapsed >= wait, "{elapsed:?}");
        assert!(elapsed < wait + Duration::from_millis(150), "{elapsed:?}");
        let c = *ctl.rejected();
        assert_eq!(
            c,
            RejectCounts {
                bad_magic: 1,
                checksum: 1,
                non_finite: 1,
                wrong_kind: 1,
                bad_length: 1,
                oversize: 1,
                stale: 1,
                repeated: 1,
                ..RejectCounts::default()
            }
        );
        assert_eq!(c.total(), n_garbage as u64);
        sender.join().unwrap();
    }

    /// A peer flooding garbage as fast as it can does not keep a receive past its deadline.
    #[test]
    fn a_garbage_flood_does_not_extend_the_wait() {
        let (a, b) = SeqPacket::pair().unwrap();
        let mut ctl = FrameLink::new(a);
        let flood = std::thread::spawn(move || {
            let mut sent = 0u64;
            // Ends when the receiver is dropped (end-of-file on send).
            while b.send(&[0xEE; 64]).is_ok() {
                sent += 1;
            }
            sent
        });
        let t0 = Instant::now();
        let wait = Duration::from_millis(200);
        let got = ctl.recv_state(t0 + wait);
        let elapsed = t0.elapsed();
        assert!(matches!(got, Err(LinkError::TimedOut)), "{got:?}");
        assert!(elapsed < wait + Duration::from_millis(150), "{elapsed:?}");
        let counted = ctl.rejected().total();
        assert!(counted > 0);
        assert_eq!(ctl.rejected().bad_magic, counted);
        // A deadline already past: no receive at all.
        assert!(matches!(ctl.recv_state(t0), Err(LinkError::TimedOut)));
        assert_eq!(ctl.rejected().total(), counted);
        drop(ctl);
        assert!(flood.join().unwrap() >= counted);
    }

    #[test]
    fn an_oversize_datagram_is_counted_and_the_next_frame_still_received() {
        let (a, b) = SeqPacket::pair().unwrap();
        let mut plant = FrameLink::new(a);
        b.send(&[0u8; 4096]).unwrap();
        b.send(&[0u8; MAX_FRAME_LEN + 1]).unwrap();
        let mut t = [0u8; TORQUE_FRAME_LEN];
        torques(1, 3.0).encode(&mut t).unwrap();
        b.send(&t).unwrap();
        assert_eq!(plant.recv_torques(None).unwrap(), torques(1, 3.0));
        assert_eq!(plant.rejected().oversize, 2);
        assert_eq!(plant.rejected().bad_length, 0);
        assert_eq!(plant.rejected().total(), 2);
        // The same through the non-blocking receive.
        b.send(&[0u8; 4096]).unwrap();
        torques(2, 3.0).encode(&mut t).unwrap();
        b.send(&t).unwrap();
        assert_eq!(plant.try_recv_torques().unwrap(), Some(torques(2, 3.0)));
        b.send(&[0u8; 4096]).unwrap();
        assert_eq!(plant.try_recv_torques().unwrap(), None);
        assert_eq!(plant.rejected().oversize, 4);
    }

    /// The controller's shape: one thread receives states while another sends torques, over
    /// one link, and the receiver's counts show on the link afterwards.
    #[test]
    fn split_halves_work_from_two_threads() {
        const N: u64 = 200;
        let (a, b) = SeqPacket::pair().unwrap();
        let mut ctl = FrameLink::new(a);
        let mut plant = FrameLink::new(b);
        let plant_side = std::thread::spawn(move || {
            // Echo: a state for every torque frame, plus one garbage datagram every 50.
            for k in 0..N {
                let t = plant.recv_torques(None).unwrap();
                assert_eq!(t.sequence, k);
                if k % 50 == 0 {
                    plant.transport().send(&[1, 2, 3]).unwrap();
                }
                plant.send_state(&state(k + 1)).unwrap();
            }
            *plant.rejected()
        });
        let received = std::thread::scope(|s| {
            let (mut rx, tx) = ctl.split();
            s.spawn(move || {
                for k in 0..N {
                    tx.send_torques(&torques(k, 0.1)).unwrap();
                }
            });
            let deadline = Instant::now() + Duration::from_secs(20);
            (1..=N)
                .map(|k| {
                    let s = rx.recv_state(deadline).unwrap();
                    assert_eq!(s.sequence, k);
                    s.sequence
                })
                .count()
        });
        assert_eq!(received as u64, N);
        assert_eq!(ctl.rejected().total(), N / 50);
        assert_eq!(ctl.rejected().bad_length, N / 50);
        assert_eq!(ctl.guard().accepted(), N);
        assert_eq!(plant_side.join().unwrap().total(), 0);
    }

    #[test]
    fn errors_display_and_chain() {
        let e = LinkError::from(TransportError::Io(io::Error::other("boom")));
        assert_eq!(e.to_string(), "transport I/O error: boom");
        assert!(std::error::Error::source(&e).is_some());
        assert!(matches!(
            LinkError::from(TransportError::PeerClosed),
            LinkError::PeerClosed
        ));
        let e = LinkError::from(EncodeError::BufferTooSmall { needed: 4, got: 2 });
        assert_eq!(
            e.to_string(),
            "cannot encode frame: buffer too small for frame: 2 bytes, need 4"
        );
    }
}
