//! `hil run [SCENARIO.toml] [--mode lockstep|realtime] [--out DIR]`: the main job.
//!
//! Follow one run in this order (docs/ARCHITECTURE.md draws the same path): [`scenario`] reads
//! the file once and picks its kind; the kind's module (one per kind: [`arm`], [`chain`],
//! [`biped`], [`dynamo`], [`legged`], [`walk3d`]) checks it and resolves it into the plant's
//! scene; for each controller a [`plant`] process is started on that scene and a [`session`]
//! connects them over one `transport::FrameLink`; a driver ([`lockstep`] or [`realtime`], peers
//! over the session) moves states in and torques out; the one [`recorder::Recorder`] notes the
//! timing and hands each state and command to the kind's own [`recorder::KindRecorder`], which
//! turns what happened into the kind's figures and CSV rows; its report (opening with the
//! shared [`report::ReportHeader`]) and plots (with the shared parts of [`plot`]) write the
//! rest.
//!
//! A run owns its output folder ([`output`]): it locks it before anything runs (a second run into
//! it is refused), stages its outputs beside it and replaces the folder as a whole only when the
//! run has produced them, so a run that fails before producing a result leaves no folder that
//! looks like one, and no file of an earlier run stays beside a new report. A run cut short
//! (plant lost, SIGINT, SIGTERM) still writes its report, with `"complete": false` and the
//! reason; the plant is sent the safe state first.
//!
//! Exit codes: 0 complete; 1 plant lost or outputs not written; 2 bad scenario or command line,
//! or an output folder that is held by another run or cannot be used; 130 after SIGINT, 143
//! after SIGTERM. No child process outlives `hil`.

pub mod arm;
pub mod biped;
pub mod chain;
pub mod dynamo;
pub mod legged;
pub mod lockstep;
#[cfg(test)]
mod no_alloc;
pub mod output;
pub mod plant;
pub mod plot;
pub mod realtime;
pub mod recorder;
pub mod report;
pub mod roles;
pub mod scenario;
pub mod session;
pub mod standing;
pub mod state_check;
pub mod walk3d;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use sim_host::Mode;
use transport::FrameLink;

use arm::firmware;
use plant::PlantProcess;
use report::Faults;
use scenario::{Document, ScenarioKind};
use session::{Cut, Session, StopFlag};

/// Arguments of `hil run`. `hil` with no subcommand runs these defaults.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Scenario file (TOML). Without it, the built-in ball-blocking scenario
    /// (scenarios/ball_blocking.toml).
    pub scenario: Option<PathBuf>,
    /// Lockstep (deterministic, simulated time) or real time (wall clock, SCHED_FIFO thread).
    #[arg(long, default_value = "lockstep", value_parser = parse_mode)]
    pub mode: Mode,
    /// Output folder (default: `out/<scenario file stem>/`, `out/ball_blocking/` for the built-in
    /// scenario). A run owns it: it is locked for the run and replaced as a whole at its end.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run only these controllers (default: all of the scenario's). Ball blocking: analytic,
    /// fixed-gain, static-timing. Chains (on_the_beat): single_link, composite,
    /// composite_feedforward, arrival.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// The plant is declared lost after this long without an accepted state, ms (1..=60000).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub watchdog_ms: u64,
    /// Real time: the control thread enters its safe state after this many state periods
    /// without a fresh state (1..=1000).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub watchdog_states: u32,
    /// Real time: SCHED_FIFO priority 1..=99 of the control thread; 0 runs it at normal
    /// priority (SCHED_OTHER). Same meaning as in `hil jitter`.
    #[arg(long, default_value_t = 80, value_parser = clap::value_parser!(u8).range(0..=99))]
    pub priority: u8,
    /// Pin the control thread to this CPU (real time).
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Pin the plant process to this CPU.
    #[arg(long)]
    pub plant_cpu: Option<usize>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Where the controller runs: `host` (this process) or `firmware` (the ball-blocking arm's
    /// controller as Cortex-M4F firmware under QEMU, `mps2-an386`; needs `qemu-system-arm` and
    /// the `thumbv7em-none-eabihf` Rust target). The firmware is lost when it does not answer a
    /// state within `--watchdog-ms`.
    #[arg(long, value_enum, default_value_t = firmware::ControllerIn::Host)]
    pub controller_in: firmware::ControllerIn,
    /// Replace the scenario's robot with this URDF (chain scenarios: `pose_tour`,
    /// `on_the_beat`, `kenwright_reach`). A relative path is the working directory's. Plant
    /// and controller both load it.
    #[arg(long)]
    pub urdf: Option<PathBuf>,
    /// The axis of the robot's description that points up. `pose_tour` (and the other chain
    /// scenarios): gravity along its negative; default the scenario's `model.up_axis`, or `z`
    /// (URDF's convention) for a robot given with `--urdf`. `robot_push`: the robot is turned
    /// so that this axis points up in its z-up world; default the scenario's `robot.up_axis`,
    /// or `z`.
    #[arg(long, value_enum)]
    pub up_axis: Option<chain::scenario::UpAxis>,
    /// Lockstep `dynamo_push` runs: write every 10th `qp_balance` tick's QP (P, q, A, b, its
    /// cones, the solver's status and answer) to this file as JSON lines, to check the solver
    /// offline against another (`tests/qp_recorded.rs` checks them with Clarabel) or replay
    /// them (`control-core`'s example `qp_replay`). Replaced if it exists.
    #[arg(long)]
    pub record_qp: Option<PathBuf>,
    /// With `--record-qp`: record every Nth tick instead of every 10th (1: every tick, about
    /// 65 kB a tick for the humanoid), 1 – 1 000 000.
    #[arg(long, value_name = "N", requires = "record_qp", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub record_qp_every: Option<u64>,
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse()
}

/// The controllers `--only` names, from `all` (by name; `-` and `_` alike), in `all`'s order;
/// all of them when `--only` is not given. An unknown name is an error that lists the known ones.
pub fn select<T: Copy>(
    only: &[String],
    all: &[T],
    name: impl Fn(T) -> &'static str,
) -> Result<Vec<T>, String> {
    if only.is_empty() {
        return Ok(all.to_vec());
    }
    let known: Vec<&str> = all.iter().map(|&c| name(c)).collect();
    for o in only {
        if !known.contains(&o.replace('-', "_").as_str()) {
            return Err(format!(
                "--only {o}: no such controller in this scenario (known: {})",
                known.join(", ")
            ));
        }
    }
    Ok(all
        .iter()
        .copied()
        .filter(|&c| only.iter().any(|o| o.replace('-', "_") == name(c)))
        .collect())
}

/// What a finished run tells the console and the exit code.
pub struct Finished {
    /// The summary table.
    pub summary: String,
    /// Why the run is incomplete, if it is.
    pub incomplete_reason: Option<String>,
    /// The files written, in the order the console lists them.
    pub files: Vec<&'static str>,
}

/// Run `hil run`; see the module docs for the exit codes.
pub fn run(args: &RunArgs) -> ExitCode {
    let stop = match StopFlag::on_signals() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hil: cannot install the SIGINT/SIGTERM handlers: {e}");
            return ExitCode::from(1);
        }
    };
    for (flag, cpu) in [("--cpu", args.cpu), ("--plant-cpu", args.plant_cpu)] {
        if let Some(cpu) = cpu
            && let Err(allowed) = cpu_available(cpu)
        {
            eprintln!("hil: {flag} {cpu}: not a CPU this process may run on (allowed: {allowed})");
            return ExitCode::from(2);
        }
    }
    // The file is read and parsed once; its `kind` picks the type its tree is read into.
    let text = match args.scenario.as_deref().map(scenario::read_scenario_file) {
        Some(Ok(text)) => Some(text),
        Some(Err(e)) => {
            eprintln!("hil: {e}");
            return ExitCode::from(2);
        }
        None => None,
    };
    let doc = match (args.scenario.as_deref(), text.as_deref()) {
        (Some(path), Some(text)) => match Document::parse(text, &path.display().to_string()) {
            Ok(doc) => Some(doc),
            Err(e) => {
                eprintln!("hil: {e}");
                return ExitCode::from(2);
            }
        },
        _ => None,
    };
    let kind = doc.as_ref().map_or(ScenarioKind::BallBlocking, |d| d.kind);
    let name = || {
        args.scenario.as_deref().map_or_else(
            || arm::scenario::BUILT_IN_NAME.to_owned(),
            |p| p.display().to_string(),
        )
    };
    if args.controller_in == firmware::ControllerIn::Firmware && kind != ScenarioKind::BallBlocking
    {
        eprintln!(
            "hil: {}: --controller-in firmware runs the ball-blocking arm's controller only",
            name()
        );
        return ExitCode::from(2);
    }
    if args.record_qp.is_some() && (kind != ScenarioKind::DynamoPush || args.mode != Mode::Lockstep)
    {
        eprintln!(
            "hil: {}: --record-qp records the qp_balance controller of a dynamo_push scenario in lockstep only",
            name()
        );
        return ExitCode::from(2);
    }
    if let Some(path) = &args.record_qp {
        let folder = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let problem = if !folder.is_dir() {
            Some("its folder does not exist")
        } else if std::fs::symlink_metadata(path).is_ok_and(|m| !m.file_type().is_file()) {
            // A FIFO would block the run until a reader came; a directory cannot be written.
            Some("it exists and is not a regular file")
        } else {
            None
        };
        if let Some(problem) = problem {
            eprintln!("hil: --record-qp {}: {problem}", path.display());
            return ExitCode::from(2);
        }
    }
    if (args.urdf.is_some() && !matches!(kind, ScenarioKind::Joint(_) | ScenarioKind::RobotPush))
        || (args.up_axis.is_some()
            && !matches!(kind, ScenarioKind::Joint(_) | ScenarioKind::RobotPush))
    {
        eprintln!(
            "hil: {}: --urdf and --up-axis describe the robot of a joint-space scenario (pose_tour, on_the_beat, kenwright_reach) or of a robot_push",
            name()
        );
        return ExitCode::from(2);
    }
    match (args.scenario.as_deref(), doc) {
        (Some(path), Some(doc)) => run_document(args, &stop, path, doc),
        _ => arm::run(args, &stop, None, &name()),
    }
}

/// The run of a scenario file with a `kind`: its tree read into the kind's type, then run.
fn run_document(args: &RunArgs, stop: &StopFlag, path: &Path, doc: Document<'_>) -> ExitCode {
    match doc.kind {
        ScenarioKind::DynamoPush => run_kind(
            args,
            stop,
            path,
            dynamo::DynamoScenario::from_document(doc, path),
            dynamo::DynamoScenario::laws,
            dynamo::controller::DynamoLaw::name,
            dynamo::run_scenario,
        ),
        ScenarioKind::SimbiconWalk => run_kind(
            args,
            stop,
            path,
            biped::WalkScenario::from_document(doc)
                .and_then(|s| biped::check_mode(&s, args.mode).map(|()| s)),
            biped::WalkScenario::laws,
            biped::controller::WalkLaw::name,
            biped::run_scenario,
        ),
        ScenarioKind::Joint(_) => run_kind(
            args,
            stop,
            path,
            chain::ChainScenario::from_document(
                doc,
                path,
                &chain::scenario::RobotOverride {
                    urdf: args.urdf.clone(),
                    up_axis: args.up_axis,
                },
            )
            .and_then(|s| chain::check_mode(&s, path, args.mode).map(|()| s)),
            |s| chain::controller::ChainLaw::of(s.kind).to_vec(),
            chain::controller::ChainLaw::name,
            chain::run_scenario,
        ),
        ScenarioKind::RobotPush => run_kind(
            args,
            stop,
            path,
            legged::RobotPush::prepare(doc, path, args.urdf.as_deref(), args.up_axis)
                .and_then(|s| legged::check_mode(&s.s, path, args.mode).map(|()| s)),
            legged::RobotPush::laws,
            legged::LeggedLaw::name,
            legged::run_scenario,
        ),
        ScenarioKind::Walk3d => run_kind(
            args,
            stop,
            path,
            walk3d::Walk3d::prepare(doc, path),
            walk3d::Walk3d::laws,
            walk3d::WalkLaw::name,
            walk3d::run_scenario,
        ),
        ScenarioKind::BallBlocking => arm::run(args, stop, Some(doc), &path.display().to_string()),
    }
}

/// A scenario kind's run: arguments, scenario, its file's name, the staging folder, the stop
/// flag.
type RunScenario<S> =
    fn(&RunArgs, &S, &str, &Path, &StopFlag) -> Result<Finished, Box<dyn std::error::Error>>;

/// The scenario kinds with a `kind` field (chains, walks, Dynamo): a file that did not load or
/// check, or an `--only` naming no controller of it, is exit 2; otherwise the run, staged.
fn run_kind<S, L: Copy>(
    args: &RunArgs,
    stop: &StopFlag,
    path: &Path,
    loaded: Result<S, scenario::ScenarioError>,
    laws: impl Fn(&S) -> Vec<L>,
    name: fn(L) -> &'static str,
    run: RunScenario<S>,
) -> ExitCode {
    let scenario = match loaded {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hil: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = select(&args.only, &laws(&scenario), name) {
        eprintln!("hil: {e}");
        return ExitCode::from(2);
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| output::default_out_dir(Some(path)));
    staged(&out, stop, |staging| {
        run(args, &scenario, &path.display().to_string(), staging, stop)
    })
}

/// Claim `out` (lock it, refused with exit 2 when another run holds it or it cannot be used),
/// run `body` writing into the claim's staging folder, replace `out` with what it wrote, and turn
/// the outcome into the console's lines and the exit code (see the module docs and [`output`]).
pub(crate) fn staged(
    out: &Path,
    stop: &StopFlag,
    body: impl FnOnce(&Path) -> Result<Finished, Box<dyn std::error::Error>>,
) -> ExitCode {
    let claim = match output::Claim::take(out) {
        Ok(claim) => claim,
        Err(e) => {
            eprintln!("hil: {e}");
            return ExitCode::from(2);
        }
    };
    let result = body(claim.staging()).and_then(|f| {
        for warning in claim.publish(&f.files)? {
            eprintln!("hil: warning: {warning}");
        }
        Ok(f)
    });
    match result {
        Ok(finished) => {
            println!("{}", finished.summary);
            println!("wrote {}: {}", out.display(), finished.files.join(", "));
            match (&finished.incomplete_reason, stop.signal()) {
                (None, _) => ExitCode::SUCCESS,
                (Some(reason), Some(sig)) => {
                    eprintln!("hil: {reason}; safe state sent; partial report written");
                    ExitCode::from(u8::try_from(128 + sig).unwrap_or(1))
                }
                (Some(reason), None) => {
                    eprintln!("hil: {reason} (safe state entered; partial report written)");
                    ExitCode::from(1)
                }
            }
        }
        Err(e) => {
            eprintln!("hil: {e}");
            match stop.signal() {
                Some(sig) => ExitCode::from(u8::try_from(128 + sig).unwrap_or(1)),
                None => ExitCode::from(1),
            }
        }
    }
}

/// Whether this process may run on `cpu`; if not, the CPUs it may run on.
fn cpu_available(cpu: usize) -> Result<(), String> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set that sched_getaffinity fills; CPU_ISSET
    // only reads bits below CPU_SETSIZE (checked first).
    let (rc, set) = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let rc = libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set);
        (rc, set)
    };
    if rc != 0 {
        return Ok(()); // cannot tell: let pinning itself report
    }
    let setsize = usize::try_from(libc::CPU_SETSIZE).unwrap_or(0);
    // SAFETY: as above, `c` < CPU_SETSIZE.
    let allowed: Vec<usize> = (0..setsize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect();
    if allowed.contains(&cpu) {
        Ok(())
    } else {
        Err(allowed
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "))
    }
}

/// Plant runs of this `hil run`: started so far, and planned (0: not said).
static RUNS: [std::sync::atomic::AtomicUsize; 2] = [
    std::sync::atomic::AtomicUsize::new(0),
    std::sync::atomic::AtomicUsize::new(0),
];

/// Say how many plant runs (sessions) this scenario will start: progress then counts them
/// ("parent_space 3/54").
pub fn plan_runs(n: usize) {
    use std::sync::atomic::Ordering::Relaxed;
    RUNS[0].store(0, Relaxed);
    RUNS[1].store(n, Relaxed);
}

/// The progress label of the next run of controller `name`: with its number among the planned
/// runs when more than one was planned.
fn next_run_label(name: &str) -> String {
    use std::sync::atomic::Ordering::Relaxed;
    let k = RUNS[0].fetch_add(1, Relaxed) + 1;
    match RUNS[1].load(Relaxed) {
        n if n > 1 => format!("{name} {k}/{n}"),
        _ => name.to_owned(),
    }
}

/// A run's periods (its length is the scene's: [`state_check::RunClock`]).
#[derive(Debug, Clone, Copy)]
pub struct Periods {
    /// Control period, s.
    pub control_s: f64,
    /// The period fresh states arrive at, s.
    pub state_s: f64,
}

/// What [`run_session`] gives: the run's record, and why it was cut if it was.
pub type SessionResult<O> = Result<(recorder::Run<O>, Option<Cut>), Box<dyn std::error::Error>>;

/// One controller against one plant process, in the mode of `args`: spawn the plant on
/// `scene_file`, drive the session, end it (the safe state if it was cut), and reap the plant.
/// A lost plant's reason in the returned cut says how the plant process ended.
pub fn run_session<C: session::LoopController, K: recorder::KindRecorder<C>>(
    args: &RunArgs,
    controller: C,
    recorder: K,
    name: &str,
    (plant_exe, scene_file): ((&Path, &[&str]), &Path),
    periods: Periods,
    stop: &StopFlag,
) -> SessionResult<K::Outcome> {
    // hil's own clock of the run, from the scene the plant is given: the plant's word on the
    // step, the time and the end is checked against it, never taken.
    let clock = state_check::RunClock::of_scene_file(scene_file)?;
    // Real time: the control thread is set up before the plant starts its wall clock.
    let prepared = match args.mode {
        Mode::Lockstep => None,
        Mode::Realtime => Some(realtime::prepare(
            &controller,
            realtime::Settings {
                control_period_s: periods.control_s,
                state_period_s: periods.state_s,
                priority: args.priority,
                cpu: args.cpu,
                watchdog_state_periods: args.watchdog_states,
            },
        )?),
    };
    let mut plant = PlantProcess::spawn(plant_exe, scene_file, args.mode, args.plant_cpu)?;
    let link = FrameLink::new(plant.link.take().ok_or("the plant has no link")?);
    let window = Duration::from_millis(args.watchdog_ms);
    let mut session = Session::new(
        controller,
        link,
        recorder::Recorder::new(recorder),
        (window, state_check::StateCheck::new(clock)),
        stop.clone(),
    );
    let end_s = clock.end_s();
    let label = next_run_label(name);
    let bar = progress_bar(args.quiet, &label, args.mode, end_s);
    let progress = |t: f64| {
        bar.set_position((t * 1000.0) as u64);
        bar.set_message(format!("{t:.2}"));
    };
    let mut faults = Faults::default();
    let started = std::time::Instant::now();
    let (cut, timing) = match prepared {
        None => (
            lockstep::drive(&mut session, &mut faults, progress),
            lockstep::timing(periods.state_s),
        ),
        Some(prepared) => realtime::drive(&mut session, prepared, &mut faults, progress)?,
    };
    bar.finish_and_clear();
    let reached_s = session.last_time_s();
    let (finished, status) = if cut.is_none() {
        // The run is whole: the plant has had its last state. Close the link so that it sees
        // end-of-file, give it the watchdog's window (at least a second) to exit, and report
        // how it ended without discarding anything.
        use std::os::fd::AsRawFd as _;
        // SAFETY: shutdown(2) on the link's own open descriptor; the socket stays owned (and is
        // closed) by the session.
        unsafe {
            libc::shutdown(session.link.transport().as_raw_fd(), libc::SHUT_RDWR);
        }
        let status = plant.finish(window.max(Duration::from_secs(1)))?;
        if !status.success() {
            let how = plant_status(&status);
            eprintln!("hil: WARNING: the plant ({name}) {how} after its last state");
            faults.plant_exit = Some(format!("the plant process {how} after its last state"));
        }
        (session.end(None, timing, faults), status)
    } else {
        // The safe state first (it needs the link); then a lost plant is given a moment to say
        // how it ended, and ended here.
        let finished = session.end(cut.as_ref(), timing, faults);
        let wait = match cut {
            Some(Cut::PlantLost { .. }) => Duration::from_millis(100),
            _ => Duration::ZERO,
        };
        (finished, plant.finish(wait)?)
    };
    let mut cut = cut;
    if let Some(Cut::PlantLost { reason }) = &mut cut {
        let how = plant_status(&status);
        reason.push_str(&format!(" (the plant process {how})"));
    }
    if !args.quiet && !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        // No progress bar in a log: one line per run instead.
        eprintln!(
            "hil: {label} ({}): {} at t = {:.2} of {end_s:.2} s, {:.1} s wall",
            args.mode.name(),
            cut.as_ref()
                .map_or_else(|| "complete".to_owned(), Cut::describe),
            reached_s.unwrap_or(0.0),
            started.elapsed().as_secs_f64()
        );
    }
    Ok((finished, cut))
}

/// How a plant process ended, for a lost plant's reason.
fn plant_status(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) if sig == libc::SIGKILL => {
            "was killed (SIGKILL; by hil if it was still running)".to_owned()
        }
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        _ => format!("ended: {status}"),
    }
}

pub(crate) fn progress_bar(
    quiet: bool,
    name: &str,
    mode: Mode,
    end_s: f64,
) -> indicatif::ProgressBar {
    if quiet {
        return indicatif::ProgressBar::hidden();
    }
    // indicatif draws only when stderr is a terminal: no carriage returns in a log file.
    let bar = indicatif::ProgressBar::new((end_s * 1000.0) as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{name:<14} {mode} {{bar:30}} t = {{msg}} / {end_s:.2} s"
        ))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_message("0.00");
    bar.with_finish(indicatif::ProgressFinish::AndClear)
}
