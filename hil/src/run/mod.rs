//! `hil run [SCENARIO.toml] [--mode lockstep|realtime] [--out DIR]`: the main job. Resolves the
//! scenario into a scene, and for each controller (analytic, fixed-gain, static-timing) starts
//! `sim-host` as a child process on the same scene and seed, drives it, and records what the
//! plant reports. Then writes `report.json`, `trajectory.csv`, `angle.svg` and `latency.svg` into
//! the output folder and prints the outcome table.
//!
//! If a plant process dies or hangs, the controller goes to its safe state, the report so far is
//! written with `faults.plant_lost = true`, and `hil` exits non-zero naming what happened and
//! when. A bad scenario file exits with status 2 and an error naming the file, the field and the
//! reason. No child process outlives `hil`.

pub mod arm;
pub mod lockstep;
pub mod plant;
pub mod plot;
pub mod realtime;
pub mod report;
pub mod scenario;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::ValueEnum;

use arm::{ArmController, ControllerKind};
use plant::{PlantMode, PlantProcess};
use report::{ControllerRun, Faults, Report};
use scenario::Scenario;

/// How the loop runs (DESIGN.md, "Two ways to run the loop").
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Deterministic: the plant steps when the torques for its step have arrived.
    Lockstep,
    /// The plant steps on the wall clock (zero-order hold); the controller ticks on its own
    /// SCHED_FIFO thread.
    Realtime,
}

/// Arguments of `hil run`.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Scenario file (TOML). Without it, the built-in ball-blocking scenario
    /// (scenarios/ball_blocking.toml).
    pub scenario: Option<PathBuf>,
    /// Lockstep (deterministic, simulated time) or real time (wall clock, SCHED_FIFO thread).
    #[arg(long, value_enum, default_value = "lockstep")]
    pub mode: ModeArg,
    /// Output folder (default: out/<scenario name>/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run only these controllers (default: all three).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<ControllerArg>,
    /// The plant is declared lost after this long without a state, ms.
    #[arg(long, default_value_t = 500)]
    pub watchdog_ms: u64,
    /// Real time: the control thread is put in the safe state after this many ticks without a
    /// fresh state.
    #[arg(long, default_value_t = 5)]
    pub watchdog_ticks: u32,
    /// Real time: SCHED_FIFO priority of the control thread.
    #[arg(long, default_value_t = 80)]
    pub priority: u8,
    /// Pin the control thread to this CPU (real time).
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Pin the plant process to this CPU.
    #[arg(long)]
    pub plant_cpu: Option<usize>,
    /// No progress line.
    #[arg(long)]
    pub quiet: bool,
}

impl RunArgs {
    /// The arguments of `hil` with no subcommand: the built-in scenario, lockstep, defaults.
    pub fn default_for_main() -> Self {
        Self {
            scenario: None,
            mode: ModeArg::Lockstep,
            out: None,
            only: Vec::new(),
            watchdog_ms: 500,
            watchdog_ticks: 5,
            priority: 80,
            cpu: None,
            plant_cpu: None,
            quiet: false,
        }
    }
}

/// A controller named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ControllerArg {
    /// The analytic arrival servo.
    Analytic,
    /// The fixed-gain PD.
    FixedGain,
    /// The static-timing method.
    StaticTiming,
}

impl From<ControllerArg> for ControllerKind {
    fn from(c: ControllerArg) -> Self {
        match c {
            ControllerArg::Analytic => Self::Analytic,
            ControllerArg::FixedGain => Self::FixedGain,
            ControllerArg::StaticTiming => Self::StaticTiming,
        }
    }
}

/// Run `hil run`; the exit code is 0 on a complete run, 1 when a plant was lost or outputs could
/// not be written, 2 on a bad scenario or command line.
pub fn run(args: &RunArgs) -> ExitCode {
    let (scenario, file) = match Scenario::load(args.scenario.as_deref())
        .and_then(|(s, file)| check_mode(&s, &file, args.mode).map(|()| (s, file)))
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hil: {e}");
            return ExitCode::from(2);
        }
    };
    match run_scenario(args, &scenario, &file) {
        Ok(Outcome::Complete) => ExitCode::SUCCESS,
        Ok(Outcome::PlantLost(msg)) => {
            eprintln!("hil: {msg}");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("hil: {e}");
            ExitCode::from(1)
        }
    }
}

/// In lockstep the controller ticks once per plant step: its period is the physics step.
fn check_mode(
    scenario: &Scenario,
    file: &str,
    mode: ModeArg,
) -> Result<(), scenario::ScenarioError> {
    let mismatch =
        (scenario.control_period_s() - scenario.physics_dt_s).abs() > 1e-9 * scenario.physics_dt_s;
    if mode == ModeArg::Lockstep && mismatch {
        return Err(scenario::ScenarioError {
            file: file.to_string(),
            field: "control_rate_hz".into(),
            reason: format!(
                "in lockstep the controller ticks once per plant step, so the control rate must be 1/physics_dt_s = {} Hz (got {} Hz); use --mode realtime for other rates",
                1.0 / scenario.physics_dt_s,
                scenario.control_rate_hz
            ),
        });
    }
    Ok(())
}

enum Outcome {
    Complete,
    PlantLost(String),
}

fn run_scenario(
    args: &RunArgs,
    scenario: &Scenario,
    file: &str,
) -> Result<Outcome, Box<dyn std::error::Error>> {
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| scenario.default_out_dir());
    std::fs::create_dir_all(&out)
        .map_err(|e| format!("cannot create output folder {}: {e}", out.display()))?;
    let scene_file = out.join("scene.json");
    std::fs::write(
        &scene_file,
        serde_json::to_string_pretty(&scenario.scene())?,
    )
    .map_err(|e| format!("cannot write {}: {e}", scene_file.display()))?;
    let binary = plant::sim_host_binary()?;
    let mode = match args.mode {
        ModeArg::Lockstep => PlantMode::Lockstep,
        ModeArg::Realtime => PlantMode::Realtime,
    };
    let kinds: Vec<ControllerKind> = if args.only.is_empty() {
        ControllerKind::ALL.to_vec()
    } else {
        args.only.iter().map(|c| (*c).into()).collect()
    };
    let mut runs = Vec::new();
    let mut lost_message = None;
    for kind in kinds {
        let run = run_one(args, scenario, kind, mode, &binary, &scene_file)?;
        if run.faults.plant_lost {
            lost_message = Some(format!(
                "plant lost while running the {} controller: {} (safe state entered; partial report in {})",
                kind.name(),
                run.faults
                    .plant_lost_reason
                    .as_deref()
                    .unwrap_or("unknown reason"),
                out.display()
            ));
            runs.push(run);
            break;
        }
        runs.push(run);
    }
    let report = build_report(scenario, file, mode, &runs);
    write_outputs(&out, scenario, &report, &runs)?;
    println!("{}", report::summary_table(&report));
    println!("wrote {}", out.display());
    Ok(match lost_message {
        Some(m) => Outcome::PlantLost(m),
        None => Outcome::Complete,
    })
}

fn run_one(
    args: &RunArgs,
    scenario: &Scenario,
    kind: ControllerKind,
    mode: PlantMode,
    binary: &Path,
    scene_file: &Path,
) -> Result<ControllerRun, Box<dyn std::error::Error>> {
    let controller = ArmController::new(kind, scenario)
        .map_err(|e| format!("controller {}: {e}", kind.name()))?;
    let mut plant = PlantProcess::spawn(binary, scene_file, mode, args.plant_cpu)?;
    let quiet = args.quiet;
    let end = scenario.end_s;
    let name = kind.name();
    let mut next_report = 0.0;
    let progress = move |t: f64| {
        if !quiet && t >= next_report {
            eprint!("\r{name:<14} {} t = {t:6.2} / {end:.2} s", mode.name());
            let _ = std::io::stderr().flush();
            next_report = t + 0.25;
        }
    };
    let balls = scenario.targets.len();
    let run = match mode {
        PlantMode::Lockstep => lockstep::run(
            name,
            balls,
            controller,
            &plant.link,
            Duration::from_millis(args.watchdog_ms),
            progress,
        ),
        PlantMode::Realtime => realtime::run(
            name,
            balls,
            controller,
            &plant.link,
            realtime::Settings {
                period_s: scenario.control_period_s(),
                priority: args.priority,
                cpu: args.cpu,
                watchdog_ticks: args.watchdog_ticks,
                plant_timeout: Duration::from_millis(args.watchdog_ms),
            },
            progress,
        )?,
    };
    if !quiet {
        eprintln!();
    }
    // The plant exits by itself after its final state; a lost one is killed here.
    let wait = if run.faults.plant_lost {
        Duration::ZERO
    } else {
        Duration::from_secs(2)
    };
    let status = plant.finish(wait)?;
    if !run.faults.plant_lost && !status.success() {
        return Err(format!("sim-host ({name}) exited with {status}").into());
    }
    Ok(run)
}

fn build_report(
    scenario: &Scenario,
    file: &str,
    mode: PlantMode,
    runs: &[ControllerRun],
) -> Report {
    let controllers: Vec<_> = runs.iter().map(|r| r.outcome(&scenario.targets)).collect();
    let timing = runs
        .iter()
        .find(|r| r.name == ControllerKind::Analytic.name())
        .or_else(|| runs.first())
        .map(|r| r.timing.clone())
        .unwrap_or_default();
    let mut faults = Faults::default();
    for r in runs {
        faults.rejected_frames += r.faults.rejected_frames;
        faults.watchdog_trips += r.faults.watchdog_trips;
        faults.safe_state |= r.faults.safe_state;
        faults.plant_lost |= r.faults.plant_lost;
        if r.faults.plant_lost {
            faults.plant_lost_reason = r.faults.plant_lost_reason.clone();
            faults.plant_lost_at_s = r.faults.plant_lost_at_s;
        }
        faults
            .rejected_by_reason
            .extend(r.faults.rejected_by_reason.iter().cloned());
    }
    Report {
        scenario: scenario.name.clone(),
        scenario_file: file.to_string(),
        mode: mode.name(),
        control_rate_hz: scenario.control_rate_hz,
        physics_dt_s: scenario.physics_dt_s,
        seed: scenario.seed,
        weights: scenario.weights.enabled,
        target_list: scenario
            .targets
            .iter()
            .map(|t| (t.time_s, t.angle_rad))
            .collect(),
        controllers,
        timing,
        faults,
    }
}

fn write_outputs(
    out: &Path,
    scenario: &Scenario,
    report: &Report,
    runs: &[ControllerRun],
) -> Result<(), Box<dyn std::error::Error>> {
    let path = out.join("report.json");
    std::fs::write(&path, serde_json::to_string_pretty(report)?)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    report::write_trajectory_csv(&out.join("trajectory.csv"), runs)
        .map_err(|e| format!("cannot write trajectory.csv: {e}"))?;
    let title = format!(
        "{} ({} mode, {} Hz): shoulder angle and target poses",
        scenario.name, report.mode, scenario.control_rate_hz
    );
    plot::angle_plot(&out.join("angle.svg"), &title, runs, &scenario.targets)
        .map_err(|e| format!("cannot plot angle.svg: {e}"))?;
    let (values, what): (Vec<f64>, &str) = match &report.timing.wake_latency_us {
        Some(_) => (
            runs.iter()
                .flat_map(|r| r.timing.wake_latencies_us.iter().copied())
                .collect(),
            "control-thread wake-up latency",
        ),
        None => (
            runs.iter()
                .flat_map(|r| r.timing.round_trip_samples_us.iter().copied())
                .collect(),
            "round trip (lockstep: no wall-clock schedule)",
        ),
    };
    plot::latency_histogram(
        &out.join("latency.svg"),
        &format!("{} ({} mode): {what}", scenario.name, report.mode),
        &values,
    )
    .map_err(|e| format!("cannot plot latency.svg: {e}"))?;
    Ok(())
}
