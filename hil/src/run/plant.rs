//! The plant as a child process, spawned with one end of a SEQPACKET socket pair, killed and
//! reaped whatever happens. By default the child is `hil` itself re-executed as the plant
//! (`hil __sim-host …`, which runs `sim_host::cli::main`), so the one `cargo run -p hil` builds
//! everything; `$HIL_SIM_HOST` names another plant executable (the standalone `sim-host`, or a
//! test's fake). Either way the plant is a separate process.
//!
//! No orphan is ever left: the child is killed on drop, it is asked to die with its parent
//! (`PR_SET_PDEATHSIG`), and it exits by itself when the socket closes. It runs in its own
//! process group, so a Ctrl-C at the terminal reaches `hil` only, which then sends the plant its
//! safe state before ending it.

use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use sim_host::Mode;
use transport::SeqPacket;

/// Environment variable that names another plant executable (default: `hil` itself).
pub const SIM_HOST_ENV: &str = "HIL_SIM_HOST";
/// The hidden first argument with which `hil` runs as the plant process.
pub const PLANT_SUBCOMMAND: &str = "__sim-host";

/// The plant's executable and the arguments before its own: `$HIL_SIM_HOST`, or this executable
/// with [`PLANT_SUBCOMMAND`].
pub fn plant_executable() -> io::Result<(PathBuf, Vec<&'static str>)> {
    if let Some(p) = std::env::var_os(SIM_HOST_ENV) {
        return Ok((PathBuf::from(p), Vec::new()));
    }
    Ok((std::env::current_exe()?, vec![PLANT_SUBCOMMAND]))
}

/// A running plant process and the controller's end of its socket.
#[derive(Debug)]
pub struct PlantProcess {
    child: Child,
    /// The controller's end of the link (taken by the session).
    pub link: Option<SeqPacket>,
    reaped: Option<ExitStatus>,
}

impl PlantProcess {
    /// Spawn the plant (`binary` with `prefix` arguments) on `scene_file` in `mode`, pinned to
    /// `cpu` if given.
    pub fn spawn(
        (binary, prefix): (&Path, &[&str]),
        scene_file: &Path,
        mode: Mode,
        cpu: Option<usize>,
    ) -> io::Result<Self> {
        let (ours, theirs) = SeqPacket::pair()?;
        let mut cmd = Command::new(binary);
        let fd = theirs.inherit_into(&mut cmd);
        cmd.args(prefix)
            .arg("--quiet")
            .arg("--scene")
            .arg(scene_file)
            .arg("--fd")
            .arg(fd.to_string())
            .arg("--mode")
            .arg(mode.name())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            // Its own process group: a terminal's Ctrl-C goes to hil, which ends the plant.
            .process_group(0);
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
            link: Some(ours),
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
