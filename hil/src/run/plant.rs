//! The plant as a child process: `sim-host` spawned with one end of a SEQPACKET socket pair,
//! killed and reaped whatever happens. No orphan is ever left: the child is killed on drop, it
//! is asked to die with its parent (`PR_SET_PDEATHSIG`), and it exits by itself when the socket
//! closes.

use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use transport::SeqPacket;

/// Environment variable that names the `sim-host` binary to run (default: beside `hil`).
pub const SIM_HOST_ENV: &str = "HIL_SIM_HOST";

/// Where the `sim-host` binary is: `$HIL_SIM_HOST`, else beside the running executable (or one
/// folder up, for test binaries under `target/*/deps/`).
pub fn sim_host_binary() -> io::Result<PathBuf> {
    if let Some(p) = std::env::var_os(SIM_HOST_ENV) {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .ok_or_else(|| io::Error::other("the running executable has no folder"))?;
    for candidate in [dir.join("sim-host"), dir.join("../sim-host")] {
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!(
            "sim-host binary not found beside {} (build it with `cargo build --release -p sim-host`, or set {SIM_HOST_ENV})",
            exe.display()
        ),
    ))
}

/// A running plant process and the controller's end of its socket.
#[derive(Debug)]
pub struct PlantProcess {
    child: Child,
    /// The controller's end of the link.
    pub link: SeqPacket,
    reaped: Option<ExitStatus>,
}

/// How the plant is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlantMode {
    /// Steps only when the torques for the step have arrived.
    Lockstep,
    /// Steps against the wall clock, holding the last torques.
    Realtime,
}

impl PlantMode {
    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Lockstep => "lockstep",
            Self::Realtime => "realtime",
        }
    }
}

impl PlantProcess {
    /// Spawn `sim-host` on `scene_file` in `mode`, pinned to `cpu` if given.
    pub fn spawn(
        binary: &Path,
        scene_file: &Path,
        mode: PlantMode,
        cpu: Option<usize>,
    ) -> io::Result<Self> {
        let (ours, theirs) = SeqPacket::pair()?;
        let mut cmd = Command::new(binary);
        let fd = theirs.inherit_into(&mut cmd);
        cmd.arg("--scene")
            .arg(scene_file)
            .arg("--fd")
            .arg(fd.to_string())
            .arg("--mode")
            .arg(mode.name())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        if let Some(cpu) = cpu {
            cmd.arg("--cpu").arg(cpu.to_string());
        }
        // SAFETY: prctl(PR_SET_PDEATHSIG) is async-signal-safe and touches no memory of the
        // parent; it runs in the forked child before exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| {
            io::Error::new(e.kind(), format!("cannot start {}: {e}", binary.display()))
        })?;
        // Our copy of the child's end must go, or its death would never show as end-of-file.
        drop(theirs);
        Ok(Self {
            child,
            link: ours,
            reaped: None,
        })
    }

    /// Wait up to `timeout` for the child to exit by itself; kill it after that. Returns its
    /// exit status.
    pub fn finish(&mut self, timeout: Duration) -> io::Result<ExitStatus> {
        if let Some(s) = self.reaped {
            return Ok(s);
        }
        let start = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait()? {
                self.reaped = Some(s);
                return Ok(s);
            }
            if start.elapsed() >= timeout {
                let _ = self.child.kill();
                let s = self.child.wait()?;
                self.reaped = Some(s);
                return Ok(s);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for PlantProcess {
    fn drop(&mut self) {
        if self.reaped.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
