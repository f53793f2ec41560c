//! `hil run scenarios/dynamo_push.toml`: Dynamo's pushed humanoid (Wrotek, Jenkins and
//! McGuire). The 15-body humanoid (`models/humanoid15.urdf`, read by the plant and by the
//! controller with the same function, `robot_model::humanoid::HumanoidModel::load`) holds a pose
//! (standing, then a reach that arrives on time) and is pushed at the torso with impulses of
//! increasing size, one plant process per (controller, impulse); then each controller holds the
//! pose unpushed with its gains scaled (the gain sweep). Controllers ([`controller`]):
//! `parent_space`, `world_space`, `world_space_root_spring`.
//!
//! A run **stands** when, to its end (`after_push_s` after the push), no body but the feet and
//! toes touched the ground and the torso's tilt from vertical stayed below `fall_tilt_rad`, and
//! at its end its capture point (the centre of mass plus its velocity over `√(g / h)`) is
//! inside the feet's footprint on the ground: a body whose capture point has left its support
//! is falling, however little it has tilted yet ([`CaptureMeter`]). A run
//! cut short (the plant lost, SIGINT or SIGTERM) before its end without having fallen is **not
//! judged**: its `stood` (`fell` in the gain sweep) is `null` in `report.json` and empty in
//! `runs.csv`, it counts as neither stood nor fallen (so not towards `largest_push_survived_ns`),
//! and the report says `complete: false` with an `incomplete_reason` naming the run. A run that
//! fell before it was cut is judged: it fell.
//! Figures: the largest impulse after which the humanoid still stands, the torso's largest tilt
//! per impulse, the pose error (RMS over joints and time of each joint's rotation away from its
//! target, from the reach's arrival to the push; unpushed run), and the root spring's external
//! torque integral. Written: `report.json`, `runs.csv`, `tilt.svg`, `pose_error.svg`,
//! `latency.svg`, `push.gif` (a side view of the root-spring controller at the first impulse it
//! falls to), `qp_balance.gif` (`qp_balance` at the largest impulse it survives), `scene.json`
//! (the unpushed scene), `replay.html` (the 3D replay of each controller's largest push survived
//! and first fall, [`crate::replay::humanoid`]).

pub mod balance;
pub mod controller;

use std::path::{Path, PathBuf};

use control_core::articulated::nalgebra::{UnitQuaternion, Vector3};
use control_core::dynamo::{ConfigField, DynamoError, RootSpringConfig, SpringState};
use control_core::frames::{Event, StateFrame};
use plotters::prelude::*;
use robot_model::humanoid::{Geometry, HumanoidModel, Sole};
use serde::{Deserialize, Serialize};
use sim_host::Push;
use sim_host::humanoid::{HumanoidPlant, HumanoidScene};
use sim_host::scene::MAX_TORQUE_LIMIT_NM;
use sim_host::{Mode, SceneError};

use super::plot::{COLOURS, PlotResult, latency_histogram, no_samples};
use super::recorder::{KindRecorder, LatencyHistogram, Run};
use super::report::{Faults, Percentiles, ReportHeader, Timing};
use super::roles::{JointRole, RolesSpec, body_sides, joint_roles};
use super::scenario::ScenarioError;
use super::session::{Cut, StopFlag};
use super::standing::{BallCount, BallsOut, CaptureOut, FeetMeter, FeetOut, FootForce, PeltSpec};
use super::{Finished, Periods, RunArgs, plant, run_session, select};
use crate::anim::{Bone, BoneKind, ForceArrow, GifSettings, Pose, write_gif};
use control_core::simbicon3d::Side;
use controller::{DynamoController, DynamoLaw, DynamoTick, GainScope, HumanoidState, Reach};

/// The `kind` of a Dynamo scenario.
pub const KIND: &str = "dynamo_push";

/// Most entries of `impulses_ns` (one plant run per controller each).
pub const MAX_IMPULSES: usize = 64;
/// Most entries of `gain_scales` (one plant run per controller and scope each).
pub const MAX_GAIN_SCALES: usize = 64;
/// Most entries of `gain_scopes` (there are two scopes, each named once).
pub const MAX_GAIN_SCOPES: usize = 8;
/// Most entries of `controllers` (there are three controllers, each named once).
pub const MAX_CONTROLLERS: usize = 8;
/// Largest |component| of `push_direction` (a direction: only its orientation counts).
pub const MAX_DIRECTION_COMPONENT: f64 = 1e3;
/// Largest `root_spring.stiffness_nm_per_rad`, N·m/rad.
pub const MAX_SPRING_STIFFNESS_NM_PER_RAD: f64 = 1e6;
/// Largest `root_spring.damping_nms_per_rad`, N·m·s/rad.
pub const MAX_SPRING_DAMPING_NMS_PER_RAD: f64 = 1e6;
/// Largest `root_spring.break_torque_nm`, N·m (ten times the plant's largest root torque
/// limit: a spring that never breaks needs no more).
pub const MAX_SPRING_BREAK_TORQUE_NM: f64 = 10.0 * MAX_TORQUE_LIMIT_NM;

/// The reach of the pose: a joint's rotation (axis-angle, parent axes) given at `start_s`, to
/// arrive at `arrive_s`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReachSpec {
    /// The joint's name.
    pub joint: String,
    /// Its target rotation, axis × angle, rad, parent axes.
    #[serde(deserialize_with = "sim_host::input::exact")]
    pub rotation_rad: [f64; 3],
    /// When the target is given, s.
    pub start_s: f64,
    /// When it must be reached, s.
    pub arrive_s: f64,
}

/// `qp_balance` only: a hand reaching for a point in front while the body balances. The target
/// is `fraction` of the arm's length (straight: the distances from `from_joint` through the
/// joints below it to `point_m`) from `from_joint`, along `direction` (horizontal), at that
/// joint's height when the reach starts; the hand's point goes there along a smooth path from
/// `start_s` to `arrive_s`, then stays.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandSpec {
    /// The link the hand's point is on (URDF name).
    pub link: String,
    /// The point in the link's frame, m.
    #[serde(deserialize_with = "sim_host::input::exact")]
    pub point_m: [f64; 3],
    /// The joint the arm's length is measured from (the shoulder), an ancestor of `link`.
    pub from_joint: String,
    /// Fraction of the arm's length, (0, 1].
    pub fraction: f64,
    /// The direction of the target from the joint, world (its horizontal part is used).
    #[serde(deserialize_with = "sim_host::input::exact")]
    pub direction: [f64; 3],
    /// When the hand starts towards it, s.
    pub start_s: f64,
    /// When it must be there, s (no later than `push_at_s`).
    pub arrive_s: f64,
}

impl HandSpec {
    /// The arm's length, m: from `from_joint` through each joint below it on the way to `link`,
    /// to the point. `None` if `from_joint` is not an ancestor of `link` or a name is unknown.
    pub fn arm_length_m(&self, model: &HumanoidModel) -> Option<f64> {
        let link = model.body_index(&self.link)?;
        let from = model.joint_index(&self.from_joint)?;
        let com = model.bodies.get(link)?.com_in_link_m;
        // From the point up: in each body, from the joint that carries it to the point below.
        let mut below = [
            self.point_m[0] - com[0],
            self.point_m[1] - com[1],
            self.point_m[2] - com[2],
        ];
        let mut body = link;
        let mut length = 0.0;
        loop {
            let (j, joint) = model
                .joints
                .iter()
                .enumerate()
                .find(|(_, j)| j.child == body)?;
            let a = joint.anchor_in_child_m;
            length +=
                ((below[0] - a[0]).powi(2) + (below[1] - a[1]).powi(2) + (below[2] - a[2]).powi(2))
                    .sqrt();
            if j == from {
                return Some(length);
            }
            below = joint.anchor_in_parent_m;
            body = joint.parent;
        }
    }

    fn check(&self, model: &HumanoidModel, push_at_s: f64) -> Result<(), (String, String)> {
        let bad = |f: &str, r: String| Err((format!("hand.{f}"), r));
        if model.body_index(&self.link).is_none() {
            return bad("link", format!("`{}` is no link of the URDF", self.link));
        }
        if model.joint_index(&self.from_joint).is_none() {
            return bad(
                "from_joint",
                format!("`{}` is no joint of the URDF", self.from_joint),
            );
        }
        for (k, &v) in self.point_m.iter().enumerate() {
            if !(v.is_finite() && v.abs() <= 10.0) {
                return bad(&format!("point_m[{k}]"), format!("{v}: within ±10 m"));
            }
        }
        if self.arm_length_m(model).is_none() {
            return bad(
                "from_joint",
                format!("`{}` is not above `{}`", self.from_joint, self.link),
            );
        }
        if !(self.fraction > 0.0 && self.fraction <= 1.0) {
            return bad("fraction", format!("{}: within (0, 1]", self.fraction));
        }
        let d = self.direction;
        for (k, &v) in d.iter().enumerate() {
            if !(v.is_finite() && v.abs() <= MAX_DIRECTION_COMPONENT) {
                return bad(
                    &format!("direction[{k}]"),
                    format!("must be finite and within ±{MAX_DIRECTION_COMPONENT}, got {v:?}"),
                );
            }
        }
        if (d[0] * d[0] + d[2] * d[2]).sqrt() <= 1e-6 {
            return bad("direction", "needs a horizontal part (x or z)".into());
        }
        for (f, v) in [("start_s", self.start_s), ("arrive_s", self.arrive_s)] {
            if !(v.is_finite() && (0.0..=1e4).contains(&v)) {
                return bad(f, format!("{v}: must be within [0, 1e4]"));
            }
        }
        if self.arrive_s <= self.start_s || self.arrive_s > push_at_s {
            return bad(
                "arrive_s",
                "must come after hand.start_s and no later than push_at_s".into(),
            );
        }
        Ok(())
    }
}

/// The root spring's settings (`world_space_root_spring`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpringSpec {
    /// Stiffness, N·m/rad.
    pub stiffness_nm_per_rad: f64,
    /// Damping, N·m·s/rad.
    pub damping_nms_per_rad: f64,
    /// τ_max, N·m: the largest torque it gives.
    pub max_torque_nm: f64,
    /// The balance torque past which it breaks, N·m.
    pub break_torque_nm: f64,
}

/// Largest `[qp_balance]` weight accepted (the library's weights run from 1e-6 to 10).
pub const MAX_QP_WEIGHT: f64 = 1e6;

/// `[qp_balance]`: `qp_balance`'s settings beside its defaults.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QpBalanceSpec {
    /// Weight of the horizontal centre-of-mass objective, against the pose's 0.1 and the
    /// upright pelvis's 1 (default 10, the library's `BalanceSettings::DEFAULT`), in
    /// (0, [`MAX_QP_WEIGHT`]].
    #[serde(default = "default_com_weight")]
    pub com_weight: f64,
    /// Torque limits left out of the QP while a joint's torque on the last solved tick was
    /// below this fraction of its effort, checked after each solve (default 0.5, the
    /// library's), in [0, 1); 0 keeps every limit in the QP.
    #[serde(default = "default_screen_fraction")]
    pub screen_fraction: f64,
    /// Weight of the angular-momentum damping objective (default 30, the humanoid's
    /// [`balance::MOMENTUM_WEIGHT`]; the library's is 1), in [0, [`MAX_QP_WEIGHT`]]; 0 leaves the
    /// angular momentum free.
    #[serde(default = "default_momentum_weight")]
    pub momentum_weight: f64,
    /// Eliminate the accelerations by the solver's range-space way
    /// (`control_core::qp::Settings::range_space`; default true, the library's balance
    /// default); false takes the null-space way: the same QP to the solver's tolerance, its
    /// tick about 1.4× slower on the humanoid.
    #[serde(default = "default_range_space")]
    pub range_space: bool,
    /// Take one recovery step when the capture point leaves the feet's footprint
    /// (`control_core::balance::step`, its `StepSettings::DEFAULT`; default true); false
    /// balances on the feet where they stand.
    #[serde(default = "default_step")]
    pub step: bool,
    /// Ticks a foot or toes stay in the QP's planted set after the plant last measured a
    /// normal force on them (default [`balance::CONTACT_HOLD_TICKS`], 1), in
    /// [0, [`balance::MAX_CONTACT_HOLD_TICKS`]]; 0 drops them as soon as a step reads unloaded.
    #[serde(default = "balance::default_contact_hold_ticks")]
    pub contact_hold_ticks: u32,
}

fn default_step() -> bool {
    true
}

fn default_range_space() -> bool {
    control_core::balance::BalanceSettings::DEFAULT
        .qp
        .range_space
}

fn default_momentum_weight() -> f64 {
    balance::MOMENTUM_WEIGHT
}

fn default_com_weight() -> f64 {
    control_core::balance::BalanceSettings::DEFAULT.com_weight
}

fn default_screen_fraction() -> f64 {
    control_core::balance::BalanceSettings::DEFAULT.screen_fraction
}

/// A Dynamo scenario file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DynamoScenario {
    /// Always `"dynamo_push"`.
    pub kind: String,
    /// Name (the default output folder is named after the scenario file: `out/<file stem>`).
    pub name: String,
    /// The humanoid's URDF (relative to the scenario file).
    pub urdf: PathBuf,
    /// Control rate, Hz (= 1 / physics step), in [50, 2000].
    pub control_rate_hz: f64,
    /// The push starts at this time, s.
    pub push_at_s: f64,
    /// It lasts this long, s (> 0).
    pub push_duration_s: f64,
    /// Its direction (normalised), world; each component within ±[`MAX_DIRECTION_COMPONENT`].
    #[serde(deserialize_with = "sim_host::input::exact")]
    pub push_direction: [f64; 3],
    /// The body pushed.
    pub push_body: String,
    /// The impulses, N·s, one run each (ascending, ≥ 0; at most [`MAX_IMPULSES`]).
    pub impulses_ns: Vec<f64>,
    /// Judged this long after the push starts, s.
    pub after_push_s: f64,
    /// A torso tilt beyond this is a fall, rad.
    pub fall_tilt_rad: f64,
    /// The controllers, in run order, each named once (at most [`MAX_CONTROLLERS`]).
    pub controllers: Vec<String>,
    /// Gain scales of the sweep (0.05..=20; at most [`MAX_GAIN_SCALES`]).
    pub gain_scales: Vec<f64>,
    /// Which joints the sweep scales, one sweep each: `"upper_body"` (the joints whose law
    /// differs between the controllers) and/or `"all_joints"`, each named once (at most
    /// [`MAX_GAIN_SCOPES`]).
    pub gain_scopes: Vec<String>,
    /// The reach.
    pub reach: ReachSpec,
    /// `qp_balance` only: a hand reaching for a point (none: no hand task).
    #[serde(default)]
    pub hand: Option<HandSpec>,
    /// Balls thrown at `push_body` in every run (none: no balls).
    #[serde(default)]
    pub pelt: Option<PeltSpec>,
    /// `[qp_balance]`: `qp_balance`'s settings beside its defaults (`None`: the defaults).
    #[serde(default)]
    pub qp_balance: Option<QpBalanceSpec>,
    /// The root spring.
    pub root_spring: SpringSpec,
    /// Which joint plays which part (the gains and the ankles' lean damping go by part): each
    /// entry left out is the humanoid15 name. Every joint must play exactly one part.
    #[serde(default)]
    pub roles: RolesSpec,
}

/// Each body's side (`None`: pelvis, torso, head).
type BodySides = Vec<Option<Side>>;

impl DynamoScenario {
    /// Each of `model`'s joints' part under [`Self::roles`], or (field, reason).
    pub fn joint_roles(&self, model: &HumanoidModel) -> Result<Vec<JointRole>, (String, String)> {
        self.parts(model).map(|(parts, _)| parts)
    }

    /// [`Self::joint_roles`] and each body's side (what the animations colour by), from one
    /// resolution of [`Self::roles`].
    fn parts(
        &self,
        model: &HumanoidModel,
    ) -> Result<(Vec<JointRole>, BodySides), (String, String)> {
        let roles = self.roles.resolve(model, &self.urdf)?;
        Ok((joint_roles(&roles, model)?, body_sides(&roles, model)))
    }

    /// Read and check a scenario file.
    #[cfg(test)]
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        Self::parse(&super::scenario::read_scenario_file(path)?, path)
    }

    /// Parse and check scenario text read from `path` (a relative `urdf` is resolved against
    /// its folder).
    #[cfg(test)]
    pub fn parse(text: &str, path: &Path) -> Result<Self, ScenarioError> {
        let doc = super::scenario::Document::parse(text, &path.display().to_string())?;
        Self::from_document(doc, path)
    }

    /// Check the scenario of a parsed file read from `path` (a relative `urdf` is resolved
    /// against its folder).
    pub fn from_document(
        doc: super::scenario::Document<'_>,
        path: &Path,
    ) -> Result<Self, ScenarioError> {
        let file = doc.file().to_owned();
        let error = |field: String, reason: String| ScenarioError {
            file: file.clone(),
            field,
            reason,
        };
        let mut s: Self = doc.into_kind()?;
        if s.urdf.is_relative()
            && let Some(dir) = path.parent()
        {
            s.urdf = dir.join(&s.urdf);
        }
        s.check().map_err(|(field, reason)| error(field, reason))?;
        Ok(s)
    }

    fn check(&self) -> Result<(), (String, String)> {
        let bad = |f: &str, r: String| Err((f.to_owned(), r));
        super::scenario::check_kind_and_name(&self.kind, KIND, &self.name)?;
        let r = self.control_rate_hz;
        if !(r.is_finite() && (50.0..=2000.0).contains(&r)) {
            return bad(
                "control_rate_hz",
                format!("{r}: must be within [50, 2000] Hz"),
            );
        }
        // List lengths before anything walks a list (each entry is one or more plant runs).
        for (field, len, max) in [
            ("impulses_ns", self.impulses_ns.len(), MAX_IMPULSES),
            ("controllers", self.controllers.len(), MAX_CONTROLLERS),
            ("gain_scales", self.gain_scales.len(), MAX_GAIN_SCALES),
            ("gain_scopes", self.gain_scopes.len(), MAX_GAIN_SCOPES),
        ] {
            if len > max {
                return bad(field, super::scenario::too_many(len, max));
            }
        }
        let model =
            HumanoidModel::load(&self.urdf).map_err(|e| ("urdf".to_owned(), e.to_string()))?;
        self.joint_roles(&model)?;
        if model.body_index(&self.push_body).is_none() {
            return bad(
                "push_body",
                format!("`{}` is no body of the URDF", self.push_body),
            );
        }
        if model.joint_index(&self.reach.joint).is_none() {
            return bad(
                "reach.joint",
                format!("`{}` is no joint of the URDF", self.reach.joint),
            );
        }
        let d = self.push_direction;
        for (k, &v) in d.iter().enumerate() {
            if !(v.is_finite() && v.abs() <= MAX_DIRECTION_COMPONENT) {
                return bad(
                    &format!("push_direction[{k}]"),
                    format!("must be finite and within ±{MAX_DIRECTION_COMPONENT}, got {v:?}"),
                );
            }
        }
        let n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        if !(n.is_finite() && n > 1e-9) {
            return bad("push_direction", "must be a non-zero finite vector".into());
        }
        let rot = self.reach.rotation_rad;
        for (k, &v) in rot.iter().enumerate() {
            if !v.is_finite() {
                return bad(
                    &format!("reach.rotation_rad[{k}]"),
                    format!("must be a finite number, got {v}"),
                );
            }
        }
        let angle = (rot[0] * rot[0] + rot[1] * rot[1] + rot[2] * rot[2]).sqrt();
        if angle > std::f64::consts::PI {
            return bad(
                "reach.rotation_rad",
                format!(
                    "the rotation's angle (the vector's norm) must be at most π rad, got {angle} \
                     (every rotation has an axis-angle form within π, and the plant holds joint \
                     rotations to the same bound; degrees given as radians?)"
                ),
            );
        }
        for (f, v, lo, hi) in [
            ("push_at_s", self.push_at_s, 0.0, 1e4),
            ("push_duration_s", self.push_duration_s, 1e-6, 10.0),
            ("after_push_s", self.after_push_s, 0.0, 1e4),
            ("fall_tilt_rad", self.fall_tilt_rad, 0.01, 3.1),
            ("reach.start_s", self.reach.start_s, 0.0, 1e4),
            ("reach.arrive_s", self.reach.arrive_s, 0.0, 1e4),
        ] {
            if !(v.is_finite() && (lo..=hi).contains(&v)) {
                return bad(f, format!("{v}: must be within [{lo}, {hi}]"));
            }
        }
        if self.reach.arrive_s <= self.reach.start_s || self.reach.arrive_s > self.push_at_s {
            return bad(
                "reach.arrive_s",
                "must come after reach.start_s and no later than push_at_s".into(),
            );
        }
        if self.impulses_ns.is_empty() {
            return bad("impulses_ns", "name at least one impulse".into());
        }
        for (i, w) in self.impulses_ns.windows(2).enumerate() {
            if w[1] <= w[0] {
                return bad(
                    &format!("impulses_ns[{}]", i + 1),
                    "must be ascending".into(),
                );
            }
        }
        for (i, &v) in self.impulses_ns.iter().enumerate() {
            if !(v.is_finite() && (0.0..=1e5).contains(&v)) {
                return bad(
                    &format!("impulses_ns[{i}]"),
                    format!("{v}: within [0, 1e5] N·s"),
                );
            }
        }
        // The plant takes a push force of at most PUSH_FORCE_LIMIT_N (each component): the
        // force is the impulse spread over push_duration_s. Named here, in the scenario's terms,
        // before the plant's own check would name a field of the generated scene. The duration
        // is blamed when even the smallest non-zero impulse is too strong for it.
        let dt = self.push_duration_s;
        if let Some(smallest) = self.impulses_ns.iter().copied().find(|&j| j > 0.0)
            && smallest / dt > PUSH_FORCE_LIMIT_N
        {
            return bad(
                "push_duration_s",
                format!(
                    "{dt} s is too short: the smallest non-zero impulse, {smallest} N·s, over it \
                     is a force of {} N, beyond the plant's push force limit of \
                     {PUSH_FORCE_LIMIT_N} N (impulse ÷ push_duration_s must be ≤ \
                     {PUSH_FORCE_LIMIT_N} N, so push_duration_s ≥ {} s)",
                    smallest / dt,
                    smallest / PUSH_FORCE_LIMIT_N
                ),
            );
        }
        for (i, &v) in self.impulses_ns.iter().enumerate() {
            if v / dt > PUSH_FORCE_LIMIT_N {
                return bad(
                    &format!("impulses_ns[{i}]"),
                    format!(
                        "{v} N·s over push_duration_s = {dt} s is a force of {} N, beyond the \
                         plant's push force limit of {PUSH_FORCE_LIMIT_N} N (impulse ÷ \
                         push_duration_s must be ≤ {PUSH_FORCE_LIMIT_N} N: at most {} N·s at \
                         this duration)",
                        v / dt,
                        PUSH_FORCE_LIMIT_N * dt
                    ),
                );
            }
        }
        for (i, &v) in self.gain_scales.iter().enumerate() {
            if !(v.is_finite() && (0.05..=20.0).contains(&v)) {
                return bad(
                    &format!("gain_scales[{i}]"),
                    format!("{v}: within [0.05, 20]"),
                );
            }
        }
        if !self.gain_scales.is_empty() && self.gain_scopes.is_empty() {
            return bad(
                "gain_scopes",
                "name at least one scope for the gain sweep: upper_body or all_joints".into(),
            );
        }
        for (i, c) in self.gain_scopes.iter().enumerate() {
            if GainScope::from_name(c).is_none() {
                return bad(
                    &format!("gain_scopes[{i}]"),
                    format!("unknown scope `{c}`: upper_body or all_joints"),
                );
            }
            if self.gain_scopes[..i].contains(c) {
                return bad(&format!("gain_scopes[{i}]"), format!("`{c}` named twice"));
            }
        }
        if self.controllers.is_empty() {
            return bad("controllers", "name at least one controller".into());
        }
        for (i, c) in self.controllers.iter().enumerate() {
            if DynamoLaw::from_name(c).is_none() {
                return bad(
                    &format!("controllers[{i}]"),
                    format!(
                        "unknown controller `{c}`: parent_space, world_space, world_space_root_spring or qp_balance"
                    ),
                );
            }
            if self.controllers[..i].contains(c) {
                return bad(&format!("controllers[{i}]"), format!("`{c}` named twice"));
            }
        }
        self.root_spring.check()?;
        if let Some(pelt) = &self.pelt {
            pelt.check(self.push_at_s + self.after_push_s)?;
        }
        if let Some(qp) = &self.qp_balance {
            if !(qp.com_weight.is_finite() && qp.com_weight > 0.0 && qp.com_weight <= MAX_QP_WEIGHT)
            {
                return bad(
                    "qp_balance.com_weight",
                    format!("{}: not in (0, {MAX_QP_WEIGHT:e}]", qp.com_weight),
                );
            }
            if !(qp.momentum_weight.is_finite()
                && qp.momentum_weight >= 0.0
                && qp.momentum_weight <= MAX_QP_WEIGHT)
            {
                return bad(
                    "qp_balance.momentum_weight",
                    format!("{}: not in [0, {MAX_QP_WEIGHT:e}]", qp.momentum_weight),
                );
            }
            if !(qp.screen_fraction >= 0.0 && qp.screen_fraction < 1.0) {
                return bad(
                    "qp_balance.screen_fraction",
                    format!("{}: not in [0, 1)", qp.screen_fraction),
                );
            }
            if let Some(why) = balance::contact_hold_refusal(qp.contact_hold_ticks) {
                return bad("qp_balance.contact_hold_ticks", why);
            }
            if !self.controllers.iter().any(|c| c == "qp_balance") {
                return bad(
                    "qp_balance",
                    "a [qp_balance] table, but no qp_balance controller runs".into(),
                );
            }
        }
        if let Some(hand) = &self.hand {
            hand.check(&model, self.push_at_s)?;
            if let Some(i) = self.controllers.iter().position(|c| c != "qp_balance") {
                return bad(
                    &format!("controllers[{i}]"),
                    format!(
                        "`{}` has no hand task: with a [hand], the controllers are qp_balance only",
                        self.controllers[i]
                    ),
                );
            }
        }
        // The plant's own checks on the pushed scene.
        let scene = self.scene(self.impulses_ns.last().copied().unwrap_or(0.0));
        scene.validate()?;
        HumanoidPlant::new(&scene).map_err(|SceneError { field, reason, .. }| (field, reason))?;
        Ok(())
    }

    /// The control period, s.
    pub fn period_s(&self) -> f64 {
        1.0 / self.control_rate_hz
    }

    /// The reach of `[reach]` on `model`'s joints (`None`: `reach.joint` names no joint).
    pub fn reach(&self, model: &HumanoidModel) -> Option<Reach> {
        let r = self.reach.rotation_rad;
        Some(Reach {
            joint: model.joint_index(&self.reach.joint)?,
            rotation: UnitQuaternion::from_scaled_axis(Vector3::new(r[0], r[1], r[2])),
            start_s: self.reach.start_s,
            arrive_s: self.reach.arrive_s,
        })
    }

    /// The plant's scene for one push of `impulse_ns`.
    pub fn scene(&self, impulse_ns: f64) -> HumanoidScene {
        let mut scene = HumanoidScene::new(
            self.urdf.clone(),
            self.push_at_s + self.after_push_s,
            GRAVITY_M_S2,
        );
        scene.dt_s = self.period_s();
        scene.root_torque_limit_nm = self.root_spring.max_torque_nm * ROOT_LIMIT_MARGIN;
        let d = self.push_direction;
        let n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        if impulse_ns > 0.0 {
            let f = impulse_ns / self.push_duration_s;
            scene.pushes.push(Push {
                body: self.push_body.clone(),
                force_n: [f * d[0] / n, f * d[1] / n, f * d[2] / n],
                start_s: self.push_at_s,
                duration_s: self.push_duration_s,
            });
        }
        if let Some(pelt) = &self.pelt
            && let Some(target) = self.standing_com_of(&self.push_body)
        {
            // Horizontal along the push direction; the humanoid's world is y up.
            scene.balls = pelt.balls(target, d, 1, -GRAVITY_M_S2[1]);
        }
        scene
    }

    /// Where `body`'s centre of mass is as the plant stands the humanoid at the start.
    fn standing_com_of(&self, body: &str) -> Option<[f64; 3]> {
        let plant = HumanoidPlant::new(&HumanoidScene::new(
            self.urdf.clone(),
            self.period_s(),
            GRAVITY_M_S2,
        ))
        .ok()?;
        let b = plant.model().body_index(body)?;
        plant.state_frame().bodies.get(b).map(|m| m.com_m)
    }

    /// The controllers, in run order.
    pub fn laws(&self) -> Vec<DynamoLaw> {
        self.controllers
            .iter()
            .filter_map(|c| DynamoLaw::from_name(c))
            .collect()
    }
}

/// The plant's limit on a push's force, N ([`sim_host::scene::MAX_PUSH_FORCE_N`], which the
/// humanoid scene holds each component of `pushes[i].force_n` to). The scenario holds the whole
/// force, impulse ÷ `push_duration_s`, to it, which keeps every component within too.
pub const PUSH_FORCE_LIMIT_N: f64 = sim_host::scene::MAX_PUSH_FORCE_N;

/// The scene's root torque limit is the spring's `max_torque_nm` times this (a torque saturated to
/// exactly τ_max may come out a rounding above it).
const ROOT_LIMIT_MARGIN: f64 = 1.000_001;

impl SpringSpec {
    /// control-core's [`RootSpring::new`](control_core::dynamo::RootSpring::new) validation,
    /// each refusal naming its sub-field (`root_spring.break_torque_nm`, …) and value; the
    /// plant's bound on its root torque limit (`max_torque_nm` × 1.000001 ≤
    /// [`MAX_TORQUE_LIMIT_NM`]); and the bounds [`MAX_SPRING_STIFFNESS_NM_PER_RAD`],
    /// [`MAX_SPRING_DAMPING_NMS_PER_RAD`], [`MAX_SPRING_BREAK_TORQUE_NM`].
    fn check(self) -> Result<(), (String, String)> {
        let f = |name: &str| format!("root_spring.{name}");
        match control_core::dynamo::RootSpring::new(RootSpringConfig::from(self)) {
            Ok(_) => {}
            Err(DynamoError::Config(ConfigField::RootStiffness)) => {
                return Err((
                    f("stiffness_nm_per_rad"),
                    format!("must be finite and ≥ 0, got {}", self.stiffness_nm_per_rad),
                ));
            }
            Err(DynamoError::Config(ConfigField::RootDamping)) => {
                return Err((
                    f("damping_nms_per_rad"),
                    format!("must be finite and ≥ 0, got {}", self.damping_nms_per_rad),
                ));
            }
            Err(DynamoError::Config(ConfigField::MaxTorque)) => {
                return Err((
                    f("max_torque_nm"),
                    format!("must be finite and > 0, got {}", self.max_torque_nm),
                ));
            }
            Err(DynamoError::Config(ConfigField::BreakTorque)) => {
                return Err((
                    f("break_torque_nm"),
                    format!(
                        "must be finite and ≥ max_torque_nm ({}), got {}",
                        self.max_torque_nm, self.break_torque_nm
                    ),
                ));
            }
            Err(e) => return Err(("root_spring".to_owned(), e.to_string())),
        }
        if self.max_torque_nm * ROOT_LIMIT_MARGIN > MAX_TORQUE_LIMIT_NM {
            return Err((
                f("max_torque_nm"),
                format!(
                    "{} N·m is beyond the plant's root torque limit: max_torque_nm × \
                     {ROOT_LIMIT_MARGIN} (the scene's root torque limit) must be at most \
                     {MAX_TORQUE_LIMIT_NM} N·m",
                    self.max_torque_nm
                ),
            ));
        }
        for (name, v, max, unit) in [
            (
                "stiffness_nm_per_rad",
                self.stiffness_nm_per_rad,
                MAX_SPRING_STIFFNESS_NM_PER_RAD,
                "N·m/rad",
            ),
            (
                "damping_nms_per_rad",
                self.damping_nms_per_rad,
                MAX_SPRING_DAMPING_NMS_PER_RAD,
                "N·m·s/rad",
            ),
            (
                "break_torque_nm",
                self.break_torque_nm,
                MAX_SPRING_BREAK_TORQUE_NM,
                "N·m",
            ),
        ] {
            if v > max {
                return Err((f(name), format!("must be at most {max} {unit}, got {v:?}")));
            }
        }
        Ok(())
    }
}

impl From<SpringSpec> for RootSpringConfig {
    fn from(s: SpringSpec) -> Self {
        Self {
            stiffness_nm_per_rad: s.stiffness_nm_per_rad,
            damping_nms_per_rad: s.damping_nms_per_rad,
            max_torque_nm: s.max_torque_nm,
            break_torque_nm: Some(s.break_torque_nm),
            break_tilt_rad: None,
        }
    }
}

/// The plant's gravity in every `dynamo_push` scene, m/s² (y up).
pub const GRAVITY_M_S2: [f64; 3] = [0.0, -9.81, 0.0];

/// A state kept for the animation and the replay.
#[derive(Debug, Clone)]
pub struct PoseSample {
    /// Simulated time, s.
    pub time_s: f64,
    /// The state.
    pub state: HumanoidState,
    /// The ground's force on the feet and toes (the frame's contacts), N.
    pub forces: [[f64; 3]; 4],
    /// The norm of each joint's torque vector last sent (joint order), N·m.
    pub torque_norms_nm: Vec<f64>,
}

/// The norm of each of the first `joints` joints' torque vectors in `torques_nm` (three values a
/// joint, as a humanoid's torque frame carries them) into `out`, for the next [`PoseSample`].
pub fn torque_norms_into(torques_nm: &[f64], joints: usize, out: &mut Vec<f64>) {
    out.clear();
    for t in torques_nm.chunks_exact(3).take(joints) {
        out.push((t[0] * t[0] + t[1] * t[1] + t[2] * t[2]).sqrt());
    }
}

/// The recorder of one run.
pub struct DynamoRecorder {
    fall_tilt_rad: f64,
    torso: usize,
    feet: Vec<usize>,
    push_at_s: f64,
    pose_from_s: f64,
    /// The reach joint's error at the first tick at or after its arrival time.
    reach_error_rad: Option<f64>,
    keep_poses: bool,
    /// Bodies other than the feet touching the ground now.
    touching: Vec<u16>,
    fell_at_s: Option<f64>,
    max_tilt_rad: f64,
    pose_sq: f64,
    pose_n: u64,
    external_nm_s: f64,
    dt_s: f64,
    spring_broke_at_s: Option<f64>,
    poses: Vec<PoseSample>,
    next_pose_s: f64,
    limited: u64,
    refused: u64,
    /// The feet and toes (ground-contact order, the frame's first four contacts).
    feet_meter: FeetMeter,
    /// Their soles, the same order.
    soles: Vec<Sole>,
    qp: Option<QpOut>,
    capture: CaptureMeter,
    /// The hand's arrival time and what it did after (a scenario with a hand).
    hand: Option<(f64, HandOut)>,
    /// The balls' hits (a scenario with a pelt).
    balls: Option<BallCount>,
    /// The norm of each joint's torque vector in the last tick (kept with the poses).
    last_torque_norms: Vec<f64>,
    /// The humanoid's joints.
    joints: usize,
}

/// A hand's reach (`qp_balance` with a `[hand]`): its distance from its final target at its
/// arrival time and from then until the push (or the end, unpushed).
#[derive(Debug, Clone, Default, Serialize)]
pub struct HandOut {
    /// At the first tick at or after `hand.arrive_s`, m.
    pub at_arrival_m: Option<f64>,
    /// RMS from then until the push, m.
    pub rms_m: Option<f64>,
    /// Largest from then until the push, m.
    pub max_m: Option<f64>,
    #[serde(skip)]
    sq: f64,
    #[serde(skip)]
    n: u64,
}

/// The instantaneous capture point (Pratt et al.): where the centre of mass, an inverted
/// pendulum of its height, would have to step to stop, `ξ = x + ẋ / ω`, `ω = √(g / h)`,
/// horizontal. Measured against the feet's footprint (the convex hull of every corner of the
/// feet's and toes' soles, projected on the ground: where the centre of pressure could be with
/// the soles flat; a heel that lifts for a moment can come down again) from the push on until
/// the fall or the end: while ξ stays inside it, the ankles alone can stop the body; outside,
/// only angular momentum (the hips, the arms) or a step can.
#[derive(Debug, Clone)]
pub struct CaptureMeter {
    /// Body masses, wire order, kg.
    masses: Vec<f64>,
    /// The feet's and toes' sole corners (`ground_contact_bodies` order).
    soles: Vec<robot_model::humanoid::Sole>,
    /// The push direction, horizontal, unit (zero when vertical).
    direction: Vector3<f64>,
    from_s: f64,
    out: CaptureOut,
}

impl CaptureMeter {
    /// A meter for `model` pushed along `direction` from `from_s`.
    pub fn new(model: &HumanoidModel, direction: [f64; 3], from_s: f64) -> Result<Self, String> {
        let d = Vector3::new(direction[0], 0.0, direction[2]);
        Ok(Self {
            masses: model.bodies.iter().map(|b| b.mass_kg).collect(),
            soles: robot_model::humanoid::soles(model)?,
            direction: if d.norm() > 0.0 { d.normalize() } else { d },
            from_s,
            out: CaptureOut::default(),
        })
    }

    fn frame(&mut self, time_s: f64, bodies: &[control_core::frames::BodyMotion]) {
        if time_s < self.from_s {
            return;
        }
        let (mut m, mut x, mut v) = (0.0, Vector3::zeros(), Vector3::zeros());
        for (b, mass) in bodies.iter().zip(&self.masses) {
            m += mass;
            x += Vector3::from(b.com_m) * *mass;
            v += Vector3::from(b.velocity_m_s) * *mass;
        }
        // The ground is y = 0, y up (the scene's gravity is −y).
        if !(m > 0.0 && x.y > 0.0) {
            self.out.margin(time_s, None);
            return;
        }
        let (x, v) = (x / m, v / m);
        let omega = (-GRAVITY_M_S2[1] / x.y).sqrt();
        let xi = x + v / omega;
        let mut corners = Vec::with_capacity(12);
        for sole in &self.soles {
            for p in world_corners(sole, bodies).into_iter().flatten() {
                corners.push([p.x, p.z]);
            }
        }
        self.out.speed(v.dot(&self.direction));
        if self.out.front_at_push_m.is_none() && !corners.is_empty() {
            let front = corners
                .iter()
                .map(|c| c[0] * self.direction.x + c[1] * self.direction.z)
                .fold(f64::NEG_INFINITY, f64::max);
            self.out.at_push(front - xi.dot(&self.direction), omega);
        }
        self.out
            .margin(time_s, support_margin(&corners, [xi.x, xi.z]));
    }
}

/// The signed distance from `p` to the edge of the convex hull of `points` (2D): positive
/// inside, negative outside; a hull of one or two points has no inside. `None` without
/// points or with a non-finite one.
pub fn support_margin(points: &[[f64; 2]], p: [f64; 2]) -> Option<f64> {
    if points.is_empty() || !points.iter().flatten().chain(&p).all(|c| c.is_finite()) {
        return None;
    }
    // Andrew's monotone chain, counter-clockwise.
    let mut sorted = points.to_vec();
    sorted.sort_by(|a, b| a[0].total_cmp(&b[0]).then(a[1].total_cmp(&b[1])));
    sorted.dedup();
    let cross = |o: [f64; 2], a: [f64; 2], b: [f64; 2]| {
        (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])
    };
    let mut hull: Vec<[f64; 2]> = Vec::with_capacity(2 * sorted.len());
    for pass in 0..2 {
        let start = hull.len();
        let points: Box<dyn Iterator<Item = &[f64; 2]>> = if pass == 0 {
            Box::new(sorted.iter())
        } else {
            Box::new(sorted.iter().rev())
        };
        for &q in points {
            while hull.len() >= start + 2
                && cross(hull[hull.len() - 2], hull[hull.len() - 1], q) <= 0.0
            {
                hull.pop();
            }
            hull.push(q);
        }
        hull.pop();
    }
    let distance_to_segment = |a: [f64; 2], b: [f64; 2]| {
        let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
        let len2 = dx * dx + dy * dy;
        let t = if len2 > 0.0 {
            (((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / len2).clamp(0.0, 1.0)
        } else {
            0.0
        };
        (p[0] - a[0] - t * dx).hypot(p[1] - a[1] - t * dy)
    };
    let n = hull.len();
    if n == 0 {
        // One distinct point: the loop pops it.
        return sorted.first().map(|a| -(p[0] - a[0]).hypot(p[1] - a[1]));
    }
    let mut nearest = f64::INFINITY;
    let mut inside = n >= 3;
    for k in 0..n {
        let (a, b) = (hull[k], hull[(k + 1) % n]);
        nearest = nearest.min(distance_to_segment(a, b));
        if cross(a, b, p) < 0.0 {
            inside = false;
        }
    }
    Some(if inside { nearest } else { -nearest })
}

/// Each sole's corners' centroid along the ground (world x, z: the scene is y-up), in `soles`
/// order; `None` if a sole's body is not among `bodies`.
fn sole_centroids(
    soles: &[Sole],
    bodies: &[control_core::frames::BodyMotion],
) -> Option<Vec<[f64; 2]>> {
    soles
        .iter()
        .map(|sole| {
            let (mut sum, mut n) = (Vector3::zeros(), 0.0);
            for p in world_corners(sole, bodies)? {
                sum += p;
                n += 1.0;
            }
            (n > 0.0).then(|| [sum.x / n, sum.z / n])
        })
        .collect()
}

/// A sole's corners in the world from its body's motion among `bodies` (`None`: the body is not
/// there).
fn world_corners<'a>(
    sole: &'a Sole,
    bodies: &[control_core::frames::BodyMotion],
) -> Option<impl Iterator<Item = Vector3<f64>> + 'a> {
    let b = bodies.get(sole.body)?;
    let [w, i, j, k] = b.orientation;
    let r = UnitQuaternion::new_normalize(control_core::articulated::nalgebra::Quaternion::new(
        w, i, j, k,
    ));
    let com = Vector3::from(b.com_m);
    Some(
        sole.corners_from([0.0; 3])
            .map(move |c| com + r * Vector3::from(c)),
    )
}

/// What `qp_balance`'s QP did over a run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct QpOut {
    /// Ticks.
    pub ticks: u64,
    /// Ticks solved.
    pub solved: u64,
    /// Ticks that fell back, by reason (`NotSolved(PrimalInfeasible)`, …).
    pub fallbacks: std::collections::BTreeMap<String, u64>,
    /// Most interior-point iterations of a tick (all its solves).
    pub max_iterations: u32,
    /// Mean iterations per tick.
    pub mean_iterations: f64,
    /// Largest ‖f_t‖ / (μ f_n) of the forces the QP chose (μ = its own, 0.7).
    pub max_friction_use: f64,
    /// Ticks solved more than once: a joint group whose torque limit was left out came out
    /// past its effort, and the QP was solved again with that limit in.
    pub resolved_ticks: u64,
    /// Mean joint groups per tick whose torque limits were left out of the QP (their torques
    /// checked within their efforts after the solve).
    pub mean_limits_left_out: f64,
    /// Recovery steps taken (`[qp_balance] step`).
    pub steps: u32,
    /// The longest of them, m (how far the foot moved; 0 without a step).
    pub longest_step_m: f64,
    /// Ticks with a foot in the air, stepping.
    pub swing_ticks: u64,
}

impl QpOut {
    /// Counts one tick.
    pub fn add(&mut self, t: &controller::QpTick) {
        self.ticks += 1;
        if t.status == control_core::balance::BalanceStatus::Solved {
            self.solved += 1;
        } else {
            *self.fallbacks.entry(format!("{:?}", t.status)).or_insert(0) += 1;
        }
        self.max_iterations = self.max_iterations.max(t.iterations);
        let n = self.ticks as f64;
        self.mean_iterations += (f64::from(t.iterations) - self.mean_iterations) / n;
        self.max_friction_use = self.max_friction_use.max(t.friction_use);
        if t.solves > 1 {
            self.resolved_ticks += 1;
        }
        self.mean_limits_left_out += (f64::from(t.limits_left_out) - self.mean_limits_left_out) / n;
        (self.steps, self.longest_step_m) = t.steps;
        self.swing_ticks += u64::from(t.swinging);
    }
}

/// What the humanoid's recorder measured of one run (inside the [`Run`] every kind's run is).
#[derive(Debug)]
pub struct DynamoRun {
    /// When it fell (none: it did not fall while it ran; see [`DynamoRun::stood`]).
    pub fell_at_s: Option<f64>,
    /// The torso's largest tilt from vertical, rad.
    pub max_tilt_rad: f64,
    /// RMS pose error over joints and time (reach arrival → push), rad.
    pub pose_error_rad: Option<f64>,
    /// The reach joint's angle from its target at its arrival time (the first tick at or after
    /// it), rad.
    pub reach_error_at_arrival_rad: Option<f64>,
    /// ∫|τ_root| dt, N·m·s.
    pub external_nm_s: f64,
    /// When the root spring broke.
    pub spring_broke_at_s: Option<f64>,
    /// Joint-ticks whose torque the limit cut.
    pub limited: u64,
    /// Joint-ticks whose servo refused its input.
    pub refused: u64,
    /// The ground's forces on the feet and toes, and their motion.
    pub feet: FeetOut,
    /// `qp_balance`'s QP.
    pub qp: Option<QpOut>,
    /// The capture point against the support.
    pub capture: CaptureOut,
    /// The hand's reach (a scenario with a hand).
    pub hand: Option<HandOut>,
    /// The balls (a scenario with a pelt).
    pub balls: Option<BallsOut>,
    /// Poses for the animation: (time, state, ground forces on feet and toes).
    pub poses: Vec<PoseSample>,
}

fn tilt_of(b: &control_core::frames::BodyMotion) -> f64 {
    let [w, x, y, z] = b.orientation;
    let q = UnitQuaternion::new_normalize(control_core::articulated::nalgebra::Quaternion::new(
        w, x, y, z,
    ));
    let up = q * Vector3::y();
    up.y.clamp(-1.0, 1.0).acos()
}

impl DynamoRun {
    /// Whether it stood to its end: `Some(false)` when it fell (even if cut afterwards) or
    /// ended falling (its capture point outside its support), `Some(true)` when it reached its
    /// end standing, `None` when it was `cut` before its end without having fallen (not
    /// judged).
    pub fn stood(&self, cut: Option<&Cut>) -> Option<bool> {
        match (self.fell_at_s, cut) {
            (Some(_), _) => Some(false),
            (None, None) => Some(self.capture.end_margin_m.is_some_and(|m| m >= 0.0)),
            (None, Some(_)) => None,
        }
    }
}

/// The value, or empty, for `runs.csv`.
fn csv_f64(v: Option<f64>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// `1`, `0`, or empty (not judged), for `runs.csv`.
fn csv_bool(b: Option<bool>) -> String {
    b.map_or(String::new(), |b| u8::from(b).to_string())
}

impl KindRecorder<DynamoController> for DynamoRecorder {
    type Outcome = DynamoRun;

    fn state(
        &mut self,
        frame: &StateFrame,
        state: &HumanoidState,
        previous: Option<&HumanoidState>,
    ) {
        for e in &frame.events {
            match *e {
                Event::ContactBegan { body } if body.0 >= sim_host::humanoid::FIRST_BALL_ID => {
                    if let Some(b) = self.balls.as_mut() {
                        b.touched(body.0, self.fell_at_s.is_some());
                    }
                }
                Event::ContactBegan { body }
                    if !self.feet.contains(&usize::from(body.0))
                        && !self.touching.contains(&body.0) =>
                {
                    self.touching.push(body.0);
                }
                Event::ContactEnded { body } => self.touching.retain(|b| *b != body.0),
                _ => {}
            }
        }
        let s = *state;
        if self.fell_at_s.is_none() {
            self.capture.frame(
                frame.sim_time_s,
                s.bodies.get(..s.body_count).unwrap_or(&[]),
            );
            let mut feet = [FootForce {
                touching: false,
                friction_use: 0.0,
            }; 4];
            for (foot, c) in feet.iter_mut().zip(frame.contacts.iter().take(4)) {
                let [x, y, z] = c.force_n;
                foot.touching = y > 0.0;
                if foot.touching {
                    foot.friction_use = (x * x + z * z).sqrt() / (sim_host::humanoid::FRICTION * y);
                }
            }
            let count = frame.contacts.len().min(4);
            let at = sole_centroids(&self.soles, s.bodies.get(..s.body_count).unwrap_or(&[]));
            let dt = previous.map_or(0.0, |l| s.sim_time_s - l.sim_time_s);
            self.feet_meter.state(
                &feet[..count],
                at.as_ref().map(|a| &a[..count.min(a.len())]),
                dt,
                frame.step > 1,
            );
        }
        if let Some(torso) = frame.bodies.get(self.torso) {
            let tilt = tilt_of(torso);
            self.max_tilt_rad = self.max_tilt_rad.max(tilt);
            if self.fell_at_s.is_none() && (tilt > self.fall_tilt_rad || !self.touching.is_empty())
            {
                self.fell_at_s = Some(frame.sim_time_s);
            }
        }
        if self.keep_poses && frame.sim_time_s >= self.next_pose_s {
            self.next_pose_s = frame.sim_time_s + 0.02 - 1e-9;
            let mut forces = [[0.0; 3]; 4];
            for (f, c) in forces.iter_mut().zip(&frame.contacts) {
                *f = c.force_n;
            }
            self.poses.push(PoseSample {
                time_s: frame.sim_time_s,
                state: s,
                forces,
                torque_norms_nm: self.last_torque_norms.clone(),
            });
        }
    }

    fn tick(&mut self, c: &DynamoTick, _last: Option<&HumanoidState>) {
        if self.keep_poses {
            torque_norms_into(&c.torques_nm, self.joints, &mut self.last_torque_norms);
        }
        self.limited += u64::from(c.limited);
        self.refused += u64::from(c.refused);
        if let Some(t) = &c.qp {
            self.qp.get_or_insert_with(QpOut::default).add(t);
        }
        self.external_nm_s += c.root_torque_nm * self.dt_s;
        if c.spring == Some(SpringState::Broken) && self.spring_broke_at_s.is_none() {
            self.spring_broke_at_s = Some(c.time_s);
        }
        if self.reach_error_rad.is_none() && !c.safe && c.time_s >= self.pose_from_s {
            self.reach_error_rad = c.reach_error_rad;
        }
        if let (Some((arrive_s, h)), Some(e)) = (self.hand.as_mut(), c.hand_error_m)
            && !c.safe
            && c.time_s >= *arrive_s
            && (c.time_s < self.push_at_s || self.push_at_s <= *arrive_s)
        {
            if h.at_arrival_m.is_none() {
                h.at_arrival_m = Some(e);
            }
            h.sq += e * e;
            h.n += 1;
            h.rms_m = Some((h.sq / h.n as f64).sqrt());
            h.max_m = Some(h.max_m.map_or(e, |m: f64| m.max(e)));
        }
        if !c.safe && c.joints > 0 && c.time_s >= self.pose_from_s && c.time_s < self.push_at_s {
            self.pose_sq += c.pose_error_sq_sum;
            self.pose_n += u64::from(c.joints);
        }
    }

    fn finish(self, _last: Option<&HumanoidState>) -> DynamoRun {
        DynamoRun {
            fell_at_s: self.fell_at_s,
            max_tilt_rad: self.max_tilt_rad,
            pose_error_rad: (self.pose_n > 0).then(|| (self.pose_sq / self.pose_n as f64).sqrt()),
            reach_error_at_arrival_rad: self.reach_error_rad,
            external_nm_s: self.external_nm_s,
            spring_broke_at_s: self.spring_broke_at_s,
            limited: self.limited,
            refused: self.refused,
            feet: self.feet_meter.out().clone(),
            qp: self.qp,
            capture: self.capture.out,
            hand: self.hand.map(|(_, h)| h),
            balls: self.balls.map(|b| b.out()),
            poses: self.poses,
        }
    }
}

/// One push run in the report.
#[derive(Debug, Clone, Serialize)]
pub struct PushOut {
    /// The impulse, N·s.
    pub impulse_ns: f64,
    /// Whether it still stood `after_push_s` after the push began; `None` (`null`): not judged,
    /// the run was cut short (see the report's `incomplete_reason`) before that without having
    /// fallen.
    pub stood: Option<bool>,
    /// When it fell.
    pub fell_at_s: Option<f64>,
    /// The torso's largest tilt, rad.
    pub max_torso_tilt_rad: f64,
    /// ∫|τ_root| dt, N·m·s.
    pub external_torque_nm_s: f64,
    /// When the root spring broke.
    pub spring_broke_at_s: Option<f64>,
    /// Joint-ticks cut by a torque limit.
    pub limited_joint_ticks: u64,
    /// Joint-ticks whose servo refused its input (damping sent instead).
    pub refused_joint_ticks: u64,
    /// The ground's forces on the feet and toes, and their motion, until the fall.
    pub feet: FeetOut,
    /// `qp_balance` only: its QP.
    pub qp: Option<QpOut>,
    /// The capture point against the support, from the push until the fall.
    pub capture: CaptureOut,
    /// `qp_balance` with a `[hand]`: the hand's reach.
    pub hand: Option<HandOut>,
    /// With a `[pelt]`: the balls thrown and those that hit.
    pub balls: Option<BallsOut>,
}

/// One controller in the report.
#[derive(Debug, Clone, Serialize)]
pub struct ControllerOut {
    /// Name.
    pub name: &'static str,
    /// The largest impulse after which it still stood, every smaller one judged and stood too,
    /// N·s; runs not judged count as not stood. `None` (`null`): not even the smallest stood,
    /// or it was not judged (its `pushes[0].stood` is then `null`).
    pub largest_push_survived_ns: Option<f64>,
    /// RMS pose error while standing (the unpushed or smallest-impulse run, nominal gains), rad.
    pub pose_error_rad: Option<f64>,
    /// The reach joint's angle from its target at the reach's arrival time (the same run), rad:
    /// whether the arm got there on time.
    pub reach_error_at_arrival_rad: Option<f64>,
    /// The root spring's external torque integral in the run of the largest impulse survived
    /// (0 without a spring), N·m·s.
    pub external_torque_nm_s: f64,
    /// The smallest impulse at which the root spring broke, N·s.
    pub spring_broke_at_impulse_ns: Option<f64>,
    /// Controller tick, µs.
    pub tick_us: Option<Percentiles>,
    /// Plant step, µs.
    pub plant_step_us: Option<Percentiles>,
    /// Every push run.
    pub pushes: Vec<PushOut>,
}

/// One gain-sweep run in the report.
#[derive(Debug, Clone, Serialize)]
pub struct SweepOut {
    /// Controller.
    pub controller: &'static str,
    /// The joints scaled: `"upper_body"` or `"all_joints"`.
    pub scope: &'static str,
    /// Gain scale.
    pub gain_scale: f64,
    /// RMS pose error while standing, rad.
    pub pose_error_rad: Option<f64>,
    /// Whether it fell (unpushed); `None` (`null`): not judged, the run was cut short (see the
    /// report's `incomplete_reason`) before its end without having fallen.
    pub fell: Option<bool>,
    /// The torso's largest tilt, rad.
    pub max_torso_tilt_rad: f64,
    /// Joint-ticks whose torque the joint's limit cut (a servo saturating, e.g. chattering).
    pub limited_joint_ticks: u64,
}

/// `report.json` of a Dynamo run.
#[derive(Debug, Clone, Serialize)]
pub struct DynamoReport {
    /// Completeness, scenario, kind and mode.
    #[serde(flatten)]
    pub header: ReportHeader,
    /// The URDF.
    pub urdf: String,
    /// Total mass, kg.
    pub mass_kg: f64,
    /// The push: body, direction, start, duration.
    pub push: (String, [f64; 3], f64, f64),
    /// The root spring.
    pub root_spring: SpringSpec,
    /// The scenario's `[qp_balance]` settings, when it has the table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qp_balance: Option<QpBalanceSpec>,
    /// Per controller.
    pub controllers: Vec<ControllerOut>,
    /// The gain sweep.
    pub gain_sweep: Vec<SweepOut>,
}

/// Run every selected controller of `scenario`, writing into `staging`.
pub fn run_scenario(
    args: &RunArgs,
    scenario: &DynamoScenario,
    file: &str,
    staging: &Path,
    stop: &StopFlag,
) -> Result<Finished, Box<dyn std::error::Error>> {
    let laws = select(&args.only, &scenario.laws(), DynamoLaw::name)?;
    let model = HumanoidModel::load(&scenario.urdf).map_err(|e| e.to_string())?;
    let (roles, sides) = scenario
        .parts(&model)
        .map_err(|(field, reason)| format!("{field}: {reason}"))?;
    let reach = scenario.reach(&model).ok_or("reach.joint is no joint")?;
    let period = scenario.period_s();
    let scopes: Vec<GainScope> = scenario
        .gain_scopes
        .iter()
        .filter_map(|s| GainScope::from_name(s))
        .collect();
    let build = |law: DynamoLaw, scale: f64, scope: GainScope| {
        DynamoController::new(
            law,
            (&model, &roles),
            (scale, scope),
            Some(reach),
            (scenario.root_spring.into(), scenario.qp_balance),
            period,
            GRAVITY_M_S2,
        )
        .map_err(|e| format!("controller {}: {e}", law.name()))
    };
    for &law in &laws {
        build(law, 1.0, GainScope::AllJoints)?;
    }
    let torso = model.body_index(&scenario.push_body).unwrap_or(0);
    let feet: Vec<usize> = model.ground_contact_bodies.to_vec();
    let capture = CaptureMeter::new(&model, scenario.push_direction, scenario.push_at_s)?;
    let soles = robot_model::humanoid::soles(&model)?;
    let qp_log = match &args.record_qp {
        Some(path) => Some(balance::QpLogFile::create(path)?),
        None => None,
    };
    let build = |law: DynamoLaw, scale: f64, scope: GainScope, run: String| {
        let mut c = build(law, scale, scope)?;
        if let Some(hand) = &scenario.hand {
            c.reach_with_hand(hand, &model)?;
        }
        if let Some(file) = &qp_log {
            let every = args.record_qp_every.unwrap_or(balance::RECORD_EVERY);
            c.record_qp(balance::QpLog::new(file, run, every));
        }
        Ok::<_, String>(c)
    };
    let scenes = staging.join("scenes");
    std::fs::create_dir_all(&scenes)?;
    let plant = plant::plant_executable()?;
    let run_one = |name: &'static str,
                   controller: DynamoController,
                   impulse: f64,
                   keep_poses: bool,
                   tag: &str|
     -> Result<(Run<DynamoRun>, Option<Cut>), Box<dyn std::error::Error>> {
        let scene_file = scenes.join(format!("{tag}.json"));
        let mut scene = scenario.scene(impulse);
        scene.urdf = std::fs::canonicalize(&scene.urdf).unwrap_or(scene.urdf);
        std::fs::write(&scene_file, serde_json::to_string_pretty(&scene)?)?;
        let recorder = DynamoRecorder {
            fall_tilt_rad: scenario.fall_tilt_rad,
            torso,
            feet: feet.clone(),
            push_at_s: scenario.push_at_s,
            pose_from_s: scenario.reach.arrive_s,
            reach_error_rad: None,
            keep_poses,
            touching: Vec::new(),
            fell_at_s: None,
            max_tilt_rad: 0.0,
            pose_sq: 0.0,
            pose_n: 0,
            external_nm_s: 0.0,
            dt_s: period,
            spring_broke_at_s: None,
            poses: Vec::new(),
            next_pose_s: 0.0,
            limited: 0,
            refused: 0,
            feet_meter: FeetMeter::new(4),
            soles: soles.clone(),
            qp: None,
            capture: capture.clone(),
            hand: scenario
                .hand
                .as_ref()
                .map(|h| (h.arrive_s, HandOut::default())),
            last_torque_norms: Vec::new(),
            joints: model.joints.len(),
            balls: scenario.pelt.as_ref().map(|p| BallCount::new(p.count)),
        };
        let (run, cut) = run_session(
            args,
            controller,
            recorder,
            name,
            ((&plant.0, &plant.1), &scene_file),
            Periods {
                control_s: period,
                state_s: period,
            },
            stop,
        )?;
        Ok((run, cut))
    };
    let mut controllers = Vec::new();
    let mut sweep = Vec::new();
    let mut first_timing: Option<Timing> = None;
    let mut faults = Vec::new();
    let mut latencies: Vec<(&'static str, LatencyHistogram)> = Vec::new();
    let mut cut: Option<(String, Cut)> = None;
    let mut gif: Option<Vec<PoseSample>> = None;
    let mut qp_gif: Option<Vec<PoseSample>> = None;
    let mut replay_runs = Vec::new();
    super::plan_runs(
        laws.len() * (scenario.impulses_ns.len() + scopes.len() * scenario.gain_scales.len()),
    );
    let mut csv = String::from(
        "controller,kind,impulse_ns,gain_scale,stood,fell_at_s,max_torso_tilt_rad,pose_error_rad,external_torque_nm_s,spring_broke_at_s,limited_joint_ticks,min_capture_margin_m,end_capture_margin_m\n",
    );
    'laws: for &law in &laws {
        let mut pushes = Vec::new();
        let mut pose_error = (None, None);
        let mut tick_us = None;
        let mut plant_step_us = None;
        // The poses of the largest push survived (every smaller one too) and of the first fall:
        // the animations and the replay show them.
        let mut survived_poses: Option<(f64, Vec<PoseSample>)> = None;
        let mut fall_poses: Option<(f64, Vec<PoseSample>)> = None;
        let mut all_stood = true;
        for (k, &impulse) in scenario.impulses_ns.iter().enumerate() {
            let keep = all_stood || fall_poses.is_none();
            let (run, run_cut) = run_one(
                law.name(),
                build(
                    law,
                    1.0,
                    GainScope::AllJoints,
                    format!("{} push {impulse}", law.name()),
                )?,
                impulse,
                keep,
                &format!("{}_{k}", law.name()),
            )?;
            if first_timing.is_none() {
                first_timing = Some(run.timing.clone());
            }
            if k == 0 {
                pose_error = (run.kind.pose_error_rad, run.kind.reach_error_at_arrival_rad);
                tick_us = run.timing.compute_us;
                plant_step_us = run.plant_step_us;
                latencies.push((law.name(), run.latency.clone()));
            }
            let out = PushOut {
                impulse_ns: impulse,
                stood: run.kind.stood(run_cut.as_ref()),
                fell_at_s: run.kind.fell_at_s,
                max_torso_tilt_rad: run.kind.max_tilt_rad,
                external_torque_nm_s: run.kind.external_nm_s,
                spring_broke_at_s: run.kind.spring_broke_at_s,
                limited_joint_ticks: run.kind.limited,
                refused_joint_ticks: run.kind.refused,
                feet: run.kind.feet.clone(),
                qp: run.kind.qp.clone(),
                capture: run.kind.capture.clone(),
                hand: run.kind.hand.clone(),
                balls: run.kind.balls.clone(),
            };
            csv.push_str(&format!(
                "{},push,{},1,{},{},{},{},{},{},{},{},{}\n",
                law.name(),
                impulse,
                csv_bool(out.stood),
                out.fell_at_s.map_or(String::new(), |t| t.to_string()),
                out.max_torso_tilt_rad,
                run.kind
                    .pose_error_rad
                    .map_or(String::new(), |e| e.to_string()),
                out.external_torque_nm_s,
                out.spring_broke_at_s
                    .map_or(String::new(), |t| t.to_string()),
                out.limited_joint_ticks,
                csv_f64(out.capture.min_margin_m),
                csv_f64(out.capture.end_margin_m),
            ));
            all_stood &= out.stood == Some(true);
            if all_stood {
                survived_poses = Some((impulse, run.kind.poses));
            } else if out.stood == Some(false) && fall_poses.is_none() {
                fall_poses = Some((impulse, run.kind.poses));
            }
            faults.push(run.faults);
            pushes.push(out);
            if let Some(c) = run_cut {
                cut = Some((format!("{} at {impulse} N·s", law.name()), c));
                controllers.push(summarise(law, pushes, pose_error, tick_us, plant_step_us));
                break 'laws;
            }
        }
        if law == DynamoLaw::WorldSpaceRootSpring && gif.is_none() {
            gif = fall_poses.as_ref().map(|(_, p)| p.clone());
        }
        if law == DynamoLaw::QpBalance {
            qp_gif = survived_poses.as_ref().map(|(_, p)| p.clone());
        }
        for (impulse, poses) in [survived_poses, fall_poses].into_iter().flatten() {
            replay_runs.push(crate::replay::humanoid::Run {
                name: law.name(),
                impulse_ns: impulse,
                samples: poses,
            });
        }
        controllers.push(summarise(law, pushes, pose_error, tick_us, plant_step_us));
        for (&scope, &scale) in scopes
            .iter()
            .flat_map(|s| scenario.gain_scales.iter().map(move |g| (s, g)))
        {
            let (run, run_cut) = run_one(
                law.name(),
                build(
                    law,
                    scale,
                    scope,
                    format!("{} gain {} {scale}", law.name(), scope.name()),
                )?,
                0.0,
                false,
                &format!("{}_gain_{}_{scale}", law.name(), scope.name()),
            )?;
            csv.push_str(&format!(
                "{},gain_{},0,{scale},{},{},{},{},{},{},{},{},{}\n",
                law.name(),
                scope.name(),
                csv_bool(run.kind.stood(run_cut.as_ref())),
                run.kind.fell_at_s.map_or(String::new(), |t| t.to_string()),
                run.kind.max_tilt_rad,
                run.kind
                    .pose_error_rad
                    .map_or(String::new(), |e| e.to_string()),
                run.kind.external_nm_s,
                run.kind
                    .spring_broke_at_s
                    .map_or(String::new(), |t| t.to_string()),
                run.kind.limited,
                csv_f64(run.kind.capture.min_margin_m),
                csv_f64(run.kind.capture.end_margin_m),
            ));
            sweep.push(SweepOut {
                controller: law.name(),
                scope: scope.name(),
                gain_scale: scale,
                pose_error_rad: run.kind.pose_error_rad,
                fell: run.kind.stood(run_cut.as_ref()).map(|stood| !stood),
                max_torso_tilt_rad: run.kind.max_tilt_rad,
                limited_joint_ticks: run.kind.limited,
            });
            faults.push(run.faults);
            if let Some(c) = run_cut {
                cut = Some((
                    format!("{} at gain scale {scale} ({})", law.name(), scope.name()),
                    c,
                ));
                break 'laws;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scenes);
    if let Some(file) = &qp_log {
        let lines = file
            .lock()
            .map_err(|_| "--record-qp: the recording's lock is poisoned".to_string())?
            .finish()?;
        if !args.quiet {
            eprintln!("hil: recorded {lines} qp_balance QPs (--record-qp)");
        }
    }
    std::fs::write(
        staging.join("scene.json"),
        serde_json::to_string_pretty(&scenario.scene(0.0))?,
    )?;
    std::fs::write(staging.join("runs.csv"), csv)?;
    let d = scenario.push_direction;
    let report = DynamoReport {
        header: ReportHeader::new(
            cut.as_ref().map(|(what, c)| (what.clone(), c)),
            &scenario.name,
            file,
            KIND,
            args.mode,
        )
        .with_runs(
            Some(scenario.control_rate_hz),
            first_timing.unwrap_or_default(),
            Faults::sum(faults.iter()),
        ),
        urdf: scenario.urdf.display().to_string(),
        mass_kg: model.total_mass_kg(),
        push: (
            scenario.push_body.clone(),
            d,
            scenario.push_at_s,
            scenario.push_duration_s,
        ),
        root_spring: scenario.root_spring,
        qp_balance: scenario.qp_balance,
        controllers,
        gain_sweep: sweep,
    };
    std::fs::write(
        staging.join("report.json"),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    tilt_plot(&staging.join("tilt.svg"), &report)?;
    pose_error_plot(&staging.join("pose_error.svg"), &report)?;
    latency_histogram(
        &staging.join("latency.svg"),
        match args.mode {
            Mode::Realtime => "control-thread wake-up latency (unpushed runs)",
            Mode::Lockstep => "round trip (torque sent → next state received), unpushed runs",
        },
        &latencies.iter().map(|(n, l)| (*n, l)).collect::<Vec<_>>(),
    )?;
    let mut files = vec![
        "report.json",
        "runs.csv",
        "tilt.svg",
        "pose_error.svg",
        "latency.svg",
        "scene.json",
    ];
    if let Some(poses) = gif.filter(|p| !p.is_empty()) {
        write_humanoid_gif(&staging.join("push.gif"), (&model, &sides), &poses, None)?;
        files.push("push.gif");
    }
    if let Some(poses) = qp_gif.filter(|p| !p.is_empty()) {
        write_humanoid_gif(
            &staging.join("qp_balance.gif"),
            (&model, &sides),
            &poses,
            None,
        )?;
        files.push("qp_balance.gif");
    }
    if !replay_runs.is_empty() {
        crate::replay::humanoid::write(
            &staging.join("replay.html"),
            scenario,
            &model,
            &report,
            &replay_runs,
        )?;
        files.push("replay.html");
    }
    Ok(Finished {
        summary: summary_table(&report),
        incomplete_reason: report.header.incomplete_reason.clone(),
        files,
    })
}

fn summarise(
    law: DynamoLaw,
    pushes: Vec<PushOut>,
    (pose_error_rad, reach_error_at_arrival_rad): (Option<f64>, Option<f64>),
    tick_us: Option<Percentiles>,
    plant_step_us: Option<Percentiles>,
) -> ControllerOut {
    // The largest impulse after which it still stands, every smaller one stood too.
    let survived: Vec<&PushOut> = pushes
        .iter()
        .take_while(|p| p.stood == Some(true))
        .collect();
    ControllerOut {
        name: law.name(),
        largest_push_survived_ns: survived.last().map(|p| p.impulse_ns),
        pose_error_rad,
        reach_error_at_arrival_rad,
        external_torque_nm_s: survived.last().map_or(0.0, |p| p.external_torque_nm_s),
        spring_broke_at_impulse_ns: pushes
            .iter()
            .find(|p| p.spring_broke_at_s.is_some())
            .map(|p| p.impulse_ns),
        tick_us,
        plant_step_us,
        pushes,
    }
}

/// The console's "max push survived" cell: the impulse, `none`, or `not judged` when the first
/// push was not judged.
fn survived_cell(c: &ControllerOut) -> String {
    match (
        c.largest_push_survived_ns,
        c.pushes.first().map(|p| p.stood),
    ) {
        (Some(v), _) => format!("{v}"),
        (None, Some(None)) => "not judged".into(),
        (None, _) => "none".into(),
    }
}

/// The console's table.
pub fn summary_table(r: &DynamoReport) -> String {
    let mut out = format!(
        "{} ({} Hz, {}):\n| controller | max push survived N·s | pose error rad | reach error at arrival rad | root torque N·m·s | spring broke at N·s | tick µs | plant step µs |\n|---|---|---|---|---|---|---|---|\n",
        r.header.scenario,
        r.header.control_rate_hz.unwrap_or_default(),
        r.header.mode
    );
    for c in &r.controllers {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {:.1} | {} | {} | {} |\n",
            c.name,
            survived_cell(c),
            c.pose_error_rad.map_or("-".into(), |v| format!("{v:.4}")),
            c.reach_error_at_arrival_rad
                .map_or("-".into(), |v| format!("{v:.4}")),
            c.external_torque_nm_s,
            c.spring_broke_at_impulse_ns
                .map_or("-".into(), |v| format!("{v}")),
            c.tick_us.map_or("-".into(), |p| format!("{:.2}", p.p50)),
            c.plant_step_us
                .map_or("-".into(), |p| format!("{:.1}", p.p50)),
        ));
    }
    for c in &r.controllers {
        for p in &c.pushes {
            if let Some(b) = &p.balls {
                out.push_str(&b.summary_line(c.name, p.impulse_ns, p.stood));
            }
        }
    }
    out.push_str(
        "\ngain sweep (unpushed): pose error rad (× fell); the joints scaled\n| controller | joints |",
    );
    let mut scales: Vec<f64> = r.gain_sweep.iter().map(|s| s.gain_scale).collect();
    scales.dedup();
    scales.sort_by(f64::total_cmp);
    scales.dedup();
    for s in &scales {
        out.push_str(&format!(" {s}× |"));
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---|".repeat(scales.len()));
    out.push('\n');
    let mut rows: Vec<(&str, &str)> = Vec::new();
    for g in &r.gain_sweep {
        if !rows.contains(&(g.scope, g.controller)) {
            rows.push((g.scope, g.controller));
        }
    }
    rows.sort_by_key(|(scope, _)| GainScope::ALL.iter().position(|s| s.name() == *scope));
    for (scope, controller) in rows {
        out.push_str(&format!("| {controller} | {scope} |"));
        for s in &scales {
            let cell = r
                .gain_sweep
                .iter()
                .find(|g| g.controller == controller && g.scope == scope && g.gain_scale == *s)
                .map_or("-".into(), |g| {
                    format!(
                        "{}{}",
                        g.pose_error_rad.map_or("-".into(), |e| format!("{e:.3}")),
                        match g.fell {
                            Some(true) => " ×",
                            Some(false) => "",
                            None => " (not judged)",
                        }
                    )
                });
            out.push_str(&format!(" {cell} |"));
        }
        out.push('\n');
    }
    out
}

/// `tilt.svg`: the torso's largest tilt against the push impulse, per controller; a fall marked
/// with a cross, the root spring's break with a circle.
fn tilt_plot(path: &Path, r: &DynamoReport) -> PlotResult {
    let max_i = r
        .controllers
        .iter()
        .flat_map(|c| c.pushes.iter().map(|p| p.impulse_ns))
        .fold(0.0, f64::max);
    if r.controllers.iter().all(|c| c.pushes.is_empty()) {
        return no_samples(path, (1000, 480), "max torso tilt", "no run");
    }
    let root = SVGBackend::new(path, (1000, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "largest torso tilt against push impulse (× fell, ○ root spring broke)",
            ("sans-serif", 18),
        )
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(
            0.0..max_i.max(1.0) * 1.05,
            0.0..std::f64::consts::FRAC_PI_2 * 1.15,
        )?;
    chart
        .configure_mesh()
        .x_desc("push impulse (N·s)")
        .y_desc("largest torso tilt (rad)")
        .draw()?;
    for (c, colour) in r.controllers.iter().zip(COLOURS.iter().cycle()) {
        let colour = *colour;
        let clip = |t: f64| t.min(std::f64::consts::FRAC_PI_2 * 1.1);
        let label = format!("{} (survives {} N·s)", c.name, survived_cell(c));
        chart
            .draw_series(LineSeries::new(
                c.pushes
                    .iter()
                    .map(|p| (p.impulse_ns, clip(p.max_torso_tilt_rad))),
                colour.stroke_width(2),
            ))?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        chart.draw_series(c.pushes.iter().filter(|p| p.stood == Some(false)).map(|p| {
            Cross::new(
                (p.impulse_ns, clip(p.max_torso_tilt_rad)),
                6,
                colour.stroke_width(2),
            )
        }))?;
        chart.draw_series(
            c.pushes
                .iter()
                .filter(|p| p.spring_broke_at_s.is_some())
                .map(|p| {
                    Circle::new(
                        (p.impulse_ns, clip(p.max_torso_tilt_rad)),
                        7,
                        colour.stroke_width(2),
                    )
                }),
        )?;
    }
    crate::run::plot::legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    root.present()?;
    Ok(())
}

/// `pose_error.svg`: RMS pose error against the gain scale, per controller (log–log), a cross
/// where it fell.
fn pose_error_plot(path: &Path, r: &DynamoReport) -> PlotResult {
    let pts: Vec<(&'static str, &'static str, f64, f64, bool)> = r
        .gain_sweep
        .iter()
        .filter_map(|g| {
            g.pose_error_rad
                .filter(|e| e.is_finite() && *e > 0.0)
                .map(|e| (g.controller, g.scope, g.gain_scale, e, g.fell == Some(true)))
        })
        .collect();
    if pts.is_empty() {
        return no_samples(
            path,
            (900, 480),
            "pose error against gain scale",
            "no sweep",
        );
    }
    let (lo_s, hi_s) = pts.iter().fold((f64::INFINITY, 0.0f64), |(a, b), p| {
        (a.min(p.2), b.max(p.2))
    });
    let (lo_e, hi_e) = pts.iter().fold((f64::INFINITY, 0.0f64), |(a, b), p| {
        (a.min(p.3), b.max(p.3))
    });
    let root = SVGBackend::new(path, (900, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "RMS pose error standing against gain scale (× fell; thick: upper body scaled, thin: all joints)",
            ("sans-serif", 18),
        )
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (lo_s * 0.8..hi_s * 1.25).log_scale(),
            (lo_e * 0.5..hi_e * 2.0).log_scale(),
        )?;
    chart
        .configure_mesh()
        .x_desc("gain scale (× nominal)")
        .y_desc("RMS pose error (rad)")
        .draw()?;
    for scope in GainScope::ALL {
        let width = if scope == GainScope::UpperBody { 3 } else { 1 };
        for (c, colour) in r.controllers.iter().zip(COLOURS.iter().cycle()) {
            let colour = *colour;
            let mine: Vec<(f64, f64, bool)> = pts
                .iter()
                .filter(|p| p.0 == c.name && p.1 == scope.name())
                .map(|p| (p.2, p.3, p.4))
                .collect();
            if mine.is_empty() {
                continue;
            }
            chart
                .draw_series(LineSeries::new(
                    mine.iter().map(|p| (p.0, p.1)),
                    colour.stroke_width(width),
                ))?
                .label(format!("{} ({})", c.name, scope.name()))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(width))
                });
            chart.draw_series(
                mine.iter()
                    .filter(|p| p.2)
                    .map(|p| Cross::new((p.0, p.1), 6, colour.stroke_width(2))),
            )?;
        }
    }
    crate::run::plot::legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present()?;
    Ok(())
}

/// `push.gif`: the side view (x forward, y up) of a push: each body's first shape as a bone.
/// An animated side view (x–y) of the humanoid's `poses`, the camera following its centre of
/// mass, frames from `marker` s on (a fall) bordered red.
pub fn write_humanoid_gif(
    path: &Path,
    (model, sides): (&HumanoidModel, &[Option<Side>]),
    poses: &[PoseSample],
    marker: Option<f64>,
) -> Result<(), Box<dyn std::error::Error>> {
    let frames: Vec<Pose> = poses
        .iter()
        .map(
            |PoseSample {
                 time_s: t,
                 state: s,
                 forces,
                 ..
             }| {
                let mut bones = Vec::new();
                for (b, body) in model.bodies.iter().enumerate() {
                    let (Some(m), Some(shape)) = (s.bodies.get(b), body.shapes.first()) else {
                        continue;
                    };
                    let [w, x, y, z] = m.orientation;
                    let q = UnitQuaternion::new_normalize(
                        control_core::articulated::nalgebra::Quaternion::new(w, x, y, z),
                    );
                    let [sw, sx, sy, sz] = shape.orientation;
                    let qs = UnitQuaternion::new_normalize(
                        control_core::articulated::nalgebra::Quaternion::new(sw, sx, sy, sz),
                    );
                    let c = Vector3::new(m.com_m[0], m.com_m[1], m.com_m[2])
                        + q * Vector3::new(shape.center_m[0], shape.center_m[1], shape.center_m[2]);
                    let (half, width) = match shape.geometry {
                        Geometry::Capsule {
                            radius_m,
                            half_length_m,
                        } => (
                            qs * Vector3::new(0.0, 0.0, half_length_m + radius_m),
                            2.0 * radius_m,
                        ),
                        Geometry::Sphere { radius_m } => {
                            (Vector3::new(0.0, radius_m, 0.0), 2.0 * radius_m)
                        }
                        Geometry::Box { half_extents_m: h } => {
                            let k = (0..3).max_by(|a, b| h[*a].total_cmp(&h[*b])).unwrap_or(1);
                            let mut v = Vector3::zeros();
                            v[k] = h[k];
                            let thin = h.iter().copied().fold(f64::INFINITY, f64::min);
                            (qs * v, 2.0 * thin.max(0.02))
                        }
                    };
                    let h = q * half;
                    bones.push(Bone {
                        from_m: [c.x + h.x, c.y + h.y],
                        to_m: [c.x - h.x, c.y - h.y],
                        width_m: width,
                        kind: match sides.get(b).copied().flatten() {
                            Some(Side::Left) => BoneKind::Left,
                            Some(Side::Right) => BoneKind::Right,
                            None => BoneKind::Torso,
                        },
                    });
                }
                let mut mass = 0.0;
                let mut com = [0.0; 2];
                for (b, body) in model.bodies.iter().enumerate() {
                    if let Some(m) = s.bodies.get(b) {
                        mass += body.mass_kg;
                        com[0] += body.mass_kg * m.com_m[0];
                        com[1] += body.mass_kg * m.com_m[1];
                    }
                }
                let forces = model
                    .ground_contact_bodies
                    .iter()
                    .zip(forces)
                    .filter(|(_, f)| f[1] > 0.0)
                    .filter_map(|(&b, f)| {
                        s.bodies.get(b).map(|m| ForceArrow {
                            at_m: [m.com_m[0], 0.0],
                            force_n: [f[0], f[1]],
                        })
                    })
                    .collect();
                Pose {
                    time_s: *t,
                    bones,
                    com_m: [com[0] / mass.max(1e-9), com[1] / mass.max(1e-9)],
                    forces,
                }
            },
        )
        .collect();
    write_gif(
        path,
        &frames,
        &GifSettings {
            view_width_m: 3.2,
            marker,
            ..GifSettings::default()
        },
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spring() -> SpringSpec {
        SpringSpec {
            stiffness_nm_per_rad: 690.0,
            damping_nms_per_rad: 69.0,
            max_torque_nm: 69.0,
            break_torque_nm: 138.0,
        }
    }

    #[test]
    fn the_root_spring_check_agrees_with_control_core_and_names_the_sub_field() {
        assert_eq!(spring().check(), Ok(()));
        // break == max: control-core's RootSpring::new accepts it, so does the scenario.
        let equal = SpringSpec {
            break_torque_nm: 69.0,
            ..spring()
        };
        assert!(control_core::dynamo::RootSpring::new(equal.into()).is_ok());
        assert_eq!(equal.check(), Ok(()));
        for (s, field, says) in [
            (
                SpringSpec {
                    break_torque_nm: 68.0,
                    ..spring()
                },
                "root_spring.break_torque_nm",
                "must be finite and ≥ max_torque_nm (69), got 68",
            ),
            (
                SpringSpec {
                    stiffness_nm_per_rad: -1.0,
                    ..spring()
                },
                "root_spring.stiffness_nm_per_rad",
                "got -1",
            ),
            (
                SpringSpec {
                    damping_nms_per_rad: f64::NAN,
                    ..spring()
                },
                "root_spring.damping_nms_per_rad",
                "got NaN",
            ),
            (
                SpringSpec {
                    max_torque_nm: 0.0,
                    ..spring()
                },
                "root_spring.max_torque_nm",
                "must be finite and > 0, got 0",
            ),
            (
                SpringSpec {
                    max_torque_nm: 1e6,
                    break_torque_nm: 1e7,
                    ..spring()
                },
                "root_spring.max_torque_nm",
                "the plant's root torque limit",
            ),
        ] {
            let Err((f, reason)) = s.check() else {
                panic!("{s:?} accepted");
            };
            assert_eq!(f, field, "{reason}");
            assert!(reason.contains(says), "{reason}");
        }
    }

    #[test]
    fn the_support_margin_is_the_signed_distance_to_the_hull() {
        // Two feet side by side, 0.2 × 0.1 m, 0.1 m apart (hull: 0.2 × 0.3 m).
        let feet = [
            [0.0, 0.0],
            [0.2, 0.0],
            [0.0, 0.1],
            [0.2, 0.1],
            [0.0, 0.2],
            [0.2, 0.2],
            [0.0, 0.3],
            [0.2, 0.3],
        ];
        let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-12;
        assert!(close(support_margin(&feet, [0.1, 0.15]), 0.1));
        assert!(close(support_margin(&feet, [0.15, 0.15]), 0.05));
        assert!(close(support_margin(&feet, [0.25, 0.15]), -0.05));
        assert!(close(support_margin(&feet, [0.23, 0.34]), -0.05));
        assert!(close(support_margin(&feet, [0.2, 0.15]), 0.0));
        // Collinear and repeated points: a segment, no inside.
        let line = [[0.0, 0.0], [0.1, 0.0], [0.2, 0.0], [0.1, 0.0]];
        assert!(close(support_margin(&line, [0.1, 0.05]), -0.05));
        assert!(close(support_margin(&line, [0.3, 0.0]), -0.1));
        assert!(close(support_margin(&[[1.0, 1.0]; 3], [1.0, 2.0]), -1.0));
        assert_eq!(support_margin(&[], [0.0, 0.0]), None);
        assert_eq!(support_margin(&feet, [f64::NAN, 0.0]), None);
    }

    #[test]
    fn a_run_cut_before_its_end_without_falling_is_not_judged() {
        let run = |fell_at_s| DynamoRun {
            fell_at_s,
            max_tilt_rad: 0.0,
            pose_error_rad: None,
            reach_error_at_arrival_rad: None,
            external_nm_s: 0.0,
            spring_broke_at_s: None,
            limited: 0,
            refused: 0,
            feet: FeetOut::default(),
            qp: None,
            capture: CaptureOut {
                end_margin_m: Some(0.01),
                ..CaptureOut::default()
            },
            hand: None,
            balls: None,
            poses: Vec::new(),
        };
        let cut = Cut::Signal(2);
        assert_eq!(run(None).stood(None), Some(true));
        assert_eq!(run(None).stood(Some(&cut)), None);
        assert_eq!(run(Some(1.0)).stood(Some(&cut)), Some(false));
        assert_eq!(run(Some(1.0)).stood(None), Some(false));
        let mut falling = run(None);
        falling.capture.end_margin_m = Some(-1e-3);
        assert_eq!(
            falling.stood(None),
            Some(false),
            "ends falling: not standing"
        );
        falling.capture.end_margin_m = None;
        assert_eq!(
            falling.stood(None),
            Some(false),
            "ends on no sole: not standing"
        );
        let push = |impulse_ns, stood| PushOut {
            impulse_ns,
            stood,
            fell_at_s: None,
            max_torso_tilt_rad: 0.0,
            external_torque_nm_s: 0.0,
            spring_broke_at_s: None,
            limited_joint_ticks: 0,
            refused_joint_ticks: 0,
            feet: FeetOut::default(),
            qp: None,
            capture: CaptureOut::default(),
            hand: None,
            balls: None,
        };
        let c = summarise(
            DynamoLaw::WorldSpace,
            vec![push(0.0, None)],
            (None, None),
            None,
            None,
        );
        assert_eq!(c.largest_push_survived_ns, None);
        assert_eq!(survived_cell(&c), "not judged");
        let c = summarise(
            DynamoLaw::WorldSpace,
            vec![push(0.0, Some(true)), push(2.0, None)],
            (None, None),
            None,
            None,
        );
        assert_eq!(c.largest_push_survived_ns, Some(0.0));
    }
}
