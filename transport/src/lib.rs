//! Frame transport between the controller process and the plant process.
//!
//! [`FrameTransport`] is the small interface both sides use: send one frame's bytes, receive one
//! frame (blocking, with a timeout, or not at all), and tell a dead peer
//! ([`TransportError::PeerClosed`]) from a slow one ([`TransportError::TimedOut`]). Frames are
//! opaque bytes here; `control_core::frames` gives them meaning.
//!
//! The default implementation, [`SeqPacket`], is a Unix domain socket of type `SOCK_SEQPACKET`:
//! reliable, ordered, message-preserving (one `send` is one `recv`), and when the peer process
//! exits for any reason the kernel closes its end, so the next receive returns end-of-file.
//!
//! ```
//! use transport::{FrameTransport, SeqPacket};
//! let (a, b) = SeqPacket::pair()?;
//! a.send(b"frame")?;
//! let mut buf = [0u8; 16];
//! let n = b.recv(&mut buf)?;
//! assert_eq!(&buf[..n], b"frame");
//! drop(a);
//! assert!(matches!(b.recv(&mut buf), Err(transport::TransportError::PeerClosed)));
//! # Ok::<(), transport::TransportError>(())
//! ```
//!
//! [`FrameLink`] puts a transport, the `control_core::frames::FrameGuard` and the buffers
//! together: send and receive whole frames, with every rejected datagram counted and skipped
//! (see [`link`]). Both the controller and the plant use it.
//!
//! Handing one end to a child process: create the pair in the parent (both ends close-on-exec),
//! call [`SeqPacket::inherit_into`] on the child's end with the `Command` (it clears
//! close-on-exec on that one descriptor in the child only, after `fork`), pass the returned number
//! as `--fd N`, spawn, then **drop the parent's copy of the child's end**: as long as the parent
//! holds it, the child's death cannot show as end-of-file. The child adopts the descriptor with
//! [`SeqPacket::from_inherited_fd`].
//!
//! Measured round trip (100-byte frame out, 244-byte frame back — frame version 1; version 2's
//! state frame is 252 bytes — between two threads of one process), on the 2-vCPU VM while other builds ran (load average 3–6):
//! `cargo bench -p transport` criterion medians 9.7 µs with both threads on CPU 0, 10.9–14.2 µs
//! unpinned; `cargo run --release -p transport --example ping_pong -- 0` p50 9.2 µs, p99 18 µs.
//! A plain `std` `UnixDatagram` ping-pong measured 9.5 µs p50 in the same minute, so the cost is
//! the machine's, not this crate's (3–4 µs was measured earlier on an idle machine).
//! Through a [`FrameLink`] on both ends (real 100- and 252-byte frames: encode, CRC-32, decode,
//! guard, and a `ppoll` for the controller's deadline), `framelink_round_trip/same_cpu` measured
//! 15.8 µs against 11.6 µs raw in the same run (load average 3.7, short 3 s samples).
//!
//! Never does: allocate per frame, retry a send that failed for any reason other than `EINTR`,
//! or hide a truncated datagram.
#![deny(missing_docs)]

use std::fmt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

pub mod link;

pub use link::{FrameLink, LinkError, LinkReceiver, LinkSender};

/// Why a transport call failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum TransportError {
    /// The peer closed its end (normally: its process exited or crashed).
    PeerClosed,
    /// Nothing arrived within the timeout.
    TimedOut,
    /// A datagram larger than the receive buffer arrived; its tail was lost.
    Truncated {
        /// Size of the datagram, bytes.
        datagram: usize,
        /// Size of the buffer, bytes.
        capacity: usize,
    },
    /// An empty frame cannot be sent: the receiver could not tell it from end-of-file.
    EmptyFrame,
    /// Any other operating-system error.
    Io(io::Error),
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PeerClosed => f.write_str("peer closed the connection"),
            Self::TimedOut => f.write_str("timed out waiting for a frame"),
            Self::Truncated { datagram, capacity } => write!(
                f,
                "received a {datagram}-byte datagram into a {capacity}-byte buffer: truncated"
            ),
            Self::EmptyFrame => f.write_str("refusing to send an empty frame"),
            Self::Io(e) => write!(f, "transport I/O error: {e}"),
        }
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for TransportError {
    fn from(e: io::Error) -> Self {
        match e.raw_os_error() {
            Some(libc::EPIPE | libc::ECONNRESET) => Self::PeerClosed,
            _ => Self::Io(e),
        }
    }
}

/// A message-preserving, reliable, ordered link to one peer.
///
/// Methods take `&self` so that one thread can receive while another sends.
pub trait FrameTransport {
    /// Sends one frame. Blocks only while the kernel's buffer is full.
    fn send(&self, frame: &[u8]) -> Result<(), TransportError>;

    /// Receives one frame into `buf`, waiting as long as it takes; returns its length.
    fn recv(&self, buf: &mut [u8]) -> Result<usize, TransportError>;

    /// Receives one frame into `buf`, waiting at most `timeout`; returns its length, or
    /// [`TransportError::TimedOut`].
    fn recv_timeout(&self, buf: &mut [u8], timeout: Duration) -> Result<usize, TransportError>;

    /// Receives one frame into `buf` if one is waiting, without blocking.
    fn try_recv(&self, buf: &mut [u8]) -> Result<Option<usize>, TransportError>;
}

/// A Unix domain socket of type `SOCK_SEQPACKET`: the default [`FrameTransport`].
#[derive(Debug)]
pub struct SeqPacket {
    fd: OwnedFd,
}

impl SeqPacket {
    /// Two connected ends, both close-on-exec.
    pub fn pair() -> io::Result<(Self, Self)> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` is a valid, writable array of two c_ints, as socketpair requires.
        let rc = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        let [a, b] = fds;
        // SAFETY: socketpair succeeded, so both are open descriptors that nothing else owns.
        let (a, b) = unsafe { (OwnedFd::from_raw_fd(a), OwnedFd::from_raw_fd(b)) };
        Ok((Self { fd: a }, Self { fd: b }))
    }

    /// Adopts a socket this process inherited (`sim-host --fd N`), checks that it is a
    /// `SOCK_SEQPACKET` socket and sets close-on-exec on it again.
    ///
    /// # Safety
    /// `fd` must be an open descriptor that nothing else in this process owns or will close (for
    /// a descriptor inherited across `exec` and named on the command line, that is the case as
    /// long as this is called once).
    pub unsafe fn from_inherited_fd(fd: RawFd) -> io::Result<Self> {
        // SAFETY: fcntl on any integer is memory-safe; F_GETFD fails with EBADF if it is not open.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the caller guarantees `fd` is open and owned by nobody else.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        let this = Self::from_owned_fd(owned)?;
        set_cloexec(this.fd.as_raw_fd(), true)?;
        Ok(this)
    }

    /// Wraps a descriptor after checking that it is a `SOCK_SEQPACKET` socket.
    pub fn from_owned_fd(fd: OwnedFd) -> io::Result<Self> {
        let mut ty: libc::c_int = 0;
        let mut len = libc::socklen_t::try_from(size_of::<libc::c_int>()).unwrap_or(4);
        // SAFETY: `ty` and `len` are valid for writes and `len` holds the size of `ty`.
        let rc = unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_TYPE,
                (&raw mut ty).cast(),
                &raw mut len,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        if ty != libc::SOCK_SEQPACKET {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "descriptor {} is a socket of type {ty}, not SOCK_SEQPACKET",
                    fd.as_raw_fd()
                ),
            ));
        }
        Ok(Self { fd })
    }

    /// Arranges for this end to be inherited by the child that `cmd` spawns, and returns the
    /// descriptor number the child will find it under (pass it as `--fd N`).
    ///
    /// Only the child's copy loses close-on-exec (in a `pre_exec` hook, after `fork`): the
    /// parent's descriptor, and every other child the parent spawns, are unaffected. Keep `self`
    /// alive until `cmd.spawn()` returns, then drop it so that the child's death shows as
    /// end-of-file on the parent's end.
    pub fn inherit_into(&self, cmd: &mut Command) -> RawFd {
        let fd = self.fd.as_raw_fd();
        // SAFETY: the hook runs in the child between fork and exec; it only calls fcntl, which is
        // async-signal-safe, touches no memory of the parent, and does not allocate.
        unsafe {
            cmd.pre_exec(move || set_cloexec(fd, false));
        }
        fd
    }

    /// A second handle on the same socket (`dup`), e.g. one for a receiving thread and one for a
    /// sending thread.
    pub fn try_clone(&self) -> io::Result<Self> {
        Ok(Self {
            fd: self.fd.try_clone()?,
        })
    }

    fn recv_flags(&self, buf: &mut [u8], flags: libc::c_int) -> Result<usize, TransportError> {
        loop {
            // SAFETY: `buf` is valid for writes of `buf.len()` bytes; with MSG_TRUNC the kernel
            // still writes at most that many and returns the datagram's full length.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    flags | libc::MSG_TRUNC,
                )
            };
            match usize::try_from(n) {
                Ok(0) => return Err(TransportError::PeerClosed),
                Ok(len) if len > buf.len() => {
                    return Err(TransportError::Truncated {
                        datagram: len,
                        capacity: buf.len(),
                    });
                }
                Ok(len) => return Ok(len),
                Err(_) => {
                    let e = io::Error::last_os_error();
                    // A peer that closed with datagrams of ours unread leaves ECONNRESET pending
                    // on this end, and the kernel reports it *before* the datagrams the peer
                    // sent us first (and clears it). Read on: those datagrams, then end-of-file.
                    if e.kind() != io::ErrorKind::Interrupted
                        && e.raw_os_error() != Some(libc::ECONNRESET)
                    {
                        return Err(e.into());
                    }
                }
            }
        }
    }
}

impl FrameTransport for SeqPacket {
    fn send(&self, frame: &[u8]) -> Result<(), TransportError> {
        if frame.is_empty() {
            return Err(TransportError::EmptyFrame);
        }
        loop {
            // SAFETY: `frame` is valid for reads of `frame.len()` bytes. MSG_NOSIGNAL turns a
            // closed peer into EPIPE instead of SIGPIPE.
            let n = unsafe {
                libc::send(
                    self.fd.as_raw_fd(),
                    frame.as_ptr().cast(),
                    frame.len(),
                    libc::MSG_NOSIGNAL,
                )
            };
            if n >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e.into());
            }
        }
    }

    fn recv(&self, buf: &mut [u8]) -> Result<usize, TransportError> {
        self.recv_flags(buf, 0)
    }

    fn recv_timeout(&self, buf: &mut [u8], timeout: Duration) -> Result<usize, TransportError> {
        let deadline = Instant::now().checked_add(timeout);
        let mut left = timeout;
        loop {
            let ts = libc::timespec {
                tv_sec: libc::time_t::try_from(left.as_secs()).unwrap_or(libc::time_t::MAX),
                tv_nsec: libc::c_long::from(left.subsec_nanos()),
            };
            let mut pfd = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: `pfd` is one valid pollfd, `ts` a valid timespec; no signal mask is passed.
            let rc = unsafe { libc::ppoll(&raw mut pfd, 1, &raw const ts, std::ptr::null()) };
            if rc > 0 {
                // Readable, hung up or in error: recv tells which (data, end-of-file, or errno).
                return match self.recv_flags(buf, libc::MSG_DONTWAIT) {
                    Err(TransportError::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => {
                        continue;
                    }
                    other => other,
                };
            }
            if rc == 0 {
                return Err(TransportError::TimedOut);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e.into());
            }
            left = match deadline {
                Some(d) => d.saturating_duration_since(Instant::now()),
                None => left,
            };
        }
    }

    fn try_recv(&self, buf: &mut [u8]) -> Result<Option<usize>, TransportError> {
        match self.recv_flags(buf, libc::MSG_DONTWAIT) {
            Ok(n) => Ok(Some(n)),
            Err(TransportError::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl AsFd for SeqPacket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for SeqPacket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl IntoRawFd for SeqPacket {
    fn into_raw_fd(self) -> RawFd {
        self.fd.into_raw_fd()
    }
}

impl From<SeqPacket> for OwnedFd {
    fn from(s: SeqPacket) -> Self {
        s.fd
    }
}

/// Sets or clears close-on-exec on `fd`. Async-signal-safe (used between fork and exec).
fn set_cloexec(fd: RawFd, on: bool) -> io::Result<()> {
    // SAFETY: fcntl with F_GETFD/F_SETFD reads and writes only descriptor flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    let new = if on {
        flags | libc::FD_CLOEXEC
    } else {
        flags & !libc::FD_CLOEXEC
    };
    // SAFETY: as above.
    if new != flags && unsafe { libc::fcntl(fd, libc::F_SETFD, new) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;

    #[test]
    fn a_peer_that_closes_with_our_frames_unread_still_delivers_its_last_frame() {
        let (a, b) = SeqPacket::pair().unwrap();
        // b's frame sits unread in a's queue when a closes: the kernel flags ECONNRESET on b.
        b.send(b"torque").unwrap();
        a.send(b"final state").unwrap();
        drop(a);
        let mut buf = [0u8; 32];
        let n = b.recv_timeout(&mut buf, Duration::from_secs(1)).unwrap();
        assert_eq!(&buf[..n], b"final state");
        assert!(matches!(b.recv(&mut buf), Err(TransportError::PeerClosed)));
        assert!(matches!(
            b.try_recv(&mut buf),
            Err(TransportError::PeerClosed)
        ));
    }

    #[test]
    fn frames_keep_their_boundaries() {
        let (a, b) = SeqPacket::pair().unwrap();
        a.send(&[1; 100]).unwrap();
        a.send(&[2; 7]).unwrap();
        let mut buf = [0u8; 256];
        assert_eq!(b.recv(&mut buf).unwrap(), 100);
        assert_eq!(b.recv(&mut buf).unwrap(), 7);
        assert_eq!(&buf[..7], &[2; 7]);
    }

    #[test]
    fn a_closed_peer_is_end_of_file_on_receive_and_send() {
        let (a, b) = SeqPacket::pair().unwrap();
        a.send(b"last").unwrap();
        drop(a);
        let mut buf = [0u8; 16];
        // Frames sent before the close are still delivered, then end-of-file.
        assert_eq!(b.recv(&mut buf).unwrap(), 4);
        assert!(matches!(b.recv(&mut buf), Err(TransportError::PeerClosed)));
        assert!(matches!(
            b.recv_timeout(&mut buf, Duration::from_secs(5)),
            Err(TransportError::PeerClosed)
        ));
        assert!(matches!(
            b.try_recv(&mut buf),
            Err(TransportError::PeerClosed)
        ));
        assert!(matches!(b.send(b"x"), Err(TransportError::PeerClosed)));
    }

    #[test]
    fn receive_times_out_and_try_receive_does_not_block() {
        let (a, b) = SeqPacket::pair().unwrap();
        let mut buf = [0u8; 16];
        let t0 = Instant::now();
        assert!(matches!(
            b.recv_timeout(&mut buf, Duration::from_millis(20)),
            Err(TransportError::TimedOut)
        ));
        assert!(t0.elapsed() >= Duration::from_millis(20));
        assert!(matches!(b.try_recv(&mut buf), Ok(None)));
        a.send(b"hi").unwrap();
        assert_eq!(b.recv_timeout(&mut buf, Duration::from_secs(1)).unwrap(), 2);
    }

    #[test]
    fn an_oversized_datagram_is_reported_not_cut_silently() {
        let (a, b) = SeqPacket::pair().unwrap();
        a.send(&[0; 64]).unwrap();
        let mut buf = [0u8; 16];
        assert!(matches!(
            b.recv(&mut buf),
            Err(TransportError::Truncated {
                datagram: 64,
                capacity: 16
            })
        ));
        assert!(matches!(a.send(&[]), Err(TransportError::EmptyFrame)));
    }

    #[test]
    fn only_seqpacket_sockets_are_adopted() {
        let (s, _t) = std::os::unix::net::UnixStream::pair().unwrap();
        let err = SeqPacket::from_owned_fd(OwnedFd::from(s)).unwrap_err();
        assert!(err.to_string().contains("not SOCK_SEQPACKET"));
    }

    /// The child's end reaches a real child process (`sh` echoing nothing, holding the socket
    /// until it exits), and the child's exit shows as end-of-file in the parent.
    #[test]
    fn a_child_inherits_its_end_and_its_exit_is_end_of_file() {
        let (parent, child) = SeqPacket::pair().unwrap();
        let mut cmd = Command::new("sh");
        let fd = child.inherit_into(&mut cmd);
        // The child writes one byte to its inherited descriptor, then exits.
        cmd.arg("-c")
            .arg(format!("printf x >&{fd}"))
            .stdin(Stdio::null());
        let mut proc = cmd.spawn().unwrap();
        drop(child);
        let mut buf = [0u8; 8];
        let n = parent
            .recv_timeout(&mut buf, Duration::from_secs(10))
            .unwrap();
        assert_eq!(&buf[..n], b"x");
        assert!(proc.wait().unwrap().success());
        assert!(matches!(
            parent.recv_timeout(&mut buf, Duration::from_secs(10)),
            Err(TransportError::PeerClosed)
        ));
        // The parent's own copy of the child's end stayed close-on-exec: a second child sees
        // nothing.
        let (p2, c2) = SeqPacket::pair().unwrap();
        let raw = c2.as_raw_fd();
        let status = Command::new("sh")
            .arg("-c")
            .arg(format!("printf x >&{raw}"))
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(!status.success());
        drop((p2, c2));
    }
}
