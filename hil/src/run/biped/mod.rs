//! `hil run scenarios/simbicon_walk.toml`: SIMBICON's planar biped walking for a while under
//! each of its controllers (`simbicon`: SIMBICON's fixed gains; `simbicon_analytic`: the gains
//! our stability analysis picks for the control period), one plant process each, in lockstep or
//! in real time, with optional pushes on the torso.
//!
//! The path of a walk run: [`WalkScenario`] reads and checks the file, the plant's own checks
//! run on the resolved scene (an in-process replica is built before anything starts); for each
//! controller ([`controller`]) a `sim-host` process runs the biped scene (`"kind": "biped"`)
//! through the same session and drivers as every other scenario ([`super::run_session`]); the
//! [`recorder`] judges the walk from the state frames (the plant's floating-base frames: every
//! body's world pose and velocity, the feet's ground forces) exactly as the in-process walk
//! does ([`sim_host::walk::WalkJudge`]); then `report.json`, `trajectory.csv`, `speed.svg`,
//! `latency.svg`, one animated side view per controller (`walk_<controller>.gif`) and
//! `scene.json` are written.
//!
//! The biped's description (masses, inertias, lengths, joint anchors) is the plant crate's
//! (`sim_host::biped`), read by both sides: the plant builds its Rapier bodies from it and the
//! controller's reading (whole-body COM, ankle positions) uses the same numbers.

pub mod controller;
pub mod recorder;

use std::path::Path;

use plotters::prelude::*;
use serde::{Deserialize, Serialize};
use sim_host::biped::{
    BODIES, BipedPlant, BipedScene, FOOT_LENGTH_M, LEFT_FOOT, LINK_THICKNESS_M, RIGHT_FOOT,
    SHIN_LENGTH_M, THIGH_LENGTH_M, TORSO, TORSO_LENGTH_M, TorsoPush,
};
use sim_host::walk::{FALL_TORSO_HEIGHT_M, jsimbicon_start};
use sim_host::{Mode, SceneError};

use super::plot::{COLOURS, PlotResult, latency_histogram, no_samples};
use super::recorder::Run;
use super::report::{Faults, ReportHeader};
use super::scenario::ScenarioError;
use super::session::{Cut, StopFlag};
use super::{Finished, Periods, RunArgs, plant, run_session, select};
use crate::anim::{Bone, BoneKind, ForceArrow, GifSettings, Pose, write_gif};
use controller::{WalkController, WalkLaw};
use recorder::{PoseSample, WalkCsv, WalkOutcome, WalkRecorder, WalkRun};

/// The `kind` of a walk scenario.
pub const KIND: &str = "simbicon_walk";

/// Most entries of a walk scenario's `controllers` (there are two controllers, each named once).
pub const MAX_CONTROLLERS: usize = 16;

/// The files every walk run writes (the animations come on top, one per controller run, and
/// the 3D replay).
pub const FILES: [&str; 5] = [
    "report.json",
    "trajectory.csv",
    "speed.svg",
    "latency.svg",
    "scene.json",
];

/// How the walker starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Start {
    /// JSimbicon's start: its pose and 0.98 m/s forward (the bodies not turning).
    Jsimbicon,
    /// Standing straight at rest.
    Stand,
}

/// A walk scenario file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WalkScenario {
    /// Always `"simbicon_walk"`.
    pub kind: String,
    /// Name (the default output folder is named after the scenario file: `out/<file stem>`).
    pub name: String,
    /// Control rate, Hz; the physics step is its period (one tick per plant step), in [50,
    /// 20000].
    pub control_rate_hz: f64,
    /// How long the walk lasts, s, in (0, 600].
    pub duration_s: f64,
    /// How it starts.
    #[serde(default = "default_start")]
    pub start: Start,
    /// The controllers, by name, in run order (`simbicon`, `simbicon_analytic`).
    pub controllers: Vec<String>,
    /// Whether each run writes its animated side view (`walk_<controller>.gif`), and the runs
    /// their 3D replay (`replay.html`).
    #[serde(default = "default_true")]
    pub animation: bool,
    /// Forces on the torso's centre of mass (x, y N), each for a while.
    #[serde(default)]
    pub pushes: Vec<TorsoPush>,
}

const fn default_start() -> Start {
    Start::Jsimbicon
}

const fn default_true() -> bool {
    true
}

impl WalkScenario {
    /// Read and check a scenario file (read by [`super::scenario::read_scenario_file`]: a
    /// regular file of at most 1 MiB).
    #[cfg(test)]
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let text = super::scenario::read_scenario_file(path)?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parse and check scenario text; `file` names it in errors.
    #[cfg(test)]
    pub fn parse(text: &str, file: &str) -> Result<Self, ScenarioError> {
        Self::from_document(super::scenario::Document::parse(text, file)?)
    }

    /// Check the scenario of a parsed file.
    pub fn from_document(doc: super::scenario::Document<'_>) -> Result<Self, ScenarioError> {
        let file = doc.file().to_owned();
        let error = |field: String, reason: String| ScenarioError {
            file: file.clone(),
            field,
            reason,
        };
        let scenario: Self = doc.into_kind()?;
        scenario
            .check()
            .map_err(|(field, reason)| error(field, reason))?;
        Ok(scenario)
    }

    fn check(&self) -> Result<(), (String, String)> {
        super::scenario::check_kind_and_name(&self.kind, KIND, &self.name)?;
        let r = self.control_rate_hz;
        if !(r.is_finite() && (50.0..=20_000.0).contains(&r)) {
            return Err((
                "control_rate_hz".into(),
                format!("{r}: must be within [50, 20000] Hz"),
            ));
        }
        let d = self.duration_s;
        if !(d.is_finite() && d > 0.0 && d <= 600.0) {
            return Err((
                "duration_s".into(),
                format!("{d}: must be within (0, 600] s"),
            ));
        }
        if self.controllers.is_empty() {
            return Err(("controllers".into(), "name at least one controller".into()));
        }
        for (field, len, max) in [
            ("controllers", self.controllers.len(), MAX_CONTROLLERS),
            ("pushes", self.pushes.len(), sim_host::biped::MAX_PUSHES),
        ] {
            if len > max {
                return Err((field.into(), super::scenario::too_many(len, max)));
            }
        }
        for (i, name) in self.controllers.iter().enumerate() {
            if WalkLaw::from_name(name).is_none() {
                return Err((
                    format!("controllers[{i}]"),
                    format!("unknown controller `{name}`: simbicon or simbicon_analytic"),
                ));
            }
            if self.controllers[..i].contains(name) {
                return Err((format!("controllers[{i}]"), format!("`{name}` named twice")));
            }
        }
        // The plant's own checks, on the scene it will get (pushes, timing), and its start pose.
        let scene = self.scene();
        if let Err((field, reason)) = scene.validate() {
            return Err((field, reason));
        }
        BipedPlant::new(&scene).map_err(|SceneError { field, reason, .. }| (field, reason))?;
        Ok(())
    }

    /// The control period, s (= the physics step).
    pub fn control_period_s(&self) -> f64 {
        1.0 / self.control_rate_hz
    }

    /// The controllers, in run order (checked names).
    pub fn laws(&self) -> Vec<WalkLaw> {
        self.controllers
            .iter()
            .filter_map(|n| WalkLaw::from_name(n))
            .collect()
    }

    /// The plant's scene.
    pub fn scene(&self) -> BipedScene {
        let mut scene = BipedScene::new(self.duration_s, [0.0, -9.81]);
        scene.dt_s = self.control_period_s();
        if self.start == Start::Jsimbicon {
            jsimbicon_start(&mut scene);
        }
        scene.pushes.clone_from(&self.pushes);
        scene
    }
}

/// `report.json` of a walk run.
#[derive(Debug, Clone, Serialize)]
pub struct WalkReport {
    /// Completeness, scenario, kind and mode.
    #[serde(flatten)]
    pub header: ReportHeader,
    /// Physics step, s.
    pub physics_dt_s: f64,
    /// The walk's length, s.
    pub duration_s: f64,
    /// How it started.
    pub start: Start,
    /// The pushes.
    pub pushes: Vec<TorsoPush>,
    /// Largest push impulse, N·s (|F|·duration, summed over pushes).
    pub push_impulse_ns: f64,
    /// The fall's torso height, m.
    pub fall_torso_height_m: f64,
    /// One entry per controller run.
    pub controllers: Vec<WalkOutcome>,
}

/// The steps (and their runs) of one walk controller against one plant process: what both
/// `hil run` and `hil study` use.
pub struct WalkSession<'a> {
    /// The run's arguments (mode, watchdog, CPUs, quiet).
    pub args: &'a RunArgs,
    /// The scene file the plant reads.
    pub scene_file: &'a Path,
    /// Control period, s.
    pub period_s: f64,
    /// Set by SIGINT/SIGTERM.
    pub stop: &'a StopFlag,
}

impl WalkSession<'_> {
    /// Run one controller with `gains` named `name`; rows into `csv`, poses kept when
    /// `keep_poses`.
    pub fn run(
        &self,
        name: &'static str,
        gains: control_core::simbicon::Gains,
        csv: Option<WalkCsv>,
        keep_poses: bool,
    ) -> Result<SessionRun, Box<dyn std::error::Error>> {
        let controller = WalkController::new(gains, self.period_s)
            .map_err(|e| format!("controller {name}: {e}"))?;
        let recorder = WalkRecorder::new(name, csv, keep_poses);
        let plant = plant::plant_executable()?;
        let (finished, cut) = run_session(
            self.args,
            controller.clone(),
            recorder,
            name,
            ((&plant.0, &plant.1), self.scene_file),
            Periods {
                control_s: self.period_s,
                state_s: self.period_s,
            },
            self.stop,
        )?;
        let (run, csv) = finished.split();
        Ok(SessionRun {
            run,
            csv,
            cut,
            controller,
        })
    }
}

/// What [`WalkSession::run`] gives back.
pub struct SessionRun {
    /// The run's record.
    pub run: Run<WalkRun>,
    /// The trajectory file, handed on to the next run.
    pub csv: Option<WalkCsv>,
    /// Why the run was cut, if it was.
    pub cut: Option<Cut>,
    /// The controller as built (its resolved gains).
    pub controller: WalkController,
}

/// Run every selected controller of `scenario`, writing into `staging`.
pub fn run_scenario(
    args: &RunArgs,
    scenario: &WalkScenario,
    file: &str,
    staging: &Path,
    stop: &StopFlag,
) -> Result<Finished, Box<dyn std::error::Error>> {
    let laws = select(&args.only, &scenario.laws(), WalkLaw::name)?;
    // Every controller is built before any plant starts.
    for &law in &laws {
        WalkController::new(
            law.gains(scenario.control_period_s()),
            scenario.control_period_s(),
        )
        .map_err(|e| format!("controller {}: {e}", law.name()))?;
    }
    let scene = scenario.scene();
    let scene_file = staging.join("scene.json");
    std::fs::write(&scene_file, serde_json::to_string_pretty(&scene)?)
        .map_err(|e| format!("cannot write {}: {e}", scene_file.display()))?;
    let session = WalkSession {
        args,
        scene_file: &scene_file,
        period_s: scenario.control_period_s(),
        stop,
    };
    let mut csv = Some(
        WalkCsv::create(&staging.join("trajectory.csv"))
            .map_err(|e| format!("cannot write trajectory.csv: {e}"))?,
    );
    let mut runs: Vec<(Run<WalkRun>, WalkOutcome)> = Vec::new();
    let mut cut: Option<(WalkLaw, Cut)> = None;
    let mut files: Vec<&'static str> = FILES.to_vec();
    super::plan_runs(laws.len());
    for law in laws {
        let SessionRun {
            mut run,
            csv: next_csv,
            cut: run_cut,
            controller,
        } = session.run(
            law.name(),
            law.gains(scenario.control_period_s()),
            csv.take(),
            scenario.animation,
        )?;
        csv = next_csv;
        if let Some(Cut::PlantLost { reason }) = &run_cut {
            run.faults.plant_lost_reason = Some(reason.clone());
        }
        if runs.is_empty() {
            for w in &run.timing.warnings {
                eprintln!("hil: WARNING: {w}");
            }
        }
        // A run that never got a biped's state (a plant that is not one) has nothing to draw.
        if scenario.animation && !run.kind.poses.is_empty() {
            let path = staging.join(law.gif_name());
            write_walk_gif(&path, &run.kind.poses, run.kind.summary.fell_at_s)
                .map_err(|e| format!("cannot write {}: {e}", law.gif_name()))?;
            files.push(law.gif_name());
        }
        let outcome = run.outcome(controller.gains());
        runs.push((run, outcome));
        if let Some(c) = run_cut {
            cut = Some((law, c));
            break;
        }
    }
    if let Some(csv) = csv {
        csv.finish()
            .map_err(|e| format!("cannot write trajectory.csv: {e}"))?;
    }
    let report = WalkReport {
        header: ReportHeader::new(
            cut.as_ref()
                .map(|(law, c)| (format!("the {} controller", law.name()), c)),
            &scenario.name,
            file,
            KIND,
            args.mode,
        )
        .with_runs(
            Some(scenario.control_rate_hz),
            runs.first()
                .map(|(r, _)| r.timing.clone())
                .unwrap_or_default(),
            Faults::sum(runs.iter().map(|(r, _)| &r.faults)),
        ),
        physics_dt_s: scenario.control_period_s(),
        duration_s: scenario.duration_s,
        start: scenario.start,
        pushes: scenario.pushes.clone(),
        push_impulse_ns: scenario
            .pushes
            .iter()
            .map(|p| p.force_n[0].hypot(p.force_n[1]) * p.duration_s)
            .sum(),
        fall_torso_height_m: FALL_TORSO_HEIGHT_M,
        controllers: runs.iter().map(|(_, o)| o.clone()).collect(),
    };
    let path = staging.join("report.json");
    std::fs::write(&path, serde_json::to_string_pretty(&report)? + "\n")
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let shown: Vec<(&WalkRun, String)> = runs
        .iter()
        .filter(|(r, _)| !r.kind.poses.is_empty())
        .map(|(r, o)| {
            let summary = match o.fell_at_s {
                Some(t) => format!(
                    "fell at {t:.2} s after {} steps, {:.2} m",
                    o.steps, o.distance_m
                ),
                None => format!(
                    "walked {:.1} s: {} steps, {:.2} m at {:.2} m/s",
                    o.time_walked_s, o.steps, o.distance_m, o.mean_speed_mps
                ),
            };
            (&r.kind, summary)
        })
        .collect();
    if !shown.is_empty() {
        let shown: Vec<_> = shown
            .iter()
            .map(|(r, summary)| crate::replay::biped::Shown {
                name: r.name,
                summary,
                samples: &r.poses,
            })
            .collect();
        crate::replay::biped::write(
            &staging.join("replay.html"),
            &report.header,
            &scenario.scene(),
            &shown,
        )?;
        files.push("replay.html");
    }
    let title = format!(
        "{}: COM forward speed, {} Hz, {}",
        scenario.name,
        scenario.control_rate_hz,
        args.mode.name()
    );
    speed_plot(&staging.join("speed.svg"), &title, &runs)?;
    let latency_title = match args.mode {
        Mode::Realtime => "control-thread wake-up latency",
        Mode::Lockstep => "round trip (torque sent → next state received)",
    };
    latency_histogram(
        &staging.join("latency.svg"),
        latency_title,
        &runs
            .iter()
            .map(|(r, _)| (r.kind.name, &r.latency))
            .collect::<Vec<_>>(),
    )?;
    Ok(Finished {
        summary: summary_table(&report),
        incomplete_reason: report.header.incomplete_reason.clone(),
        files,
    })
}

/// The console's table.
pub fn summary_table(report: &WalkReport) -> String {
    let mut out = format!(
        "{} ({} Hz, {} s, {}):\n| controller | fell | fell at s | distance m | mean speed m/s | steps | limited | tick µs (median) | plant step µs (median) | × real time |\n|---|---|---|---|---|---|---|---|---|---|\n",
        report.header.scenario,
        report.header.control_rate_hz.unwrap_or_default(),
        report.duration_s,
        report.header.mode
    );
    for c in &report.controllers {
        out.push_str(&format!(
            "| {} | {} | {} | {:.2} | {:.3} | {} | {} | {} | {} | {:.1} |\n",
            c.name,
            if c.fell { "yes" } else { "no" },
            c.fell_at_s.map_or("-".into(), |t| format!("{t:.3}")),
            c.distance_m,
            c.mean_speed_mps,
            c.steps,
            c.limited_torques,
            c.tick_us.map_or("-".into(), |p| format!("{:.2}", p.p50)),
            c.plant_step_us
                .map_or("-".into(), |p| format!("{:.1}", p.p50)),
            c.times_real_time
        ));
    }
    out
}

/// `speed.svg`: the COM's forward speed against time per controller, up to a cross at its fall.
fn speed_plot(path: &Path, title: &str, runs: &[(Run<WalkRun>, WalkOutcome)]) -> PlotResult {
    let t_max = runs
        .iter()
        .filter_map(|(r, _)| r.kind.speed.last().map(|p| p.0))
        .fold(0.0, f64::max);
    if runs.iter().all(|(r, _)| r.kind.speed.is_empty()) || t_max <= 0.0 {
        return no_samples(path, (1000, 420), title, "the plant sent no state");
    }
    let finite = |v: f64| if v.is_finite() { v } else { 0.0 };
    let (lo, hi) = runs
        .iter()
        .flat_map(|(r, o)| {
            let until = o.fell_at_s.unwrap_or(f64::INFINITY);
            r.kind
                .speed
                .iter()
                .filter(move |p| p.0 <= until)
                .map(|p| finite(p.1))
        })
        .fold((0.0f64, 0.5f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let root = SVGBackend::new(path, (1000, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..t_max, (lo - 0.1)..(hi + 0.1))?;
    chart
        .configure_mesh()
        .x_desc("t (s)")
        .y_desc("COM x velocity (m/s)")
        .draw()?;
    for ((run, outcome), colour) in runs.iter().zip(COLOURS.iter().cycle()) {
        let colour = *colour;
        let label = match outcome.fell_at_s {
            Some(t) => format!("{} (fell at {t:.2} s)", run.kind.name),
            None => format!(
                "{} ({:.2} m/s mean, {} steps)",
                run.kind.name, outcome.mean_speed_mps, outcome.steps
            ),
        };
        // A fallen walker's flailing on the ground is not drawn: the line ends at the fall.
        let until = outcome.fell_at_s.unwrap_or(f64::INFINITY);
        chart
            .draw_series(LineSeries::new(
                run.kind
                    .speed
                    .iter()
                    .filter(|p| p.0 <= until)
                    .map(|&(t, v)| (t, finite(v))),
                colour.stroke_width(2),
            ))?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        if let Some(t) = outcome.fell_at_s {
            let v = run
                .kind
                .speed
                .iter()
                .min_by(|a, b| (a.0 - t).abs().total_cmp(&(b.0 - t).abs()))
                .map_or(0.0, |p| finite(p.1));
            chart.draw_series([Cross::new((t, v), 8, colour.stroke_width(3))])?;
        }
    }
    crate::run::plot::legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    root.present()?;
    Ok(())
}

/// The bones of one pose: each body's box along its long axis, the feet's forces at the soles.
fn pose_of(p: &PoseSample) -> Pose {
    let along = |b: usize| -> ([f64; 2], f64) {
        // Half-length vector in the body frame, and the drawn width.
        match b {
            TORSO => ([0.0, TORSO_LENGTH_M / 2.0], 0.10),
            1 | 4 => ([0.0, THIGH_LENGTH_M / 2.0], 0.06),
            2 | 5 => ([0.0, SHIN_LENGTH_M / 2.0], 0.05),
            _ => ([FOOT_LENGTH_M / 2.0, 0.0], LINK_THICKNESS_M),
        }
    };
    let rot = |pitch: f64, v: [f64; 2]| {
        let (s, c) = pitch.sin_cos();
        [c * v[0] - s * v[1], s * v[0] + c * v[1]]
    };
    let bones = (0..BODIES)
        .map(|b| {
            let (com, pitch) = p.bodies[b];
            let (half, width_m) = along(b);
            let h = rot(pitch, half);
            Bone {
                from_m: [com[0] + h[0], com[1] + h[1]],
                to_m: [com[0] - h[0], com[1] - h[1]],
                width_m,
                kind: match b {
                    TORSO => BoneKind::Torso,
                    1..=3 => BoneKind::Left,
                    _ => BoneKind::Right,
                },
            }
        })
        .collect();
    let forces = [LEFT_FOOT, RIGHT_FOOT]
        .into_iter()
        .zip(p.foot_force_n)
        .filter(|(_, f)| f[1] > 0.0)
        .map(|(foot, force_n)| {
            let (com, pitch) = p.bodies[foot];
            let sole = rot(pitch, [0.0, -LINK_THICKNESS_M / 2.0]);
            ForceArrow {
                at_m: [com[0] + sole[0], com[1] + sole[1]],
                force_n,
            }
        })
        .collect();
    Pose {
        time_s: p.time_s,
        bones,
        com_m: p.com_m,
        forces,
    }
}

/// `walk_<controller>.gif`: the run's side view at 20 frames per second, a red border from the
/// fall on.
pub fn write_walk_gif(
    path: &Path,
    poses: &[PoseSample],
    fell_at_s: Option<f64>,
) -> Result<(), Box<dyn std::error::Error>> {
    let poses: Vec<Pose> = poses.iter().map(pose_of).collect();
    let settings = GifSettings {
        marker: fell_at_s,
        ..GifSettings::default()
    };
    write_gif(path, &poses, &settings)?;
    Ok(())
}

/// In lockstep the controller ticks once per plant step, which the scenario's rate sets: any
/// rate works in either mode.
pub const fn check_mode(_scenario: &WalkScenario, _mode: Mode) -> Result<(), ScenarioError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: &str = r#"
kind = "simbicon_walk"
name = "w"
control_rate_hz = 300
duration_s = 2
controllers = ["simbicon_analytic"]
"#;

    fn err(text: &str) -> ScenarioError {
        WalkScenario::parse(text, "w.toml").unwrap_err()
    }

    #[test]
    fn a_minimal_file_gets_the_defaults() {
        let s = WalkScenario::parse(MIN, "w.toml").unwrap();
        assert_eq!(s.start, Start::Jsimbicon);
        assert!(s.animation);
        assert!(s.pushes.is_empty());
        let scene = s.scene();
        assert!((scene.dt_s - 1.0 / 300.0).abs() < 1e-15);
        assert_eq!(scene.initial_forward_velocity_m_s, 0.98);
    }

    #[test]
    fn bad_fields_are_named() {
        assert_eq!(err(&MIN.replace("300", "20")).field, "control_rate_hz");
        assert_eq!(
            err(&MIN.replace("duration_s = 2", "duration_s = -1")).field,
            "duration_s"
        );
        assert_eq!(
            err(&MIN.replace("\"simbicon_analytic\"", "\"pd\"")).field,
            "controllers[0]"
        );
        assert_eq!(
            err(&MIN.replace("\"simbicon_analytic\"", "\"simbicon\", \"simbicon\"")).field,
            "controllers[1]"
        );
        assert_eq!(err(&format!("{MIN}colour = 1\n")).field, "colour");
        let pushed =
            format!("{MIN}[[pushes]]\nforce_n = [1e9, 0]\nstart_s = 1\nduration_s = 0.2\n");
        assert_eq!(err(&pushed).field, "pushes[0].force_n[0]");
        assert_eq!(err(&MIN.replace("\"w\"", "\"a/b\"")).field, "name");
        assert_eq!(err("kind = 3").field, "kind");
    }

    #[test]
    fn a_pose_draws_seven_bones_and_the_loaded_feet() {
        let mut p = PoseSample {
            time_s: 0.0,
            bodies: [([0.0, 1.0], 0.0); BODIES],
            com_m: [0.0, 1.0],
            foot_force_n: [[0.0, 400.0], [0.0, 0.0]],
            torques_nm: [0.0; sim_host::biped::JOINTS],
        };
        p.bodies[TORSO] = ([0.0, 1.18], 0.0);
        let pose = pose_of(&p);
        assert_eq!(pose.bones.len(), BODIES);
        assert_eq!(pose.forces.len(), 1);
        let torso = &pose.bones[TORSO];
        assert!((torso.from_m[1] - (1.18 + 0.24)).abs() < 1e-12);
        assert!((torso.to_m[1] - (1.18 - 0.24)).abs() < 1e-12);
    }
}
