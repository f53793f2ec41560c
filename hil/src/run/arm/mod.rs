//! `hil run` with no file, or `hil run scenarios/ball_blocking.toml`: the ball-blocking arm
//! ("On the arrival of a commanded pose"): balls thrown at targets the arm must reach at their
//! instants, weights dropped on it, and each controller ([`controller`]) against its own plant
//! process. This module is the kind's wiring: its scenario ([`scenario`]), recorder
//! ([`recorder`]), report ([`report`]) and plot ([`plot`]), and the controller in emulated
//! Cortex-M firmware ([`firmware`]). The session, the drivers and the output folder are the
//! shared ones of [`crate::run`].

pub mod controller;
pub mod firmware;
pub mod plot;
pub mod recorder;
pub mod report;
pub mod scenario;

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use sim_host::Mode;

use super::recorder::Run;
use super::report::{Faults, ReportHeader};
use super::session::{Cut, StopFlag};
use super::{Finished, Periods, RunArgs, output, plan_runs, plant, run_session, select, staged};
use crate::run::scenario::{Document, ScenarioError};
use controller::{ArmController, ControllerKind};
use recorder::{ArmRecorder, TrajectoryCsv};
use report::{ArmRun, Report};
use scenario::Scenario;

/// The files a run writes, in the order the console lists them.
pub const OUTPUT_FILES: [&str; 5] = [
    "report.json",
    "trajectory.csv",
    "angle.svg",
    "latency.svg",
    "scene.json",
];
/// Run a ball-blocking scenario: `doc` is the file's (parsed once by the caller, named `name`),
/// `None` for the built-in one. Exit codes as [`crate::run`]'s.
pub fn run(args: &RunArgs, stop: &StopFlag, doc: Option<Document<'_>>, name: &str) -> ExitCode {
    let loaded = match doc {
        Some(doc) => Scenario::from_document(doc).map(|s| (s, name.to_owned())),
        None => Scenario::load(None),
    };
    let (scenario, file) =
        match loaded.and_then(|(s, file)| check_mode(&s, &file, args.mode).map(|()| (s, file))) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("hil: {e}");
                return ExitCode::from(2);
            }
        };
    let kinds = match select(
        &args.only,
        &scenario.controller_kinds(),
        ControllerKind::name,
    ) {
        Ok(kinds) => kinds,
        Err(e) => {
            eprintln!("hil: {e}");
            return ExitCode::from(2);
        }
    };
    // Every controller is built once before anything runs: one that cannot be made for this
    // scenario (e.g. an arm whose gains do not fit the fixed-point formats) is the scenario's
    // fault, found before any plant starts.
    for kind in kinds {
        if let Err(e) = ArmController::new(kind, &scenario, state_period_s(&scenario)) {
            eprintln!(
                "hil: scenario {file}: controller {}: cannot be built for this scenario: {e}",
                kind.name()
            );
            return ExitCode::from(2);
        }
    }
    if args.controller_in == firmware::ControllerIn::Firmware
        && let Err(e) = firmware::machine()
    {
        eprintln!("hil: {e}");
        return ExitCode::from(2);
    }
    let image = match args.controller_in {
        firmware::ControllerIn::Host => None,
        firmware::ControllerIn::Firmware => match firmware::image(args.quiet) {
            Ok(image) => Some(image),
            Err(e) => {
                eprintln!("hil: {e}");
                return ExitCode::from(1);
            }
        },
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| output::default_out_dir(args.scenario.as_deref()));
    staged(&out, stop, |staging| {
        let report = run_scenario(args, &scenario, &file, staging, stop, image.as_deref())?;
        Ok(Finished {
            summary: report::summary_table(&report),
            incomplete_reason: report.header.incomplete_reason,
            files: OUTPUT_FILES.to_vec(),
        })
    })
}

/// In lockstep the controller ticks once per plant step: its period is the physics step.
fn check_mode(scenario: &Scenario, file: &str, mode: Mode) -> Result<(), ScenarioError> {
    let mismatch =
        (scenario.control_period_s() - scenario.physics_dt_s).abs() > 1e-9 * scenario.physics_dt_s;
    if mode == Mode::Lockstep && mismatch {
        return Err(ScenarioError {
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

/// The period at which fresh states reach the controller: the slower of the control period and
/// the physics step (lockstep: both are the physics step).
pub(crate) fn state_period_s(scenario: &Scenario) -> f64 {
    scenario.control_period_s().max(scenario.physics_dt_s)
}

fn run_scenario(
    args: &RunArgs,
    scenario: &Scenario,
    file: &str,
    staging: &Path,
    stop: &StopFlag,
    firmware_image: Option<&Path>,
) -> Result<Report, Box<dyn std::error::Error>> {
    let scene_file = staging.join("scene.json");
    std::fs::write(
        &scene_file,
        serde_json::to_string_pretty(&scenario.scene())?,
    )
    .map_err(|e| format!("cannot write {}: {e}", scene_file.display()))?;
    let plant = plant::plant_executable()?;
    let kinds = select(
        &args.only,
        &scenario.controller_kinds(),
        ControllerKind::name,
    )?;
    let mut csv = Some(
        TrajectoryCsv::create(&staging.join("trajectory.csv"))
            .map_err(|e| format!("cannot write trajectory.csv: {e}"))?,
    );
    let mut runs = Vec::new();
    let mut cut = None;
    let mut printed_warnings = false;
    plan_runs(kinds.len());
    for kind in kinds {
        let (run, limit, run_cut, next_csv) = run_one(
            args,
            scenario,
            kind,
            ((&plant.0, &plant.1), &scene_file),
            csv.take(),
            stop,
            firmware_image,
        )?;
        csv = next_csv;
        if !printed_warnings {
            for w in &run.timing.warnings {
                eprintln!("hil: WARNING: {w}");
                printed_warnings = true;
            }
        }
        runs.push((run, limit));
        if let Some(c) = run_cut {
            cut = Some((kind, c));
            break;
        }
    }
    if let Some(csv) = csv {
        csv.finish()
            .map_err(|e| format!("cannot write trajectory.csv: {e}"))?;
    }
    let report = build_report(scenario, file, args.mode, &runs, cut.as_ref());
    write_outputs(staging, scenario, &report, &runs)?;
    Ok(report)
}

type OneRun = (Run<ArmRun>, f64, Option<Cut>, Option<TrajectoryCsv>);

fn run_one(
    args: &RunArgs,
    scenario: &Scenario,
    kind: ControllerKind,
    session: ((&Path, &[&str]), &Path),
    csv: Option<TrajectoryCsv>,
    stop: &StopFlag,
    firmware_image: Option<&Path>,
) -> Result<OneRun, Box<dyn std::error::Error>> {
    let state_period = state_period_s(scenario);
    let controller = ArmController::new(kind, scenario, state_period)
        .map_err(|e| format!("controller {}: {e}", kind.name()))?;
    let limit = controller.gain_limit().max_damping_nms_per_rad;
    let recorder = ArmRecorder::new(kind.name(), &scenario.targets, state_period, csv);
    let periods = Periods {
        control_s: scenario.control_period_s(),
        state_s: state_period,
    };
    let (finished, cut) = match firmware_image {
        None => run_session(
            args,
            controller,
            recorder,
            kind.name(),
            session,
            periods,
            stop,
        )?,
        Some(image) => {
            let setup = ArmController::setup(kind, scenario, state_period)?;
            let mcu = firmware::FirmwareArm::start(
                image,
                controller,
                setup,
                &scenario.arm_targets(),
                Duration::from_millis(args.watchdog_ms),
            )
            .map_err(|e| format!("controller {} in firmware: {e}", kind.name()))?;
            let (mut finished, cut) = run_session(
                args,
                mcu.clone(),
                recorder,
                kind.name(),
                session,
                periods,
                stop,
            )?;
            finished.kind.0.firmware = mcu.report();
            (finished, cut)
        }
    };
    let (mut run, csv) = finished.split();
    if let Some(Cut::PlantLost { reason }) = &cut {
        run.faults.plant_lost_reason = Some(reason.clone());
    }
    Ok((run, limit, cut, csv))
}

fn build_report(
    scenario: &Scenario,
    file: &str,
    mode: Mode,
    runs: &[(Run<ArmRun>, f64)],
    cut: Option<&(ControllerKind, Cut)>,
) -> Report {
    let controllers: Vec<_> = runs
        .iter()
        .map(|(r, limit)| r.outcome(scenario.targets.len(), *limit))
        .collect();
    let timing = runs
        .iter()
        .find(|(r, _)| r.kind.name == ControllerKind::Analytic.name())
        .or_else(|| runs.first())
        .map(|(r, _)| r.timing.clone())
        .unwrap_or_default();
    let faults = Faults::sum(runs.iter().map(|(r, _)| &r.faults));
    Report {
        header: ReportHeader::new(
            cut.map(|(kind, c)| (format!("the {} controller", kind.name()), c)),
            &scenario.name,
            file,
            scenario::BALL_BLOCKING,
            mode,
        )
        .with_runs(Some(scenario.control_rate_hz), timing, faults),
        physics_dt_s: scenario.physics_dt_s,
        seed: scenario.seed,
        weights: scenario.weights.enabled,
        target_list: scenario
            .targets
            .iter()
            .map(|t| (t.time_s, t.angle_rad))
            .collect(),
        controllers,
    }
}

fn write_outputs(
    dir: &Path,
    scenario: &Scenario,
    report: &Report,
    runs: &[(Run<ArmRun>, f64)],
) -> Result<(), Box<dyn std::error::Error>> {
    let path = dir.join("report.json");
    std::fs::write(&path, serde_json::to_string_pretty(report)? + "\n")
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let runs: Vec<&Run<ArmRun>> = runs.iter().map(|(r, _)| r).collect();
    let title = format!(
        "{} ({} mode, {} Hz): shoulder angle and target poses",
        scenario.name, report.header.mode, scenario.control_rate_hz
    );
    plot::angle_plot(&dir.join("angle.svg"), &title, &runs, &scenario.targets)
        .map_err(|e| format!("cannot plot angle.svg: {e}"))?;
    let what = if report.header.mode == Mode::Realtime.name() {
        "control-thread wake-up latency"
    } else {
        "round trip (lockstep: no wall-clock schedule)"
    };
    let latency: Vec<_> = runs.iter().map(|r| (r.kind.name, &r.latency)).collect();
    crate::run::plot::latency_histogram(
        &dir.join("latency.svg"),
        &format!("{} ({} mode): {what}", scenario.name, report.header.mode),
        &latency,
    )
    .map_err(|e| format!("cannot plot latency.svg: {e}"))?;
    Ok(())
}
