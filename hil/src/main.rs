//! `hil`: the hardware-in-the-loop command line. Each subcommand lives in its own module; this
//! file only parses the command line and dispatches.
//!
//! `hil` also serves as the plant process: started as `hil __sim-host …` (by `hil run` itself,
//! see `run::plant`) it runs `sim_host::cli::main`, so that one `cargo run -p hil` builds
//! everything the main job needs while the plant stays a separate process.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod anim;
mod jitter;
mod paper;
mod replay;
mod run;
mod study;

/// Hardware-in-the-loop harness for the real-time joint controller.
#[derive(Debug, Parser)]
#[command(name = "hil", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Run a scenario (default: the built-in ball-blocking experiment) with every controller
    /// against the Rapier plant in a child process; write report.json, trajectory.csv and SVG
    /// plots. This is what `hil` with no subcommand does.
    Run(run::RunArgs),
    /// Run the periodic control thread with a realistic tick and measure its wake-up latency,
    /// compute time, deadline misses and skipped releases (compare with cyclictest).
    Jitter(jitter::JitterArgs),
    /// Print the paper's figures 1 and 3 (static timing against the analytic gains, from the
    /// ODE alone).
    Paper,
    /// Offline studies of SIMBICON over control rates and gains (Carensac et al. 2017): one
    /// walk (cell), sweeps into heat maps, per-rate CMA-ES, cluster job lists and merges.
    Study(study::StudyArgs),
}

fn main() -> ExitCode {
    let mut args = std::env::args();
    if std::env::args().nth(1).as_deref() == Some(run::plant::PLANT_SUBCOMMAND) {
        // SAFETY: this is the process's entry point, called once; the `--fd` descriptor was
        // inherited from the `hil` that started this process, for this process alone.
        return unsafe { sim_host::cli::main(args.by_ref().skip(2)) };
    }
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Jitter(args)) => jitter::run(&args),
        Some(Command::Run(args)) => run::run(&args),
        Some(Command::Paper) => paper::print_table(),
        Some(Command::Study(args)) => study::run(&args),
        // `hil` alone is `hil run` with every default (one source of defaults: the parser).
        None => match Cli::try_parse_from(["hil", "run"]) {
            Ok(Cli {
                command: Some(Command::Run(args)),
            }) => run::run(&args),
            _ => ExitCode::from(2),
        },
    }
}
