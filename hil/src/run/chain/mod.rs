//! `hil run scenarios/on_the_beat.toml` (and `kenwright_reach.toml`, `pose_tour.toml`): a robot
//! from its URDF driven through keyframes on a beat, or its hand held on targets, by each of the
//! scenario's controllers, one plant process each, in lockstep or in real time.
//!
//! The path of a run: [`scenario`] reads and checks the file (the plant's own checks on the
//! resolved scene, and an in-process replica of the plant); the URDF is read once by
//! `robot_model::load`, and the plant's scene, the replica and the controller's tree
//! ([`control_core::tree::Tree`]) are all built from that model; for each controller
//! ([`controller`]) a plant process runs the scene through the same session and drivers as the
//! ball-blocking arm ([`super::run_session`]); the [`recorder`] reads the arrival error of every
//! joint at every keyframe; then `report.json`, `trajectory.csv`, the plots ([`plot`]),
//! `scene.json` and the 3D replay `replay.html` ([`crate::replay`]) are written. After the runs,
//! the controller model's composite inertia is compared with Rapier's mass-matrix diagonal along
//! the `arrival` run's recorded motion, on the replica
//! ([`sim_host::robot::RobotPlant::mass_matrix`]).

pub mod controller;
pub mod plot;
pub mod recorder;
pub mod scenario;
pub mod tour;

use std::path::Path;

use control_core::articulated::JointLosses;
use control_core::articulated::nalgebra::Vector3;
use serde::Serialize;
use sim_host::{Mode, Push, Wall};

pub use scenario::ChainScenario;

use super::recorder::Run;
use super::report::{Faults, ReportHeader};
use super::scenario::ScenarioError;
use super::session::{Cut, StopFlag};
use super::{Finished, Periods, RunArgs, plant, run_session, select};
use controller::{CAP, ChainController, ChainLaw, ChainModel, HandPoint};
use recorder::{ChainCsv, ChainOutcome, ChainRecorder, ChainRun, ReachJudge};
use scenario::ChainTask;

/// The files an `on_the_beat` run writes, in the order the console lists them.
pub const BEAT_FILES: [&str; 8] = [
    "report.json",
    "trajectory.csv",
    "angles.svg",
    "arrival.svg",
    "inertia.svg",
    "latency.svg",
    "scene.json",
    "replay.html",
];

/// The files a `kenwright_reach` run writes, in the order the console lists them.
pub const REACH_FILES: [&str; 8] = [
    "report.json",
    "trajectory.csv",
    "angles.svg",
    "hand.svg",
    "inertia.svg",
    "latency.svg",
    "scene.json",
    "replay.html",
];

/// In lockstep the controller ticks once per plant step.
pub fn check_mode(scenario: &ChainScenario, file: &Path, mode: Mode) -> Result<(), ScenarioError> {
    let dt = scenario.physics_dt_s;
    if mode == Mode::Lockstep && (scenario.control_period_s() - dt).abs() > 1e-9 * dt {
        return Err(ScenarioError {
            file: file.display().to_string(),
            field: "control_rate_hz".into(),
            reason: format!(
                "in lockstep the controller ticks once per plant step, so the control rate must be 1/physics_dt_s = {} Hz (got {} Hz); use --mode realtime for other rates",
                1.0 / dt,
                scenario.control_rate_hz
            ),
        });
    }
    Ok(())
}

/// The model's composite inertia against Rapier's mass-matrix diagonal along a recorded motion.
#[derive(Debug, Clone, Serialize)]
pub struct InertiaCheck {
    /// The run whose motion was replayed.
    pub controller: &'static str,
    /// Configurations compared.
    pub samples: usize,
    /// Largest |m_i − M_ii| over samples and joints, kg·m².
    pub max_abs_diff_kgm2: f64,
    /// Largest |m_i − M_ii| / M_ii.
    pub max_rel_diff: f64,
    /// Per joint, the largest |m_i − M_ii| / M_ii.
    pub max_rel_diff_per_joint: Vec<f64>,
    /// (t, ours, Rapier's) per sample, for the plot (not in the JSON).
    #[serde(skip)]
    pub series: Vec<(f64, Vec<f64>, Vec<f64>)>,
}

/// One keyframe as reported.
#[derive(Debug, Clone, Serialize)]
pub struct KeyframeOut {
    /// Instant, s.
    pub time_s: f64,
    /// Poses, rad.
    pub positions_rad: Vec<f64>,
}

/// `report.json` of a chain run.
#[derive(Debug, Clone, Serialize)]
pub struct ChainReport {
    /// Completeness, scenario, kind and mode.
    #[serde(flatten)]
    pub header: ReportHeader,
    /// Physics step, s.
    pub physics_dt_s: f64,
    /// The URDF both sides were built from.
    pub urdf: String,
    /// What the robot's loading or plant accepted only because the scenario asked it to (mimic
    /// joints as independent joints, meshes left out): one line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// `pose_tour`: keyframes the torque limits make unreachable (a joint's gravity holding
    /// torque at the keyframe's pose beyond its effort limit), each with the joint.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreachable_keyframes: Vec<Unreachable>,
    /// Joint names, URDF order.
    pub joints: Vec<String>,
    /// Effort limits, N·m.
    pub effort_limits_nm: Vec<f64>,
    /// The keyframes (`on_the_beat`).
    pub keyframes: Vec<KeyframeOut>,
    /// The hand targets (`kenwright_reach`): (from instant s, world position m).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hand_targets: Vec<(f64, [f64; 3])>,
    /// The pushes.
    pub pushes: Vec<Push>,
    /// The walls.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub walls: Vec<Wall>,
    /// One entry per controller run.
    pub controllers: Vec<ChainOutcome>,
    /// Composite inertia against Rapier's M_ii along the `arrival` run (or the first run).
    pub inertia_check: Option<InertiaCheck>,
}

/// A keyframe the torque limits make unreachable.
#[derive(Debug, Clone, Serialize)]
pub struct Unreachable {
    /// Keyframe index.
    pub keyframe: usize,
    /// Its instant, s.
    pub time_s: f64,
    /// The joint.
    pub joint: String,
    /// The joint's gravity holding torque at the keyframe's pose, N·m (N for a prismatic joint).
    pub holding_nm: f64,
    /// Its effort limit.
    pub effort_nm: f64,
}

/// The in-process replica of the plant, posed along a recorded motion for the inertia check:
/// the robot plant and the pose its base is welded at.
pub(crate) struct Replica(
    Box<sim_host::robot::RobotPlant>,
    control_core::tree::Placement,
);

impl Replica {
    /// Rapier's joint-space mass matrix at joint positions `q`, rows of f64.
    fn mass_matrix_at(&mut self, q: &[f64]) -> Option<Vec<Vec<f64>>> {
        self.0.set_configuration(&self.1, q).ok()?;
        Some(self.0.mass_matrix())
    }
}

/// What a run is built from: the plant's scene, the URDF, the robot model, the replica, the
/// controller's model, the joints and their effort limits, notes and the unreachable keyframes.
pub(crate) struct Setup {
    pub(crate) scene_json: String,
    pub(crate) urdf: std::path::PathBuf,
    pub(crate) robot: robot_model::RobotModel,
    pub(crate) replica: Replica,
    pub(crate) model: ChainModel,
    pub(crate) plant_joints: Vec<String>,
    pub(crate) effort: Vec<f64>,
    pub(crate) notes: Vec<String>,
    pub(crate) unreachable: Vec<Unreachable>,
}

/// The replica, the controller's model and the joints of `scenario`, as a run builds them:
/// one robot model, read once, for the plant's scene, the replica and the controller's tree.
pub(crate) fn setup(scenario: &ChainScenario) -> Result<Setup, Box<dyn std::error::Error>> {
    let robot = scenario.robot_model().map_err(|(_, reason)| reason)?;
    let scene = scenario.robot_scene(&robot);
    let replica =
        sim_host::robot::RobotPlant::from_model(&scene, &robot).map_err(|e| e.to_string())?;
    let tree = robot.tree::<CAP>()?;
    let plant_joints: Vec<String> = replica
        .joint_names()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let base_placement = scene.base_pose();
    let base = isometry(&base_placement);
    let effort = replica.torque_limits();
    let mut losses = [JointLosses::default(); CAP];
    for (l, j) in losses.iter_mut().zip(&robot.joints) {
        *l = JointLosses {
            damping: j.damping,
            friction: j.friction,
        };
    }
    let g = scenario.gravity_m_s2();
    let gravity = Vector3::new(g[0], g[1], g[2]);
    let mut unreachable = Vec::new();
    for (i, k) in scenario.keyframes.iter().enumerate() {
        let mut q = [0.0; CAP];
        for (a, &b) in q.iter_mut().zip(&k.positions_rad) {
            *a = b;
        }
        let holding = tree
            .kinematics(&base, &q)
            .and_then(|kin| kin.gravity(&gravity))
            .map_err(|e| format!("keyframe {i}: the model cannot be evaluated: {e}"))?;
        for (j, name) in plant_joints.iter().enumerate() {
            let (Some(&h), Some(&e)) = (holding.get(j), effort.get(j)) else {
                continue;
            };
            if h.abs() > e {
                unreachable.push(Unreachable {
                    keyframe: i,
                    time_s: k.time_s,
                    joint: name.clone(),
                    holding_nm: h,
                    effort_nm: e,
                });
            }
        }
    }
    Ok(Setup {
        scene_json: serde_json::to_string_pretty(&scene)?,
        urdf: scene.urdf.clone(),
        notes: replica.notes().to_vec(),
        replica: Replica(Box::new(replica), base_placement),
        model: ChainModel {
            tree: Box::new(tree),
            base,
            losses,
        },
        robot,
        plant_joints,
        effort,
        unreachable,
    })
}

/// A placement as an isometry.
pub fn isometry(
    p: &control_core::tree::Placement,
) -> control_core::articulated::nalgebra::Isometry3<f64> {
    use control_core::articulated::nalgebra::{
        Isometry3, Matrix3, Rotation3, Translation3, UnitQuaternion,
    };
    let r = p.rotation;
    let m = Matrix3::new(
        r[0][0], r[0][1], r[0][2], r[1][0], r[1][1], r[1][2], r[2][0], r[2][1], r[2][2],
    );
    let rotation = UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(m));
    let [x, y, z] = p.xyz_m;
    Isometry3::from_parts(Translation3::new(x, y, z), rotation)
}

/// Run every selected controller on `scenario`, writing into `staging`.
pub fn run_scenario(
    args: &RunArgs,
    scenario: &ChainScenario,
    file: &str,
    staging: &Path,
    stop: &StopFlag,
) -> Result<Finished, Box<dyn std::error::Error>> {
    let laws = select(&args.only, ChainLaw::of(scenario.kind), ChainLaw::name)?;
    let Setup {
        scene_json,
        urdf,
        robot,
        mut replica,
        model,
        plant_joints,
        effort,
        notes,
        unreachable,
    } = setup(scenario)?;
    let (hand, judge) = match &scenario.hand {
        Some(spec) => {
            let hand = HandPoint::of(&robot, &spec.link, spec.point_m)
                .ok_or_else(|| format!("hand.link `{}` is not a moving link", spec.link))?;
            let judge = ReachJudge {
                targets: scenario
                    .hand_targets
                    .iter()
                    .map(|t| (t.time_s, t.press))
                    .collect(),
                settle_s: spec.settle_s,
                hand_body: u16::try_from(hand.body)?,
                model: (model.clone(), hand),
            };
            (Some(hand), Some(judge))
        }
        None => (None, None),
    };
    let scene_file = staging.join("scene.json");
    std::fs::write(&scene_file, scene_json)
        .map_err(|e| format!("cannot write {}: {e}", scene_file.display()))?;
    let plant = plant::plant_executable()?;
    let state_period = scenario.control_period_s().max(scenario.physics_dt_s);
    let keyframes: Vec<(f64, Vec<f64>)> = scenario
        .keyframes
        .iter()
        .map(|k| (k.time_s, k.positions_rad.clone()))
        .collect();
    let mut csv = Some(
        ChainCsv::create(
            &staging.join("trajectory.csv"),
            plant_joints.len(),
            scenario.kind == ChainTask::KenwrightReach,
        )
        .map_err(|e| format!("cannot write trajectory.csv: {e}"))?,
    );
    let mut runs: Vec<Run<ChainRun>> = Vec::new();
    let mut cut: Option<(ChainLaw, Cut)> = None;
    let mut printed_warnings = false;
    super::plan_runs(laws.len());
    for law in laws {
        let controller =
            ChainController::new(law, scenario, model.clone(), &effort, state_period, hand)
                .map_err(|e| format!("controller {}: {e}", law.name()))?;
        let mut recorder = ChainRecorder::new(
            law.name(),
            plant_joints.len(),
            keyframes.clone(),
            csv.take(),
        );
        if let Some(judge) = &judge {
            recorder = recorder.reach(judge.clone());
        }
        let (finished, run_cut) = run_session(
            args,
            controller,
            recorder,
            law.name(),
            ((&plant.0, &plant.1), &scene_file),
            Periods {
                control_s: scenario.control_period_s(),
                state_s: state_period,
            },
            stop,
        )?;
        let (mut run, next_csv) = finished.split();
        csv = next_csv;
        if let Some(Cut::PlantLost { reason }) = &run_cut {
            run.faults.plant_lost_reason = Some(reason.clone());
        }
        if !printed_warnings {
            for w in &run.timing.warnings {
                eprintln!("hil: WARNING: {w}");
                printed_warnings = true;
            }
        }
        runs.push(run);
        if let Some(c) = run_cut {
            cut = Some((law, c));
            break;
        }
    }
    if let Some(csv) = csv {
        csv.finish()
            .map_err(|e| format!("cannot write trajectory.csv: {e}"))?;
    }
    let inertia_check = inertia_check(&runs, &model, &mut replica, plant_joints.len());
    let joints = plant_joints.len();
    let report = ChainReport {
        header: ReportHeader::new(
            cut.as_ref()
                .map(|(law, c)| (format!("the {} controller", law.name()), c)),
            &scenario.name,
            file,
            scenario.kind.name(),
            args.mode,
        )
        .with_runs(
            Some(scenario.control_rate_hz),
            runs.first().map(|r| r.timing.clone()).unwrap_or_default(),
            Faults::sum(runs.iter().map(|r| &r.faults)),
        ),
        physics_dt_s: scenario.physics_dt_s,
        urdf: urdf.display().to_string(),
        notes,
        unreachable_keyframes: unreachable,
        joints: plant_joints,
        effort_limits_nm: effort,
        keyframes: scenario
            .keyframes
            .iter()
            .map(|k| KeyframeOut {
                time_s: k.time_s,
                positions_rad: k.positions_rad.clone(),
            })
            .collect(),
        hand_targets: scenario
            .hand_targets
            .iter()
            .map(|t| (t.time_s, t.position_m))
            .collect(),
        pushes: scenario.pushes.clone(),
        walls: scenario.walls.clone(),
        controllers: runs.iter().map(|r| r.outcome(joints)).collect(),
        inertia_check,
    };
    let path = staging.join("report.json");
    std::fs::write(&path, serde_json::to_string_pretty(&report)? + "\n")
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    plot::write_all(staging, scenario, &report, &runs)?;
    crate::replay::chain::write(
        &staging.join("replay.html"),
        scenario,
        &robot,
        &model,
        hand,
        &report,
        &runs,
    )?;
    Ok(Finished {
        summary: summary_table(&report),
        incomplete_reason: report.header.incomplete_reason.clone(),
        files: match scenario.kind {
            ChainTask::OnTheBeat | ChainTask::PoseTour => BEAT_FILES.to_vec(),
            ChainTask::KenwrightReach => REACH_FILES.to_vec(),
        },
    })
}

/// Most configurations replayed for the inertia check.
const INERTIA_SAMPLES: usize = 400;

/// Replay the `arrival` run's (or the first run's) recorded motion on the replica and compare
/// the model's composite inertia with Rapier's M_ii there.
fn inertia_check(
    runs: &[Run<ChainRun>],
    model: &ChainModel,
    replica: &mut Replica,
    joints: usize,
) -> Option<InertiaCheck> {
    let run = runs
        .iter()
        .find(|r| r.kind.name == ChainLaw::Arrival.name())
        .or_else(|| runs.first())
        .map(|r| &r.kind)?;
    let stride = run.trajectory.len().div_ceil(INERTIA_SAMPLES).max(1);
    let mut check = InertiaCheck {
        controller: run.name,
        samples: 0,
        max_abs_diff_kgm2: 0.0,
        max_rel_diff: 0.0,
        max_rel_diff_per_joint: vec![0.0; joints],
        series: Vec::new(),
    };
    for (t, q) in run.trajectory.iter().step_by(stride) {
        let Some(ours) = model.axis_inertia(q) else {
            continue;
        };
        let Some(q) = q.get(..joints) else { continue };
        let Some(m) = replica.mass_matrix_at(q) else {
            continue;
        };
        let ours: Vec<f64> = ours.iter().take(joints).copied().collect();
        let theirs: Vec<f64> = (0..joints)
            .map(|i| m.get(i).and_then(|r| r.get(i)).copied().unwrap_or(f64::NAN))
            .collect();
        for ((a, b), joint) in ours
            .iter()
            .zip(&theirs)
            .zip(&mut check.max_rel_diff_per_joint)
        {
            let d = (a - b).abs();
            check.max_abs_diff_kgm2 = check.max_abs_diff_kgm2.max(d);
            check.max_rel_diff = check.max_rel_diff.max(d / b.abs());
            *joint = joint.max(d / b.abs());
        }
        check.samples += 1;
        check.series.push((*t, ours, theirs));
    }
    (check.samples > 0).then_some(check)
}

fn or_na(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_owned(), |e| format!("{e:.2e}"))
}

/// The console's table.
pub fn summary_table(report: &ChainReport) -> String {
    let mut s = format!(
        "scenario {} ({}), {} mode, control {} Hz, physics dt {} s, {}, joints {}{}\n",
        report.header.scenario,
        report.header.scenario_file,
        report.header.mode,
        report.header.control_rate_hz.unwrap_or_default(),
        report.physics_dt_s,
        if report.hand_targets.is_empty() {
            format!("{} keyframes", report.keyframes.len())
        } else {
            format!("{} hand targets", report.hand_targets.len())
        },
        report.joints.join(", "),
        if report.header.complete {
            ""
        } else {
            " — INCOMPLETE"
        }
    );
    if report.header.kind == ChainTask::KenwrightReach.name() {
        s.push_str(&format!(
            "{:<22} {:>16} {:>18} {:>14}  {}\n",
            "controller",
            "max hand err (m)",
            "max posture (rad)",
            "torque-limited",
            "wall force on the hand, pressing (N)"
        ));
        for c in &report.controllers {
            let wall = c.wall_force_n.map_or_else(
                || "no contact".to_owned(),
                |f| {
                    let [x, y, z] = f.mean_vector_n;
                    format!(
                        "|F| {:.1} [{:.1}, {:.1}], mean F ({x:.1}, {y:.1}, {z:.1})",
                        f.mean, f.min, f.max
                    )
                },
            );
            s.push_str(&format!(
                "{:<22} {:>16} {:>18} {:>14}  {}\n",
                c.name,
                or_na(c.max_hand_error_m),
                or_na(c.max_posture_error_rad),
                c.torque_limited_joint_ticks,
                wall
            ));
        }
    } else {
        s.push_str(&format!(
            "{:<22} {:>10} {:>12} {:>14}  {}\n",
            "controller", "max (rad)", "≤ 1e-2 rad", "torque-limited", "max per joint (rad)"
        ));
        for c in &report.controllers {
            let per_joint: Vec<String> = c
                .max_arrival_error_per_joint_rad
                .iter()
                .map(|e| or_na(*e))
                .collect();
            s.push_str(&format!(
                "{:<22} {:>10} {:>12} {:>14}  {}\n",
                c.name,
                or_na(c.max_arrival_error_rad),
                format!(
                    "{}/{}",
                    c.keyframes_within_1e_2_rad.unwrap_or(0),
                    report.keyframes.len()
                ),
                c.torque_limited_joint_ticks,
                per_joint.join(" ")
            ));
        }
    }
    if !report.unreachable_keyframes.is_empty() {
        let mut keyframes: Vec<usize> = report
            .unreachable_keyframes
            .iter()
            .map(|u| u.keyframe)
            .collect();
        keyframes.dedup();
        s.push_str(&format!(
            "UNREACHABLE: {} keyframe(s) need more than a joint's effort limit to hold against gravity ({}); see report.json unreachable_keyframes\n",
            keyframes.len(),
            report
                .unreachable_keyframes
                .iter()
                .map(|u| format!("#{} {} {:.1}/{:.1}", u.keyframe, u.joint, u.holding_nm.abs(), u.effort_nm))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for note in &report.notes {
        s.push_str(&format!("note: {note}\n"));
    }
    if let Some(i) = &report.inertia_check {
        s.push_str(&format!(
            "composite inertia vs Rapier's M_ii along the {} run: {} configurations, max |diff| {:.2e} kg·m² ({:.2e} relative)\n",
            i.controller, i.samples, i.max_abs_diff_kgm2, i.max_rel_diff
        ));
    }
    s
}
