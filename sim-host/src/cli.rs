//! The plant process's command line, `sim-host --scene FILE --fd N --mode lockstep|realtime
//! [--cpu N] [--quiet]`, as a library function: the `sim-host` binary is a one-line shell around [`main`],
//! and a harness binary can serve as the plant process itself by calling it (re-executing itself
//! with a subcommand), so that one `cargo run` builds everything.
//!
//! `--scene` is an arm scene ([`crate::Scene`], no `kind`), a robot scene ([`crate::RobotScene`],
//! `"kind": "robot"`), a biped scene ([`crate::biped::BipedScene`], `"kind": "biped"`) or a
//! humanoid scene (`"kind": "humanoid"`); see [`PlantScene`]. All run through the same loops.
//!
//! Exit codes: 0 when the scene ends or the controller closes its end; 2 on a bad command line or
//! scene file; 1 on a transport or protocol error (never on what a torque frame holds: refused
//! frames are counted). One summary line goes to stderr at the end (unless `--quiet`), with the
//! refused torque frames by kind; errors always do.

use std::path::PathBuf;
use std::process::ExitCode;

use transport::{FrameLink, SeqPacket};

use crate::host::{self, HostedPlant, Mode};
use crate::{Plant, PlantScene, SceneError};

/// One line of usage.
pub const USAGE: &str =
    "usage: sim-host --scene FILE --fd N --mode lockstep|realtime [--cpu N] [--quiet]";

struct Args {
    scene: PathBuf,
    fd: i32,
    mode: Mode,
    cpu: Option<usize>,
    quiet: bool,
}

fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut scene, mut fd, mut mode, mut cpu) = (None, None, None, None);
    let mut quiet = false;
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--scene" => scene = Some(PathBuf::from(value()?)),
            "--fd" => fd = Some(value()?.parse().map_err(|e| format!("--fd: {e}"))?),
            "--mode" => mode = Some(value()?.parse::<Mode>()?),
            "--cpu" => cpu = Some(value()?.parse().map_err(|e| format!("--cpu: {e}"))?),
            "--quiet" => quiet = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(Args {
        scene: scene.ok_or("--scene is required")?,
        fd: fd.ok_or("--fd is required")?,
        mode: mode.ok_or("--mode is required")?,
        cpu,
        quiet,
    })
}

/// Runs the plant process with `args` (without the program name) and returns its exit code.
///
/// # Safety
/// Call it as the entry point of a process, once: it takes ownership of the descriptor named by
/// `--fd`, which must be open and owned by nothing else in the process (true of a descriptor the
/// process inherited for this purpose).
pub unsafe fn main(args: impl Iterator<Item = String>) -> ExitCode {
    let args = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("sim-host: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut plant = match build(&args.scene) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("sim-host: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(cpu) = args.cpu
        && let Err(e) = host::pin_to_cpu(cpu)
    {
        eprintln!("sim-host: cannot pin to CPU {cpu}: {e}");
        return ExitCode::from(2);
    }
    // SAFETY: the caller guarantees (this function's contract) that the `--fd` descriptor is
    // open and owned by nothing else; it is adopted exactly once, here.
    let mut link = match unsafe { SeqPacket::from_inherited_fd(args.fd) } {
        Ok(l) => FrameLink::new(l),
        Err(e) => {
            eprintln!(
                "sim-host: --fd {}: not a usable SEQPACKET socket: {e}",
                args.fd
            );
            return ExitCode::from(2);
        }
    };
    let result = match args.mode {
        Mode::Lockstep => host::run_lockstep(&mut *plant, &mut link),
        Mode::Realtime => host::run_realtime(&mut *plant, &mut link),
    };
    match result {
        Ok(summary) => {
            if !args.quiet {
                eprintln!("sim-host: {summary}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("sim-host: {e} (at step {})", plant.clock().step_index());
            ExitCode::from(1)
        }
    }
}

/// The plant of the scene file at `path`, of either kind; errors name `path`.
fn build(path: &std::path::Path) -> Result<Box<dyn HostedPlant>, SceneError> {
    let in_file = |mut e: SceneError| {
        if e.file.as_os_str() == "(in memory)" {
            e.file = path.to_path_buf();
        }
        e
    };
    Ok(match PlantScene::load(path)? {
        PlantScene::Arm(s) => Box::new(Plant::new(&s).map_err(in_file)?),
        PlantScene::Biped(s) => Box::new(crate::biped::BipedPlant::new(&s).map_err(in_file)?),
        PlantScene::Humanoid(s) => {
            Box::new(crate::humanoid::HumanoidPlant::new(&s).map_err(in_file)?)
        }
        PlantScene::Robot(s) => Box::new(crate::robot::RobotPlant::new(&s).map_err(in_file)?),
    })
}
