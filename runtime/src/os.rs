//! Real-time setup of the calling thread: SCHED_FIFO check (or the switch back to SCHED_OTHER
//! when normal priority is asked for), CPU affinity, `mlockall`, stack pre-faulting, and holding
//! `/dev/cpu_dma_latency` at 0.
//!
//! Runs once on the control thread before its loop starts (it may allocate then), never inside the
//! loop. Every step that the OS refuses is recorded in [`RtSetup`] with the reason, never ignored.

use std::fs::File;
use std::io::Write;

use serde::Serialize;

/// Bytes of stack touched before the loop starts, so the loop never faults a fresh stack page.
pub const STACK_PREFAULT_BYTES: usize = 256 * 1024;
/// Stack size given to the control thread (must exceed [`STACK_PREFAULT_BYTES`] comfortably).
pub const CONTROL_STACK_BYTES: usize = 2 * 1024 * 1024;

/// What the real-time setup asked for and what it actually got.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RtSetup {
    /// SCHED_FIFO priority asked for, 1..=99 (`None`: normal priority, SCHED_OTHER, was asked
    /// for, i.e. priority 0).
    pub requested_priority: Option<u8>,
    /// The control thread really runs SCHED_FIFO (read back with `sched_getscheduler`).
    pub sched_fifo: bool,
    /// Why the scheduling asked for was not obtained: SCHED_FIFO refused, or (normal priority
    /// asked for) the inherited real-time policy could not be left.
    pub priority_error: Option<String>,
    /// Linux thread id of the control thread (`gettid`), e.g. for `chrt -p` or
    /// `/proc/<pid>/task/<tid>`.
    pub tid: i32,
    /// CPU the thread is pinned to.
    pub cpu: Option<usize>,
    /// `mlockall(MCL_CURRENT | MCL_FUTURE)` succeeded (process-wide; left locked afterwards).
    pub mlockall: bool,
    /// Why `mlockall` failed, if it did.
    pub mlockall_error: Option<String>,
    /// Stack bytes pre-faulted before the loop.
    pub stack_prefaulted_bytes: usize,
    /// `/dev/cpu_dma_latency` was held open at 0 for the whole run.
    pub dma_latency_held: bool,
    /// Why it could not be, if it could not.
    pub dma_latency_error: Option<String>,
    /// Why the asynchronous signals could not be blocked on the control thread, if they could
    /// not.
    pub signals_error: Option<String>,
}

impl RtSetup {
    /// One line per thing that did not go as asked, for the report (empty when all went well).
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        match (self.requested_priority, self.sched_fifo) {
            (Some(p), false) => w.push(format!(
                "SCHED_FIFO priority {p} was refused ({}): the control thread ran at NORMAL priority (SCHED_OTHER)",
                self.priority_error.as_deref().unwrap_or("unknown reason")
            )),
            (None, true) => w.push(format!(
                "normal priority was asked for but the control thread runs SCHED_FIFO ({})",
                self.priority_error.as_deref().unwrap_or("unknown reason")
            )),
            _ => {}
        }
        if let Some(e) = &self.mlockall_error {
            w.push(format!("mlockall failed ({e}): memory is not locked"));
        }
        if let Some(e) = &self.dma_latency_error {
            w.push(format!("/dev/cpu_dma_latency not held at 0 ({e})"));
        }
        if let Some(e) = &self.signals_error {
            w.push(format!(
                "{e}: signal handlers may run on the control thread"
            ));
        }
        w
    }
}

/// Whether the calling thread runs SCHED_FIFO.
pub fn current_thread_is_fifo() -> bool {
    // SAFETY: sched_getscheduler(0) only reads the calling thread's policy; no pointers involved.
    unsafe { libc::sched_getscheduler(0) == libc::SCHED_FIFO }
}

/// The calling thread's Linux thread id.
pub fn current_thread_id() -> i32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// Moves the calling thread from a real-time policy (SCHED_FIFO or SCHED_RR, e.g. inherited from
/// a real-time spawner) to SCHED_OTHER; leaves any other policy alone. Lowering one's own policy
/// needs no privilege.
pub fn leave_realtime_policy() -> std::io::Result<()> {
    // SAFETY: sched_getscheduler(0) only reads the calling thread's policy.
    let policy = unsafe { libc::sched_getscheduler(0) };
    if policy != libc::SCHED_FIFO && policy != libc::SCHED_RR {
        return Ok(());
    }
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid sched_param that outlives the call; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Pins the calling thread to `cpu` with `sched_setaffinity`.
pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("CPU {cpu} is beyond CPU_SETSIZE"),
        ));
    }
    // SAFETY: cpu_set_t is a plain bit array for which all-zeroes is the valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` < CPU_SETSIZE (checked above), so CPU_SET writes inside `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 means the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Locks all current and future pages of the process in RAM.
pub fn lock_memory() -> std::io::Result<()> {
    // SAFETY: mlockall takes only flags and touches no memory of ours.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Blocks the asynchronous signals ([`ASYNC_SIGNALS`]) in the calling thread, so that a
/// process's handlers (Ctrl-C, SIGTERM, SIGCHLD…) run on its other threads and never interrupt
/// the control thread's loop. The process still receives them.
pub fn block_async_signals() -> std::io::Result<()> {
    // SAFETY: `set` is a valid sigset_t, initialised by sigemptyset before sigaddset writes it;
    // pthread_sigmask only reads it and changes this thread's mask (no old mask requested).
    let rc = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in ASYNC_SIGNALS {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut())
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::from_raw_os_error(rc))
    }
}

/// The signals [`block_async_signals`] blocks: the asynchronous ones a process normally handles
/// (faults such as SIGSEGV stay deliverable).
pub const ASYNC_SIGNALS: [libc::c_int; 11] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGPIPE,
    libc::SIGCHLD,
    libc::SIGALRM,
    libc::SIGWINCH,
    libc::SIGIO,
];

/// Touches [`STACK_PREFAULT_BYTES`] of the calling thread's stack so that its pages exist (and,
/// after `mlockall`, stay) before the loop starts.
#[inline(never)]
pub fn prefault_stack() -> usize {
    let mut buf = [0_u8; STACK_PREFAULT_BYTES];
    std::hint::black_box(&mut buf);
    STACK_PREFAULT_BYTES
}

/// Opens `/dev/cpu_dma_latency` and writes 0 (no C-state exit latency allowed). The request holds
/// while the returned file stays open.
pub fn hold_cpu_dma_latency_zero() -> std::io::Result<File> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/cpu_dma_latency")?;
    f.write_all(&0_i32.to_ne_bytes())?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_name_each_refusal_once() {
        let s = RtSetup {
            requested_priority: Some(80),
            priority_error: Some("EPERM".into()),
            dma_latency_error: Some("ENOENT".into()),
            ..RtSetup::default()
        };
        let w = s.warnings();
        assert_eq!(w.len(), 2);
        assert!(w[0].contains("NORMAL priority"));
        assert!(RtSetup::default().warnings().is_empty());
        let stuck = RtSetup {
            sched_fifo: true,
            priority_error: Some("EPERM".into()),
            ..RtSetup::default()
        };
        assert_eq!(stuck.warnings().len(), 1);
        assert!(stuck.warnings()[0].contains("normal priority was asked"));
    }

    #[test]
    fn pinning_to_an_impossible_cpu_is_an_error() {
        assert!(pin_current_thread(1 << 20).is_err());
        assert!(prefault_stack() > 0);
    }
}
