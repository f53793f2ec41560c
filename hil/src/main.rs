//! `hil`: the hardware-in-the-loop command line. Each subcommand lives in its own module; this
//! file only parses the command line and dispatches.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod jitter;
mod run;

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Jitter(args)) => jitter::run(&args),
        Some(Command::Run(args)) => run::run(&args),
        None => run::run(&run::RunArgs::default_for_main()),
    }
}
