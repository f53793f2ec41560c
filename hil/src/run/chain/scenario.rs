//! Joint-space scenario files: a robot from its URDF, keyframes on a beat (written, or drawn for
//! a pose tour), a hand's targets, pushes, walls, and the controllers' settings
//! (`scenarios/on_the_beat.toml`, `kenwright_reach.toml`, `pose_tour.toml`). What `hil run`
//! reads when a scenario's `kind` is `on_the_beat`, `kenwright_reach` or `pose_tour`, how it is
//! checked, and how it resolves into the robot plant's [`sim_host::robot::RobotScene`].
//!
//! One description for both sides: the scenario names a URDF file (relative to the scenario
//! file), which `robot_model::load` reads once ([`ChainScenario::robot_model`]); the plant
//! builds its Rapier robot from that model and `hil` its controller's tree. The resolved scene
//! is checked by the plant's own [`sim_host::robot::RobotScene::validate`] and by building an
//! in-process replica of the plant, before any process starts; the plant's field paths are
//! mapped back to the user's. Every error names the file, the field and the reason.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use sim_host::{Push, Wall};

use super::controller::CAP;

use super::super::scenario::{
    MAX_CONTROL_RATE_HZ, MAX_END_S, MAX_TOLERANCE_RAD, MIN_CONTROL_RATE_HZ, ScenarioError, too_many,
};

/// Most keyframes a chain scenario may have (and most hand targets).
pub const MAX_KEYFRAMES: usize = 10_000;

/// Which demonstration a chain scenario is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChainTask {
    /// "On the Beat!": keyframed joint poses at given instants.
    OnTheBeat,
    /// Kenwright's reach: the hand held on moving targets by Jᵀ F, a posture goal in the null
    /// space.
    KenwrightReach,
    /// Any robot through seeded random keyframes inside its joint limits, one per beat (the
    /// robot plant and the tree model: fixed base, any URDF tree).
    PoseTour,
}

impl ChainTask {
    /// The name in scenario files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::OnTheBeat => "on_the_beat",
            Self::KenwrightReach => "kenwright_reach",
            Self::PoseTour => "pose_tour",
        }
    }
}

/// The robot of a chain scenario replaced from the command line.
#[derive(Debug, Clone, Default)]
pub struct RobotOverride {
    /// `--urdf`: the robot's description.
    pub urdf: Option<PathBuf>,
    /// `--up-axis`: the description's up axis (`pose_tour`).
    pub up_axis: Option<UpAxis>,
}

/// A chain scenario file, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainScenario {
    /// Which demonstration (`"on_the_beat"` or `"kenwright_reach"`).
    pub kind: ChainTask,
    /// Name (the default output folder is named after the scenario file: `out/<file stem>/`).
    pub name: String,
    /// Control rate, Hz.
    pub control_rate_hz: f64,
    /// Physics step, s.
    pub physics_dt_s: f64,
    /// Simulated end time, s.
    pub end_s: f64,
    /// The chain: its URDF and start state.
    pub model: ModelSpec,
    /// External forces on links.
    #[serde(default)]
    pub pushes: Vec<Push>,
    /// Static boxes in the world (the plant reports their contact forces).
    #[serde(default)]
    pub walls: Vec<Wall>,
    /// `on_the_beat`: joint poses and the instants they must be reached at, in time order.
    #[serde(default)]
    pub keyframes: Vec<Keyframe>,
    /// `kenwright_reach`: the hand point.
    pub hand: Option<HandSpec>,
    /// `kenwright_reach`: where the hand must be from each instant on, in time order.
    #[serde(default)]
    pub hand_targets: Vec<HandTarget>,
    /// `kenwright_reach`: the posture goal.
    pub posture: Option<PostureSpec>,
    /// `pose_tour`: how the keyframes are drawn (they are generated, not written).
    pub tour: Option<super::tour::TourSpec>,
    /// Controller settings.
    pub controllers: ChainControllerSpec,
}

/// The chain's (or the robot's) description and start.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// The URDF file, relative to the scenario file (or absolute).
    pub urdf: PathBuf,
    /// Gravity, world vector, m/s² (`on_the_beat`, `kenwright_reach`: required; `pose_tour`:
    /// not given, it follows `up_axis`).
    #[serde(default, deserialize_with = "exact3")]
    pub gravity_m_s2: Option<[f64; 3]>,
    /// `pose_tour`: the axis of the description that points up, `"x"`, `"y"` or `"z"` (default
    /// `"z"`, URDF's convention): gravity is 9.81 m/s² along its negative.
    pub up_axis: Option<UpAxis>,
    /// Load `<mimic>` joints as independent joints (each driven to its own
    /// keyframes; listed in the report's notes). Default false: such a URDF is refused.
    #[serde(default)]
    pub mimic_as_independent: bool,
    /// A mesh file that cannot be found is left out (listed in the notes) instead
    /// of refusing the URDF. Default false.
    #[serde(default)]
    pub skip_missing_meshes: bool,
    /// `"convex_hull"` (default: each collision mesh as its convex hull) or
    /// `"primitives_only"` (meshes not loaded; listed in the notes).
    #[serde(default)]
    pub collision: sim_host::robot::CollisionMode,
    /// Joint angles at t = 0, rad, URDF joint order (empty: all 0; `pose_tour`: not given, the
    /// tour starts from 0, or from the middle of a range that excludes 0).
    #[serde(default)]
    pub initial_positions_rad: Vec<f64>,
}

/// An axis of a robot description.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum UpAxis {
    /// +x.
    X,
    /// +y.
    Y,
    /// +z (URDF's convention).
    Z,
}

impl UpAxis {
    /// Gravity, 9.81 m/s² along the axis's negative.
    pub fn gravity_m_s2(self) -> [f64; 3] {
        match self {
            Self::X => [-9.81, 0.0, 0.0],
            Self::Y => [0.0, -9.81, 0.0],
            Self::Z => [0.0, 0.0, -9.81],
        }
    }

    /// The roll, pitch and yaw (URDF's convention, rad) that turn a description whose up is
    /// this axis into a z-up world: +90° about x for y (its +x stays forward), −90° about y
    /// for x, none for z.
    pub fn to_z_up_rpy(self) -> [f64; 3] {
        match self {
            Self::X => [0.0, -std::f64::consts::FRAC_PI_2, 0.0],
            Self::Y => [std::f64::consts::FRAC_PI_2, 0.0, 0.0],
            Self::Z => [0.0; 3],
        }
    }
}

/// Serde helper: an optional array of exactly three numbers.
fn exact3<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<[f64; 3]>, D::Error> {
    sim_host::input::exact(d).map(Some)
}

/// One keyframe: every joint at `positions_rad` at `time_s`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keyframe {
    /// The instant, s.
    pub time_s: f64,
    /// One pose per joint, rad, URDF joint order.
    pub positions_rad: Vec<f64>,
}

/// The hand: a point fixed in one link.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandSpec {
    /// The URDF link the hand point is fixed in (a joint's child).
    pub link: String,
    /// The point in that link's frame, m.
    #[serde(deserialize_with = "sim_host::input::exact")]
    pub point_m: [f64; 3],
    /// The hand error is judged from this long after each target appears, s.
    pub settle_s: f64,
}

/// One hand target: the hand must go to `position_m` from `time_s` on (until the next one).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandTarget {
    /// From this instant, s.
    pub time_s: f64,
    /// World position, m.
    #[serde(deserialize_with = "sim_host::input::exact")]
    pub position_m: [f64; 3],
    /// The target lies behind a wall: the hand presses against it. Its hand error is not judged
    /// (the wall stops the hand by design); the wall's force on the hand is.
    #[serde(default)]
    pub press: bool,
}

/// The posture goal q_g(t) = centre + amplitude · sin(2π t / period), per joint.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostureSpec {
    /// Centre, rad, one per joint.
    pub center_rad: Vec<f64>,
    /// Amplitude, rad, one per joint.
    pub amplitude_rad: Vec<f64>,
    /// Period, s.
    pub period_s: f64,
    /// From this instant on the goal stays where it is then, s (none: it sways to the end). A
    /// still goal lets the arm settle, so the static wall force can be read.
    pub still_from_s: Option<f64>,
}

/// Settings of the reach controllers.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReachSpec {
    /// Hand spring stiffness K, N/m.
    pub stiffness_n_per_m: f64,
    /// Hand damping D, N·s/m.
    pub damping_ns_per_m: f64,
    /// Posture stiffness K_p, N·m/rad.
    pub posture_stiffness_nm_per_rad: f64,
    /// Posture damping K_d, N·m·s/rad.
    pub posture_damping_nms_per_rad: f64,
    /// `ccd_ik`: most CCD sweeps per solve.
    pub ccd_max_sweeps: usize,
    /// `ccd_ik`: the solve stops within this distance of the target, m.
    pub ccd_tolerance_m: f64,
}

/// Settings of the chain controllers.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainControllerSpec {
    /// Fraction of the sampled loop's stable gain limit any gain may use, in (0, 1].
    pub stability_margin: f64,
    /// n of "On the Beat!": λ = t̂/n for `single_link`, `composite`, `composite_feedforward`
    /// (`on_the_beat` only).
    pub time_constants: Option<f64>,
    /// `arrival`: the setpoint is aimed this far beyond each pose, rad.
    pub tolerance_rad: f64,
    /// `arrival`: natural frequency of the hold after the last keyframe, rad/s; `ccd_ik`: of the
    /// PD that tracks the IK's joint targets.
    pub hold_natural_freq_rad_s: f64,
    /// `kenwright_reach`: the reach controllers' gains.
    pub reach: Option<ReachSpec>,
}

impl ChainScenario {
    /// Read and check a chain scenario file (read by [`read_scenario_file`]: a regular file of
    /// at most 1 MiB).
    #[cfg(test)]
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let text = super::super::scenario::read_scenario_file(path)?;
        Self::parse_with(&text, path, &RobotOverride::default())
    }

    /// Parse and check scenario text read from `path` (relative URDF paths are resolved against
    /// its folder), with the robot replaced from the command line. `--urdf` replaces
    /// `model.urdf` (a relative path is the working directory's, not the scenario's); a robot
    /// so given is taken as URDF describes robots, z-up, unless `--up-axis` says otherwise.
    #[cfg(test)]
    pub fn parse_with(
        text: &str,
        path: &Path,
        robot: &RobotOverride,
    ) -> Result<Self, ScenarioError> {
        let doc = super::super::scenario::Document::parse(text, &path.display().to_string())?;
        Self::from_document(doc, path, robot)
    }

    /// Check the scenario of a parsed file read from `path` (relative URDF paths are resolved
    /// against its folder), with the robot replaced from the command line (`--urdf`, `--up-axis`).
    pub fn from_document(
        doc: super::super::scenario::Document<'_>,
        path: &Path,
        robot: &RobotOverride,
    ) -> Result<Self, ScenarioError> {
        let file = doc.file().to_owned();
        let error = |field: String, reason: String| ScenarioError {
            file: file.clone(),
            field,
            reason,
        };
        let mut scenario: Self = doc.into_kind()?;
        if scenario.model.urdf.is_relative()
            && let Some(dir) = path.parent()
        {
            scenario.model.urdf = dir.join(&scenario.model.urdf);
        }
        if let Some(urdf) = &robot.urdf {
            scenario.model.urdf = urdf.clone();
            if scenario.kind == ChainTask::PoseTour {
                scenario.model.up_axis = Some(UpAxis::Z);
            }
        }
        if let Some(axis) = robot.up_axis {
            if scenario.kind != ChainTask::PoseTour {
                return Err(error(
                    "--up-axis".into(),
                    format!(
                        "only a pose_tour takes its gravity from an up axis; a {} scenario gives model.gravity_m_s2",
                        scenario.kind.name()
                    ),
                ));
            }
            scenario.model.up_axis = Some(axis);
        }
        if scenario.kind == ChainTask::PoseTour {
            scenario
                .draw_tour()
                .map_err(|(field, reason)| error(field, reason))?;
        }
        scenario
            .check()
            .map_err(|(field, reason)| error(field, reason))?;
        Ok(scenario)
    }

    /// Gravity, world vector, m/s²: `model.gravity_m_s2`, or along the up axis's negative.
    pub fn gravity_m_s2(&self) -> [f64; 3] {
        self.model
            .gravity_m_s2
            .unwrap_or_else(|| self.model.up_axis.unwrap_or(UpAxis::Z).gravity_m_s2())
    }

    /// The loader's options for the robot.
    pub fn load_options(&self) -> robot_model::LoadOptions {
        robot_model::LoadOptions {
            mimic_as_independent: self.model.mimic_as_independent,
            floating_base: false,
            skip_missing_meshes: self.model.skip_missing_meshes,
        }
    }

    /// The robot model both sides build from: the URDF read by the loader the
    /// plant uses.
    pub fn robot_model(&self) -> Result<robot_model::RobotModel, (String, String)> {
        robot_model::load(&self.model.urdf, &self.load_options())
            .map_err(|e| ("model.urdf".to_owned(), e.to_string()))
    }

    /// `pose_tour`: the robot's start pose and its keyframes, drawn from `[tour]` for the
    /// robot's joints ([`super::tour`]), into `model.initial_positions_rad` and `keyframes`.
    fn draw_tour(&mut self) -> Result<(), (String, String)> {
        let fail = |field: &str, reason: String| Err((field.to_owned(), reason));
        let Some(t) = self.tour else {
            return fail("tour", "a pose_tour scenario needs its [tour]".into());
        };
        if !self.keyframes.is_empty() {
            return fail(
                "keyframes",
                "a pose_tour draws its keyframes from [tour]; give none".into(),
            );
        }
        if !self.model.initial_positions_rad.is_empty() {
            return fail(
                "model.initial_positions_rad",
                "a pose_tour starts from 0 (or the middle of a range without 0); give none".into(),
            );
        }
        if self.model.gravity_m_s2.is_some() {
            return fail(
                "model.gravity_m_s2",
                "a pose_tour takes gravity from model.up_axis (the description's up axis)".into(),
            );
        }
        if !(1..=MAX_KEYFRAMES).contains(&t.keyframes) {
            return fail(
                "tour.keyframes",
                format!("must lie in [1, {MAX_KEYFRAMES}] (got {})", t.keyframes),
            );
        }
        positive_at_most("tour.beat_s", t.beat_s, MAX_END_S)?;
        if !(t.limit_margin.is_finite() && (0.0..=0.45).contains(&t.limit_margin)) {
            return fail(
                "tour.limit_margin",
                format!("must lie in [0, 0.45] (got {})", t.limit_margin),
            );
        }
        positive_at_most("tour.max_move_rad", t.max_move_rad, std::f64::consts::TAU)?;
        positive_at_most("tour.max_move_m", t.max_move_m, 10.0)?;
        let last = t.keyframes as f64 * t.beat_s;
        if last >= self.end_s {
            return fail(
                "end_s",
                format!(
                    "must be after the last keyframe, at {} × {} s = {last} s (got {})",
                    t.keyframes, t.beat_s, self.end_s
                ),
            );
        }
        let model = self.robot_model()?;
        if model.joints.len() > CAP {
            return fail(
                "model.urdf",
                format!(
                    "{} moving joints; a state frame carries at most {CAP}",
                    model.joints.len()
                ),
            );
        }
        let start = super::tour::start_pose(&model.joints, t.limit_margin);
        self.keyframes = super::tour::keyframes(&t, &model.joints, &start)
            .into_iter()
            .map(|(time_s, positions_rad)| Keyframe {
                time_s,
                positions_rad,
            })
            .collect();
        self.model.initial_positions_rad = start;
        Ok(())
    }

    /// The robot plant's scene: the URDF as an absolute path, the base welded at
    /// the world origin, the start pose by joint name.
    pub fn robot_scene(&self, model: &robot_model::RobotModel) -> sim_host::robot::RobotScene {
        let urdf = std::fs::canonicalize(&self.model.urdf)
            .or_else(|_| std::path::absolute(&self.model.urdf))
            .unwrap_or_else(|_| self.model.urdf.clone());
        let mut scene = sim_host::robot::RobotScene::new(urdf, self.end_s);
        scene.mimic_as_independent = self.model.mimic_as_independent;
        scene.skip_missing_meshes = self.model.skip_missing_meshes;
        scene.collision = self.model.collision;
        scene.dt_s = self.physics_dt_s;
        scene.gravity_m_s2 = self.gravity_m_s2();
        scene.initial_q = model
            .joints
            .iter()
            .zip(&self.model.initial_positions_rad)
            .map(|(j, &q)| (j.name.clone(), q))
            .collect();
        scene.walls = self.walls.clone();
        scene.pushes = self.pushes.clone();
        scene
    }

    /// The control period, s.
    pub fn control_period_s(&self) -> f64 {
        1.0 / self.control_rate_hz
    }

    /// Semantic checks: (field, reason) of the first failure.
    fn check(&self) -> Result<(), (String, String)> {
        let fail = |field: &str, reason: String| Err((field.to_owned(), reason));
        super::super::scenario::check_name(&self.name)?;
        let rate = self.control_rate_hz;
        if !(MIN_CONTROL_RATE_HZ..=MAX_CONTROL_RATE_HZ).contains(&rate) {
            return fail(
                "control_rate_hz",
                format!(
                    "must lie in [{MIN_CONTROL_RATE_HZ}, {MAX_CONTROL_RATE_HZ}] Hz (got {rate})"
                ),
            );
        }
        if !(self.end_s.is_finite() && self.end_s > 0.0 && self.end_s <= MAX_END_S) {
            return fail(
                "end_s",
                format!("must lie in (0, {MAX_END_S}] s (got {})", self.end_s),
            );
        }
        // List lengths before anything walks a list.
        for (field, len, max) in [
            ("pushes", self.pushes.len(), sim_host::robot::MAX_PUSHES),
            ("walls", self.walls.len(), sim_host::robot::MAX_WALLS),
            ("keyframes", self.keyframes.len(), MAX_KEYFRAMES),
            ("hand_targets", self.hand_targets.len(), MAX_KEYFRAMES),
            (
                "model.initial_positions_rad",
                self.model.initial_positions_rad.len(),
                CAP,
            ),
        ] {
            if len > max {
                return fail(field, too_many(len, max));
            }
        }
        let c = &self.controllers;
        if !(c.stability_margin > 0.0 && c.stability_margin <= 1.0) {
            return fail(
                "controllers.stability_margin",
                format!("must lie in (0, 1] (got {})", c.stability_margin),
            );
        }
        positive_at_most(
            "controllers.tolerance_rad",
            c.tolerance_rad,
            MAX_TOLERANCE_RAD,
        )?;
        positive_at_most(
            "controllers.hold_natural_freq_rad_s",
            c.hold_natural_freq_rad_s,
            1e6,
        )?;
        if self.kind != ChainTask::PoseTour {
            if self.model.gravity_m_s2.is_none() {
                return fail(
                    "model.gravity_m_s2",
                    format!("a {} scenario needs gravity", self.kind.name()),
                );
            }
            for (field, given) in [
                ("model.up_axis", self.model.up_axis.is_some()),
                ("tour", self.tour.is_some()),
            ] {
                if given {
                    return fail(field, "belongs to a pose_tour scenario".into());
                }
            }
        }
        // The robot as both sides build it: the model (the loader's refusals), the joints'
        // start, the plant's own checks on its scene and an in-process replica of it, and the
        // controller's tree from the same model.
        let model = self.robot_model()?;
        let model_names: Vec<&str> = model.joints.iter().map(|j| j.name.as_str()).collect();
        if model_names.len() > CAP {
            return fail(
                "model.urdf",
                format!(
                    "{} moving joints; a state frame carries at most {CAP}",
                    model_names.len()
                ),
            );
        }
        if !self.model.initial_positions_rad.is_empty() {
            per_joint(
                "model.initial_positions_rad",
                &self.model.initial_positions_rad,
                &model_names,
                100.0,
            )?;
        }
        let scene = self.robot_scene(&model);
        scene
            .validate()
            .map_err(|(field, reason)| (self.robot_scene_field(&field), reason))?;
        let plant = sim_host::robot::RobotPlant::from_model(&scene, &model)
            .map_err(|e| (self.robot_scene_field(&e.field), e.reason))?;
        model
            .tree::<CAP>()
            .map_err(|e| ("model.urdf".to_owned(), e.to_string()))?;
        let names = plant.joint_names();
        if names != model_names {
            return fail(
                "model.urdf",
                format!("the plant names the joints {names:?}, the model {model_names:?}"),
            );
        }
        match self.kind {
            ChainTask::OnTheBeat | ChainTask::PoseTour => self.check_beat(&names),
            ChainTask::KenwrightReach => self.check_reach(&model, &names),
        }
    }

    fn check_beat(&self, names: &[&str]) -> Result<(), (String, String)> {
        match self.controllers.time_constants {
            Some(n) => positive_at_most("controllers.time_constants", n, 1e6)?,
            None => {
                return Err((
                    "controllers.time_constants".into(),
                    "an on_the_beat scenario needs n of λ = t̂/n".into(),
                ));
            }
        }
        for (field, present) in [
            ("hand", self.hand.is_some()),
            ("hand_targets", !self.hand_targets.is_empty()),
            ("posture", self.posture.is_some()),
            ("controllers.reach", self.controllers.reach.is_some()),
        ] {
            if present {
                return Err((field.into(), "belongs to a kenwright_reach scenario".into()));
            }
        }
        if self.keyframes.is_empty() {
            return Err(("keyframes".into(), "at least one keyframe is needed".into()));
        }
        if self.keyframes.len() > MAX_KEYFRAMES {
            return Err((
                "keyframes".into(),
                format!(
                    "at most {MAX_KEYFRAMES} keyframes (got {})",
                    self.keyframes.len()
                ),
            ));
        }
        let mut previous = 0.0;
        for (i, k) in self.keyframes.iter().enumerate() {
            let field = |name: &str| format!("keyframes[{i}].{name}");
            if !(k.time_s.is_finite() && k.time_s > previous && k.time_s < self.end_s) {
                return Err((
                    field("time_s"),
                    format!(
                        "must be finite, after the previous keyframe ({previous} s) and before end_s = {} s (got {})",
                        self.end_s, k.time_s
                    ),
                ));
            }
            per_joint(&field("positions_rad"), &k.positions_rad, names, 100.0)?;
            previous = k.time_s;
        }
        Ok(())
    }

    fn check_reach(
        &self,
        model: &robot_model::RobotModel,
        names: &[&str],
    ) -> Result<(), (String, String)> {
        if !self.keyframes.is_empty() {
            return Err((
                "keyframes".into(),
                "belong to an on_the_beat scenario".into(),
            ));
        }
        let Some(hand) = &self.hand else {
            return Err((
                "hand".into(),
                "a kenwright_reach scenario needs its hand".into(),
            ));
        };
        if model.frame(&hand.link).is_none_or(|f| f.body == 0) {
            let moving: Vec<&str> = model
                .frames
                .iter()
                .filter(|f| f.body > 0)
                .map(|f| f.name.as_str())
                .collect();
            return Err((
                "hand.link".into(),
                format!(
                    "`{}` is not a moving link of the URDF (moving links: {})",
                    hand.link,
                    moving.join(", ")
                ),
            ));
        }
        for (k, v) in hand.point_m.iter().enumerate() {
            if !(v.is_finite() && v.abs() <= 100.0) {
                return Err((
                    format!("hand.point_m[{k}]"),
                    format!("must be finite and within ±100 m (got {v})"),
                ));
            }
        }
        if !(hand.settle_s.is_finite() && hand.settle_s >= 0.0 && hand.settle_s <= MAX_END_S) {
            return Err((
                "hand.settle_s".into(),
                format!("must lie in [0, {MAX_END_S}] s (got {})", hand.settle_s),
            ));
        }
        if self.hand_targets.is_empty() || self.hand_targets.len() > MAX_KEYFRAMES {
            return Err((
                "hand_targets".into(),
                format!(
                    "between 1 and {MAX_KEYFRAMES} targets are needed (got {})",
                    self.hand_targets.len()
                ),
            ));
        }
        let mut previous = -1.0;
        for (i, t) in self.hand_targets.iter().enumerate() {
            if !(t.time_s.is_finite()
                && t.time_s > previous
                && t.time_s < self.end_s
                && t.time_s >= 0.0)
            {
                return Err((
                    format!("hand_targets[{i}].time_s"),
                    format!(
                        "must be finite, ≥ 0, after the previous target and before end_s = {} s (got {})",
                        self.end_s, t.time_s
                    ),
                ));
            }
            for (k, v) in t.position_m.iter().enumerate() {
                if !(v.is_finite() && v.abs() <= 1000.0) {
                    return Err((
                        format!("hand_targets[{i}].position_m[{k}]"),
                        format!("must be finite and within ±1000 m (got {v})"),
                    ));
                }
            }
            previous = t.time_s;
        }
        if self.hand_targets.first().is_some_and(|t| t.time_s > 0.0) {
            return Err((
                "hand_targets[0].time_s".into(),
                "the first target must start at 0 s".into(),
            ));
        }
        let Some(p) = &self.posture else {
            return Err((
                "posture".into(),
                "a kenwright_reach scenario needs its posture goal".into(),
            ));
        };
        per_joint("posture.center_rad", &p.center_rad, names, 100.0)?;
        per_joint("posture.amplitude_rad", &p.amplitude_rad, names, 100.0)?;
        positive_at_most("posture.period_s", p.period_s, MAX_END_S)?;
        if let Some(t) = p.still_from_s
            && !(t.is_finite() && (0.0..=MAX_END_S).contains(&t))
        {
            return Err((
                "posture.still_from_s".into(),
                format!("must lie in [0, {MAX_END_S}] s (got {t})"),
            ));
        }
        let Some(r) = &self.controllers.reach else {
            return Err((
                "controllers.reach".into(),
                "a kenwright_reach scenario needs the reach gains".into(),
            ));
        };
        for (field, v) in [
            ("controllers.reach.stiffness_n_per_m", r.stiffness_n_per_m),
            ("controllers.reach.damping_ns_per_m", r.damping_ns_per_m),
            (
                "controllers.reach.posture_stiffness_nm_per_rad",
                r.posture_stiffness_nm_per_rad,
            ),
            (
                "controllers.reach.posture_damping_nms_per_rad",
                r.posture_damping_nms_per_rad,
            ),
        ] {
            if !(v.is_finite() && (0.0..=1e6).contains(&v)) {
                return Err((field.into(), format!("must lie in [0, 1e6] (got {v})")));
            }
        }
        if !(1..=10_000).contains(&r.ccd_max_sweeps) {
            return Err((
                "controllers.reach.ccd_max_sweeps".into(),
                format!("must lie in [1, 10000] (got {})", r.ccd_max_sweeps),
            ));
        }
        positive_at_most("controllers.reach.ccd_tolerance_m", r.ccd_tolerance_m, 1.0)?;
        if self.controllers.time_constants.is_some() {
            return Err((
                "controllers.time_constants".into(),
                "belongs to an on_the_beat scenario".into(),
            ));
        }
        Ok(())
    }
}

/// A finite number in (0, `max`], or the field's error.
fn positive_at_most(field: &str, v: f64, max: f64) -> Result<(), (String, String)> {
    if v.is_finite() && v > 0.0 && v <= max {
        Ok(())
    } else {
        Err((field.into(), format!("must lie in (0, {max}] (got {v})")))
    }
}

/// One finite value per joint of `plant`, each within ±`max`, or the field's error.
fn per_joint(
    field: &str,
    values: &[f64],
    names: &[&str],
    max: f64,
) -> Result<(), (String, String)> {
    let joints = names.len();
    if values.len() != joints {
        return Err((
            field.into(),
            format!(
                "{} values for a chain of {joints} joints (one per joint, in URDF order: {})",
                values.len(),
                names.join(", ")
            ),
        ));
    }
    for (j, &v) in values.iter().enumerate() {
        if !(v.is_finite() && v.abs() <= max) {
            return Err((
                format!("{field}[{j}]"),
                format!("must be finite and within ±{max} (got {v})"),
            ));
        }
    }
    Ok(())
}

impl ChainScenario {
    /// A field of the robot plant's scene named as this scenario names it.
    fn robot_scene_field(&self, field: &str) -> String {
        let tour = self.kind == ChainTask::PoseTour;
        for (scene, ours) in [
            ("urdf", "model.urdf"),
            (
                "gravity_m_s2",
                if tour {
                    "model.up_axis"
                } else {
                    "model.gravity_m_s2"
                },
            ),
            (
                "initial_q",
                if tour {
                    "tour"
                } else {
                    "model.initial_positions_rad"
                },
            ),
            ("collision", "model.collision"),
            ("mimic_as_independent", "model.mimic_as_independent"),
            ("skip_missing_meshes", "model.skip_missing_meshes"),
            ("dt_s", "physics_dt_s"),
            ("end_time_s", "end_s"),
        ] {
            if let Some(rest) = field.strip_prefix(scene) {
                return format!("{ours}{rest}");
            }
        }
        field.to_owned()
    }
}
