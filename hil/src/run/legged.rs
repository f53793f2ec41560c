//! `hil run scenarios/robot_push_talos.toml` (and `robot_push_solo12.toml`, or any of them with
//! `--urdf PATH`): a real floating-base robot from its URDF, unmodified, standing on its feet in
//! the robot plant, pushed; `qp_balance` ([`control_core::balance::legged::LeggedBalance`]: the
//! multiobjective QP with friction cones, the contact hold and the recovery step) beside `pd_hold` (every joint's PD towards the standing pose: what a robot's
//! default position controller does), one plant process per controller and impulse.
//!
//! The wiring of one scenario kind (`robot_push`): the file ([`RobotPushScenario`]), the robot
//! loaded once by `robot_model::load` for the plant's scene and the controller's tree, the feet
//! (named links or frames of the model and points fixed in them: a sole's corners, a point
//! foot), the scene (floating base lowered until the lowest foot point touches the ground), the
//! controllers ([`LeggedController`]), the judge ([`LeggedRecorder`]: the base's height, bodies
//! other than the feet touching the ground, and the capture point against the feet's footprint
//! at the end) and the report. The plant, the sessions, the drivers, the timing and fault
//! records are the ones every kind uses.
//!
//! On the control thread ([`LeggedController::tick`], [`LeggedController::safe`]): never an
//! allocation (the QP's buffers are sized when it is built), a block or a panic; a tick the QP
//! cannot solve gives [`control_core::balance`]'s fallback, named in the record.
// `!(x > 0.0)` is meant: NaN fails every check.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use control_core::articulated::nalgebra::{
    Isometry3, Point3, Quaternion, Translation3, UnitQuaternion, Vector3,
};
use control_core::balance::PLANTED_N;
use control_core::balance::legged::{
    LeggedBalance, LeggedInput, LeggedSpec, PdHold, limit_to_efforts,
};
use control_core::balance::step::{StepSettings, Stepper};
use control_core::balance::{Balance, BalanceSettings, ContactBody, JointGroup, MAX_POINTS};
use control_core::frames::{BodyMotion, Event, MAX_CONTACTS, MAX_JOINTS, StateFrame};
use control_core::tree::{BaseKind, Tree};
use serde::{Deserialize, Serialize};
use sim_host::{Mode, Push};

use super::chain::scenario::UpAxis;
use super::dynamo::controller::QpTick;
use super::dynamo::{QpOut, support_margin};
use super::recorder::KindRecorder;
use super::report::{Faults, Percentiles, ReportHeader, Timing};
use super::scenario::{MAX_END_S, ScenarioError};
use super::session::{Cut, LoopCommand, LoopController, LoopState, StopFlag};
use super::standing::{BallCount, BallsOut, CaptureOut, FeetMeter, FeetOut, FootForce, PeltSpec};
use super::{Finished, Periods, RunArgs, plant, run_session, select};

/// The `kind` of these scenario files.
pub const KIND: &str = "robot_push";

/// Joints a robot may have here: what a state frame carries.
pub const CAP: usize = MAX_JOINTS;
/// The QP controller's velocity capacity: the joints and the floating base's six.
pub const NV: usize = CAP + 6;
/// Most feet.
pub const MAX_FEET: usize = MAX_CONTACTS;
/// The QP's variables: accelerations and three force components per foot point.
pub const NX: usize = NV + 3 * MAX_FEET * MAX_POINTS;
/// The QP's rows: the base's 6, 6 no-slip rows per foot, 4 per point (minimum force and the
/// cone's 3), 2 per joint (its effort).
pub const NR: usize = 6 + 6 * MAX_FEET + 4 * MAX_FEET * MAX_POINTS + 2 * CAP;

type Qp = Balance<NV, NX, NR>;
type Legged = LeggedBalance<NV, NX, NR, MAX_FEET>;

/// A foot point this close above the lowest one, m, is on the ground for the standing check.
const GROUND_POINT_M: f64 = 0.01;

/// Gravity, m/s² (URDF is z-up; the plant's default).
const GRAVITY: [f64; 3] = [0.0, 0.0, -9.81];

/// A `robot_push` scenario file, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RobotPushScenario {
    /// Always `"robot_push"`.
    pub kind: String,
    /// Name (letters, digits, `_`, `-`).
    pub name: String,
    /// Control rate, Hz; in lockstep one tick per plant step, so `1 / physics_dt_s`.
    pub control_rate_hz: f64,
    /// Physics step, s.
    pub physics_dt_s: f64,
    /// Each run's simulated length, s.
    pub end_s: f64,
    /// The controllers, in report order (default both: `qp_balance`, `pd_hold`).
    #[serde(default = "default_laws")]
    pub controllers: Vec<String>,
    /// The robot.
    pub robot: RobotSpec,
    /// The feet: the bodies that stand on the ground (1 – 4).
    pub feet: Vec<FootSpec>,
    /// The pushes: one run per impulse.
    pub push: PushSpec,
    /// When a run has fallen.
    #[serde(default)]
    pub judge: JudgeSpec,
    /// `qp_balance`'s settings.
    #[serde(default)]
    pub qp_balance: QpSpec,
    /// `pd_hold`'s settings.
    #[serde(default)]
    pub pd_hold: PdSpec,
    /// Balls thrown at the pushed link in every run (none: no balls).
    #[serde(default)]
    pub pelt: Option<PeltSpec>,
}

fn default_laws() -> Vec<String> {
    LeggedLaw::ALL.iter().map(|l| l.name().to_owned()).collect()
}

/// The robot and how it stands.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RobotSpec {
    /// The URDF, relative to the scenario file; `--urdf PATH` replaces it (then relative to the
    /// working directory). Loaded with a floating base.
    pub urdf: Option<PathBuf>,
    /// The description's up axis (default z, URDF's; `--up-axis` replaces it): the robot is
    /// turned so that it points up in the z-up world ([`UpAxis::to_z_up_rpy`]).
    #[serde(default)]
    pub up_axis: Option<UpAxis>,
    /// Load `<mimic>` joints as independent joints (default false: refused).
    #[serde(default)]
    pub mimic_as_independent: bool,
    /// `"convex_hull"` (default) or `"primitives_only"`.
    #[serde(default)]
    pub collision: sim_host::robot::CollisionMode,
    /// Coulomb friction between the feet and the ground (default 0.8).
    #[serde(default = "default_ground_friction")]
    pub ground_friction: f64,
    /// The standing pose, rad (m for a prismatic joint), by joint name; joints not named stand
    /// at 0. The controllers hold it.
    #[serde(default)]
    pub pose_rad: BTreeMap<String, f64>,
}

fn default_ground_friction() -> f64 {
    0.8
}

/// A foot: points fixed in a link of the robot (its sole's corners, or one point of a point
/// foot) where the ground may push.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FootSpec {
    /// A URDF link (a body, or a link merged into one: a sole frame).
    pub link: String,
    /// The points in that link's frame, m (1 – 4).
    pub points_m: Vec<[f64; 3]>,
    /// Give the foot a flat sole in the plant (default false): a box under the link spanning
    /// the points' x and y, its bottom at their lowest z, 2 cm deep, beside the foot's own
    /// collision shapes (the plant's `sole_boxes`; see [`sim_host::robot::SoleBox`]).
    #[serde(default)]
    pub sole_box: bool,
}

/// The depth of a [`FootSpec::sole_box`], m.
pub const SOLE_BOX_DEPTH_M: f64 = 0.02;

/// The pushes.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PushSpec {
    /// The URDF link pushed (default: the base's link), at its body's centre of mass.
    pub link: Option<String>,
    /// Direction, world (normalised).
    pub direction: [f64; 3],
    /// Start, s.
    pub at_s: f64,
    /// Length, s (the force is impulse / length).
    pub duration_s: f64,
    /// Impulses, N·s, increasing, one run each (0: unpushed).
    pub impulses_ns: Vec<f64>,
}

/// When a run has fallen.
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeSpec {
    /// Fallen once the base's origin is below this fraction of its standing height (default
    /// 0.7).
    #[serde(default = "default_fall_fraction")]
    pub fall_height_fraction: f64,
}

impl Default for JudgeSpec {
    fn default() -> Self {
        Self {
            fall_height_fraction: default_fall_fraction(),
        }
    }
}

fn default_fall_fraction() -> f64 {
    0.7
}

/// `qp_balance`'s settings (the rest are the library's defaults).
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct QpSpec {
    /// The centre of mass's horizontal spring k_c, 1/s² (default 150); its damping is
    /// ω + k_c/ω, ω = √(g/h) of the standing centre of mass (the capture point's).
    #[serde(default = "default_com_kp")]
    pub com_kp: f64,
    /// The smallest normal force per foot point, as a fraction of the robot's weight shared over
    /// all points (default 0.15).
    #[serde(default = "default_min_normal")]
    pub min_normal_fraction: f64,
    /// The friction coefficient the QP's cones use (default 0.7, under the ground's).
    #[serde(default = "default_qp_friction")]
    pub friction: f64,
    /// Take a recovery step when the capture point leaves the feet's footprint
    /// (`control_core::balance::step`, its defaults; default true). Only a robot on two feet of
    /// at least three points each can: the report's `qp_step` says whether it does.
    #[serde(default = "default_step")]
    pub step: bool,
    /// Ticks a foot stays in the QP's planted set after the plant last measured a normal force
    /// on it (`control_core::balance::contact::ContactHold`; default 1, as the humanoid's), in
    /// [0, 1000]; 0 drops it as soon as a step reads unloaded.
    #[serde(default = "super::dynamo::balance::default_contact_hold_ticks")]
    pub contact_hold_ticks: u32,
}

fn default_step() -> bool {
    true
}

impl Default for QpSpec {
    fn default() -> Self {
        Self {
            com_kp: default_com_kp(),
            min_normal_fraction: default_min_normal(),
            friction: default_qp_friction(),
            step: default_step(),
            contact_hold_ticks: super::dynamo::balance::CONTACT_HOLD_TICKS,
        }
    }
}

fn default_com_kp() -> f64 {
    150.0
}
fn default_min_normal() -> f64 {
    0.15
}
fn default_qp_friction() -> f64 {
    0.7
}

/// `pd_hold`'s settings.
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PdSpec {
    /// Each joint's stiffness is its URDF effort over this angle, N·m/rad (default 0.2 rad: a
    /// joint 0.2 rad off its pose pushes with all its effort), capped where the sampled loop
    /// needs it (below; reported by joint).
    #[serde(default = "default_effort_at")]
    pub effort_at_rad: f64,
    /// Damping ratio on each joint's composite inertia at the pose (default 1).
    #[serde(default = "default_zeta")]
    pub damping_ratio: f64,
}

impl Default for PdSpec {
    fn default() -> Self {
        Self {
            effort_at_rad: default_effort_at(),
            damping_ratio: default_zeta(),
        }
    }
}

fn default_effort_at() -> f64 {
    0.2
}
fn default_zeta() -> f64 {
    1.0
}

/// The sampled PD's natural frequency is at most this over the control period (ω dt ≤ 0.3): a
/// joint whose effort-based stiffness would be faster (a finger's tiny inertia) gets this.
pub const MAX_OMEGA_DT: f64 = 0.3;

impl RobotPushScenario {
    /// Parse and check scenario text read from `path`, with `urdf` (`--urdf`) replacing the
    /// robot's description.
    #[cfg(test)]
    pub fn parse(text: &str, path: &Path, urdf: Option<&Path>) -> Result<Self, ScenarioError> {
        let doc = super::scenario::Document::parse(text, &path.display().to_string())?;
        Self::from_document(doc, path, urdf, None)
    }

    /// Check the scenario of a parsed file read from `path`, with `urdf` (`--urdf`) replacing
    /// the robot's description.
    pub fn from_document(
        doc: super::scenario::Document<'_>,
        path: &Path,
        urdf: Option<&Path>,
        up_axis: Option<UpAxis>,
    ) -> Result<Self, ScenarioError> {
        let file = doc.file().to_owned();
        let error = |field: String, reason: String| ScenarioError {
            file: file.clone(),
            field,
            reason,
        };
        let mut s: Self = doc.into_kind()?;
        if let Some(u) = &s.robot.urdf
            && u.is_relative()
            && let Some(dir) = path.parent()
        {
            s.robot.urdf = Some(dir.join(u));
        }
        if let Some(u) = urdf {
            s.robot.urdf = Some(u.to_path_buf());
        }
        if up_axis.is_some() {
            s.robot.up_axis = up_axis;
        }
        s.check().map_err(|(field, reason)| error(field, reason))?;
        Ok(s)
    }

    fn check(&self) -> Result<(), (String, String)> {
        let bad = |f: &str, r: String| Err((f.to_owned(), r));
        super::scenario::check_kind_and_name(&self.kind, KIND, &self.name)?;
        if let Some(pelt) = &self.pelt {
            pelt.check(self.end_s)?;
        }
        let dt = self.physics_dt_s;
        if !(dt.is_finite() && (1e-4..=0.05).contains(&dt)) {
            return bad(
                "physics_dt_s",
                format!("must lie in [1e-4, 0.05] s (got {dt})"),
            );
        }
        let r = self.control_rate_hz;
        if !(r.is_finite() && (20.0..=5000.0).contains(&r)) {
            return bad(
                "control_rate_hz",
                format!("must lie in [20, 5000] Hz (got {r})"),
            );
        }
        if !(self.end_s.is_finite() && self.end_s > 0.0 && self.end_s <= MAX_END_S.min(600.0)) {
            return bad(
                "end_s",
                format!("must lie in (0, 600] s (got {})", self.end_s),
            );
        }
        if self.controllers.is_empty() {
            return bad("controllers", "name at least one".into());
        }
        for (k, c) in self.controllers.iter().enumerate() {
            if LeggedLaw::from_name(c).is_none() {
                return bad(
                    &format!("controllers[{k}]"),
                    format!(
                        "unknown controller \"{c}\": one of {}",
                        LeggedLaw::ALL
                            .map(|l| format!("\"{}\"", l.name()))
                            .join(", ")
                    ),
                );
            }
            if self.controllers[..k].contains(c) {
                return bad(&format!("controllers[{k}]"), format!("\"{c}\" named twice"));
            }
        }
        if self.robot.urdf.is_none() {
            return bad(
                "robot.urdf",
                "no robot: give robot.urdf in the file or --urdf PATH".into(),
            );
        }
        let mu = self.robot.ground_friction;
        if !(mu.is_finite() && (0.0..=10.0).contains(&mu) && mu > 0.0) {
            return bad(
                "robot.ground_friction",
                format!("must lie in (0, 10] (got {mu})"),
            );
        }
        for (name, v) in &self.robot.pose_rad {
            if !v.is_finite() {
                return bad(
                    &format!("robot.pose_rad.{name}"),
                    format!("not finite ({v})"),
                );
            }
        }
        if !(1..=MAX_FEET).contains(&self.feet.len()) {
            return bad(
                "feet",
                format!("1 to {MAX_FEET} feet (got {})", self.feet.len()),
            );
        }
        for (i, f) in self.feet.iter().enumerate() {
            if !(1..=MAX_POINTS).contains(&f.points_m.len()) {
                return bad(
                    &format!("feet[{i}].points_m"),
                    format!("1 to {MAX_POINTS} points (got {})", f.points_m.len()),
                );
            }
            if f.points_m
                .iter()
                .flatten()
                .any(|c| !(c.is_finite() && c.abs() <= 10.0))
            {
                return bad(
                    &format!("feet[{i}].points_m"),
                    "every coordinate finite and within ±10 m".into(),
                );
            }
            if f.sole_box {
                let span = |k: usize| {
                    let (lo, hi) = f
                        .points_m
                        .iter()
                        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), p| {
                            (l.min(p[k]), h.max(p[k]))
                        });
                    hi - lo
                };
                if !(span(0) > 1e-3 && span(1) > 1e-3) {
                    return bad(
                        &format!("feet[{i}].sole_box"),
                        "the points must span at least 1 mm in x and in y to make a sole".into(),
                    );
                }
            }
            if self.feet[..i].iter().any(|g| g.link == f.link) {
                return bad(&format!("feet[{i}].link"), format!("\"{}\" twice", f.link));
            }
        }
        let p = &self.push;
        let d = p.direction;
        let n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        if !(n.is_finite() && n > 1e-9) {
            return bad("push.direction", "a finite, non-zero vector".into());
        }
        if !(p.at_s.is_finite() && p.at_s >= 0.0 && p.at_s < self.end_s) {
            return bad(
                "push.at_s",
                format!("must lie in [0, end_s) (got {})", p.at_s),
            );
        }
        if !(p.duration_s.is_finite() && p.duration_s >= dt && p.at_s + p.duration_s <= self.end_s)
        {
            return bad(
                "push.duration_s",
                format!(
                    "at least one physics step and ending by end_s (got {})",
                    p.duration_s
                ),
            );
        }
        if p.impulses_ns.is_empty() || p.impulses_ns.len() > 64 {
            return bad("push.impulses_ns", "1 to 64 impulses".into());
        }
        for (k, &j) in p.impulses_ns.iter().enumerate() {
            let force = j / p.duration_s;
            if !(j.is_finite() && j >= 0.0 && force <= sim_host::scene::MAX_PUSH_FORCE_N) {
                return bad(
                    &format!("push.impulses_ns[{k}]"),
                    format!(
                        "must be ≥ 0 with impulse / duration_s within {} N (got {j})",
                        sim_host::scene::MAX_PUSH_FORCE_N
                    ),
                );
            }
            if k > 0 && j <= p.impulses_ns[k - 1] {
                return bad(&format!("push.impulses_ns[{k}]"), "must increase".into());
            }
        }
        let f = self.judge.fall_height_fraction;
        if !(f.is_finite() && f > 0.0 && f < 1.0) {
            return bad(
                "judge.fall_height_fraction",
                format!("must lie in (0, 1) (got {f})"),
            );
        }
        let q = &self.qp_balance;
        if !(q.com_kp.is_finite() && q.com_kp > 0.0 && q.com_kp <= 1e4) {
            return bad(
                "qp_balance.com_kp",
                format!("must lie in (0, 1e4] (got {})", q.com_kp),
            );
        }
        if !(q.min_normal_fraction.is_finite() && (0.0..0.9).contains(&q.min_normal_fraction)) {
            return bad(
                "qp_balance.min_normal_fraction",
                format!("must lie in [0, 0.9) (got {})", q.min_normal_fraction),
            );
        }
        if !(q.friction.is_finite() && q.friction > 0.0 && q.friction <= 10.0) {
            return bad(
                "qp_balance.friction",
                format!("must lie in (0, 10] (got {})", q.friction),
            );
        }
        if let Some(why) = super::dynamo::balance::contact_hold_refusal(q.contact_hold_ticks) {
            return bad("qp_balance.contact_hold_ticks", why);
        }
        let pd = &self.pd_hold;
        if !(pd.effort_at_rad.is_finite() && pd.effort_at_rad > 0.0 && pd.effort_at_rad <= 10.0) {
            return bad(
                "pd_hold.effort_at_rad",
                format!("must lie in (0, 10] (got {})", pd.effort_at_rad),
            );
        }
        if !(pd.damping_ratio.is_finite() && (0.0..=10.0).contains(&pd.damping_ratio)) {
            return bad(
                "pd_hold.damping_ratio",
                format!("must lie in [0, 10] (got {})", pd.damping_ratio),
            );
        }
        Ok(())
    }

    /// The controllers, in report order.
    pub fn laws(&self) -> Vec<LeggedLaw> {
        self.controllers
            .iter()
            .filter_map(|c| LeggedLaw::from_name(c))
            .collect()
    }

    /// The description's up axis (`robot.up_axis`, z when not given).
    fn up_axis(&self) -> UpAxis {
        self.robot.up_axis.unwrap_or(UpAxis::Z)
    }

    fn urdf(&self) -> PathBuf {
        let u = self.robot.urdf.clone().unwrap_or_default();
        std::fs::canonicalize(&u).unwrap_or(u)
    }

    fn load_options(&self) -> robot_model::LoadOptions {
        robot_model::LoadOptions {
            mimic_as_independent: self.robot.mimic_as_independent,
            floating_base: true,
            skip_missing_meshes: false,
        }
    }
}

/// The controllers of a `robot_push`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeggedLaw {
    /// [`control_core::balance`]: accelerations, contact forces and torques from one conic QP.
    QpBalance,
    /// Each joint's PD towards the standing pose.
    PdHold,
}

impl LeggedLaw {
    /// Every controller, in report order.
    pub const ALL: [Self; 2] = [Self::QpBalance, Self::PdHold];

    /// The name in files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::QpBalance => "qp_balance",
            Self::PdHold => "pd_hold",
        }
    }

    fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.name() == s)
    }
}

/// The robot as both controllers and the judge see it, resolved from the scenario and the model.
#[derive(Debug, Clone)]
pub struct Robot {
    /// The model's name.
    pub name: String,
    /// The tree (floating base).
    pub tree: Tree<NV>,
    /// Joints.
    pub joints: usize,
    /// Joint names, model order.
    pub joint_names: Vec<String>,
    /// Each joint's effort, N·m or N.
    pub effort: Vec<f64>,
    /// The standing pose, by joint (0 past `joints`).
    pub pose: [f64; NV],
    /// The base body's centre of mass in the base frame, m.
    pub base_com: Vector3<f64>,
    /// The feet: their bodies and points in the body frames.
    pub feet: Vec<ContactBody>,
    /// The base's standing pose (the lowest foot point on z = 0).
    pub base_pose: Isometry3<f64>,
    /// Mass, kg.
    pub mass_kg: f64,
    /// The centre of mass's standing height above the ground, m.
    pub com_height_m: f64,
    /// The pushed link and its body.
    pub push_link: String,
}

impl Robot {
    /// Resolve the robot: model, pose, feet, standing base pose. An error names the field.
    pub fn resolve(
        s: &RobotPushScenario,
        model: &robot_model::RobotModel,
    ) -> Result<Self, (String, String)> {
        let fail = |f: &str, r: String| Err((f.to_owned(), r));
        if model.base != BaseKind::Floating {
            return fail("robot.urdf", "a floating base is needed".into());
        }
        if model.joints.len() > CAP {
            return fail(
                "robot.urdf",
                format!(
                    "{} moving joints; a state frame carries at most {CAP}",
                    model.joints.len()
                ),
            );
        }
        let tree: Tree<NV> = model
            .tree()
            .map_err(|e| ("robot.urdf".to_owned(), e.to_string()))?;
        // The pose, the efforts and the feet through the model's own checks (the library's
        // path: `RobotModel::positions`, `joint_groups`, `contact_body`), their refusals put
        // under the scenario's fields.
        let named: Vec<(&str, f64)> = s
            .robot
            .pose_rad
            .iter()
            .map(|(n, &v)| (n.as_str(), v))
            .collect();
        let pose: [f64; NV] = model.positions(&named).map_err(|e| {
            let field = named
                .iter()
                .find(|(n, _)| e.element == format!("joint {n:?}"))
                .map_or_else(
                    || "robot.pose_rad".to_owned(),
                    |(n, _)| format!("robot.pose_rad.{n}"),
                );
            (field, e.to_string())
        })?;
        let effort: Vec<f64> = model
            .joint_groups()
            .map_err(|e| ("robot.urdf".to_owned(), e.to_string()))?
            .iter()
            .map(|g| g.effort)
            .collect();
        let mut feet: Vec<ContactBody> = Vec::with_capacity(s.feet.len());
        for (i, f) in s.feet.iter().enumerate() {
            let foot = model
                .contact_body(&f.link, &f.points_m)
                .map_err(|e| (format!("feet[{i}].link"), e.to_string()))?;
            if feet.iter().any(|c| c.body == foot.body) {
                return fail(
                    &format!("feet[{i}].link"),
                    format!("\"{}\" is on a body another foot already names", f.link),
                );
            }
            feet.push(foot);
        }
        let [roll, pitch, yaw] = s.up_axis().to_z_up_rpy();
        let turn = UnitQuaternion::from_euler_angles(roll, pitch, yaw);
        let kin = tree
            .kinematics(
                &Isometry3::from_parts(Translation3::identity(), turn),
                &pose,
            )
            .map_err(|e| ("robot.pose_rad".to_owned(), e.to_string()))?;
        // The feet's points in the standing pose, turned but not yet lifted.
        let mut points: Vec<Point3<f64>> = Vec::new();
        for c in &feet {
            if let Some(pose) = kin.body_pose(c.body) {
                points.extend(
                    c.points
                        .iter()
                        .take(c.count)
                        .map(|p| pose * Point3::from(*p)),
                );
            }
        }
        let lowest = points.iter().map(|w| w.z).fold(f64::INFINITY, f64::min);
        let base_pose = Isometry3::from_parts(Translation3::new(0.0, 0.0, -lowest), turn);
        let (mass_kg, com) = kin
            .center_of_mass()
            .map_err(|e| ("robot.urdf".to_owned(), e.to_string()))?;
        let com_height_m = com.z - lowest;
        if !(com_height_m > 0.01) {
            return fail(
                "feet",
                format!(
                    "the centre of mass stands {com_height_m:.3} m above the lowest foot point: the feet are not under the robot"
                ),
            );
        }
        // Standing needs three or more of the feet's points on the ground (within 1 cm of the
        // lowest: fewer have no inside to stand over) and the centre of mass above their
        // footprint.
        let footprint: Vec<[f64; 2]> = points
            .iter()
            .filter(|w| w.z <= lowest + GROUND_POINT_M)
            .map(|w| [w.x, w.y])
            .collect();
        if footprint.len() < 3 {
            return fail(
                "feet",
                format!(
                    "in the standing pose only {} of the feet's points are on the ground (within {GROUND_POINT_M} m of the lowest): the robot cannot stand on them (check robot.pose_rad, robot.up_axis and the feet's points)",
                    footprint.len()
                ),
            );
        }
        if let Some(margin) = super::dynamo::support_margin(&footprint, [com.x, com.y])
            && margin < 0.0
        {
            return fail(
                "feet",
                format!(
                    "in the standing pose the centre of mass is {:.3} m outside the feet's footprint (the convex hull of their points within {GROUND_POINT_M} m of the lowest): the robot cannot stand (check robot.pose_rad, robot.up_axis and the feet's points)",
                    -margin
                ),
            );
        }
        let push_link = match &s.push.link {
            Some(l) => {
                if model.frame(l).is_none() && !model.bodies.iter().any(|b| &b.link == l) {
                    return fail(
                        "push.link",
                        format!(
                            "{}: link {l:?}: {}",
                            model.source.display(),
                            model.no_such_link()
                        ),
                    );
                }
                l.clone()
            }
            None => model.bodies[0].link.clone(),
        };
        Ok(Self {
            name: model.name.clone(),
            tree,
            joints: model.joints.len(),
            joint_names: model.joints.iter().map(|j| j.name.clone()).collect(),
            effort,
            pose,
            base_com: Vector3::from(model.bodies[0].inertial.com_m),
            feet,
            base_pose,
            mass_kg,
            com_height_m,
            push_link,
        })
    }

    /// The floating base's pose and the generalized velocity (the tree's layout: the base
    /// origin's velocity and the angular velocity in the base frame, then the joints) from a
    /// state: the plant's body 0 is the base's centre of mass, world velocities.
    pub fn base_and_velocity(&self, s: &LeggedState) -> (Isometry3<f64>, [f64; NV]) {
        let b = &s.base;
        let [w, i, j, k] = b.orientation;
        let r = UnitQuaternion::new_normalize(Quaternion::new(w, i, j, k));
        let com = Vector3::from(b.com_m);
        let offset = r * self.base_com;
        let origin = com - offset;
        let omega = Vector3::from(b.angular_velocity_rad_s);
        let v_origin = Vector3::from(b.velocity_m_s) - omega.cross(&offset);
        let inv = r.inverse();
        let (vb, wb) = (inv * v_origin, inv * omega);
        let mut v = [0.0; NV];
        v[..3].copy_from_slice(vb.as_slice());
        v[3..6].copy_from_slice(wb.as_slice());
        let n = s.joints.min(CAP);
        v[6..6 + n].copy_from_slice(&s.qd[..n]);
        (Isometry3::from_parts(Translation3::from(origin), r), v)
    }

    /// The joint positions, by tree joint.
    pub fn positions(&self, s: &LeggedState) -> [f64; NV] {
        let mut q = [0.0; NV];
        q[..CAP].copy_from_slice(&s.q);
        q
    }
}

/// The state a tick takes, as an accepted frame carried it.
#[derive(Debug, Clone, Copy)]
pub struct LeggedState {
    /// Plant step.
    pub step: u64,
    /// Simulated time, s.
    pub sim_time_s: f64,
    /// Joints in the frame.
    pub joints: usize,
    /// Joint positions (0 past `joints`).
    pub q: [f64; CAP],
    /// Joint velocities (0 past `joints`).
    pub qd: [f64; CAP],
    /// The base (body 0).
    pub base: BodyMotion,
    /// The ground's force per body in contact (body, world N), the first `contact_count`.
    pub contacts: [(u16, [f64; 3]); MAX_CONTACTS],
    /// How many of `contacts`.
    pub contact_count: usize,
}

impl Default for LeggedState {
    fn default() -> Self {
        Self {
            step: 0,
            sim_time_s: 0.0,
            joints: 0,
            q: [0.0; CAP],
            qd: [0.0; CAP],
            base: BodyMotion::default(),
            contacts: [(0, [0.0; 3]); MAX_CONTACTS],
            contact_count: 0,
        }
    }
}

impl LeggedState {
    /// The state in `frame` (`None` without joints or bodies).
    pub fn of(frame: &StateFrame) -> Option<Self> {
        let base = *frame.bodies.first()?;
        if frame.joints.is_empty() {
            return None;
        }
        let mut s = Self {
            step: frame.step,
            sim_time_s: frame.sim_time_s,
            joints: frame.joints.len().min(CAP),
            base,
            ..Self::default()
        };
        for (k, j) in frame.joints.iter().take(CAP).enumerate() {
            s.q[k] = j.position_rad;
            s.qd[k] = j.velocity_rad_s;
        }
        for (slot, c) in s.contacts.iter_mut().zip(&frame.contacts) {
            *slot = (c.body.0, c.force_n);
            s.contact_count += 1;
        }
        Some(s)
    }

    /// The ground's normal force on `body` at the last step, N.
    pub fn normal_on(&self, body: usize) -> f64 {
        self.contacts[..self.contact_count]
            .iter()
            .filter(|(b, _)| usize::from(*b) == body)
            .map(|(_, f)| f[2])
            .sum()
    }
}

impl LoopState for LeggedState {
    fn step(&self) -> u64 {
        self.step
    }
    fn sim_time_s(&self) -> f64 {
        self.sim_time_s
    }
}

/// A tick's answer.
#[derive(Debug, Clone, Copy)]
pub struct LeggedCommand {
    /// The step it answers.
    pub step: u64,
    /// The safe state's.
    pub safe: bool,
    /// Joints.
    pub joints: usize,
    /// Torques, model joint order.
    pub torques: [f64; CAP],
    /// Joints whose torque was limited to their effort this tick.
    pub limited: u32,
    /// `qp_balance`: its QP.
    pub qp: Option<QpTick>,
}

impl LoopCommand for LeggedCommand {
    fn step(&self) -> u64 {
        self.step
    }
    fn is_safe(&self) -> bool {
        self.safe
    }
    fn torques(&self) -> &[f64] {
        &self.torques[..self.joints]
    }
}

/// What a controller of a `robot_push` shares with its clones (built once).
#[derive(Debug)]
struct Shared {
    robot: Robot,
    groups: Vec<JointGroup>,
    settings: BalanceSettings,
    /// `pd_hold`: its PD towards the standing pose with the pose's static torques.
    pd: PdHold<CAP>,
    /// Whether `qp_balance` takes a recovery step: `[qp_balance] step` on a robot with two
    /// feet of at least three points each.
    steps: bool,
    /// The longest foot's extent along the base's forward axis, standing, m (the step aims
    /// half of it behind the capture point).
    foot_length_m: f64,
    /// `[qp_balance] contact_hold_ticks`.
    contact_hold_ticks: u32,
}

/// The longest foot's extent along the world's x in the standing pose, m: the description's x
/// (its −z for an x-up description, which stands turned −90° about y).
fn foot_length(robot: &Robot) -> Result<f64, String> {
    let kin = robot
        .tree
        .kinematics(&robot.base_pose, &robot.pose)
        .map_err(|e| format!("the standing pose: {e}"))?;
    let forward = Vector3::x();
    let mut longest = 0.0f64;
    for foot in &robot.feet {
        let pose = kin
            .body_pose(foot.body)
            .ok_or_else(|| format!("foot body {} is not in the tree", foot.body))?;
        let along = foot.points.iter().take(foot.count).map(|p| {
            forward.dot(&(pose * control_core::articulated::nalgebra::Point3::from(*p)).coords)
        });
        let (lo, hi) = along.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
        if hi > lo {
            longest = longest.max(hi - lo);
        }
    }
    Ok(longest)
}

/// Whether a robot on `feet` can take the recovery step: two feet, each of at least three
/// points (a sole the swing holds flat).
pub fn can_step(feet: &[ContactBody]) -> bool {
    feet.len() == 2 && feet.iter().all(|f| f.count >= 3)
}

/// A `robot_push` controller: the same object in lockstep and in real time.
pub struct LeggedController {
    law: LeggedLaw,
    shared: Arc<Shared>,
    /// `qp_balance`'s controller (its recovery step wired as [`Shared::steps`] says).
    qp: Option<Box<Legged>>,
}

impl std::fmt::Debug for LeggedController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeggedController")
            .field("law", &self.law)
            .finish_non_exhaustive()
    }
}

impl Clone for LeggedController {
    fn clone(&self) -> Self {
        // Built once already: building again cannot fail.
        Self::build(self.law, self.shared.clone())
            .unwrap_or_else(|_| unreachable!("a built controller builds"))
    }
}

/// `pd_hold`'s gains for `robot` at `period_s`: (kp, kd, joints whose stiffness the sampled
/// loop capped).
///
/// Each joint's stiffness is its effort over [`PdSpec::effort_at_rad`] and its damping
/// `2 ζ √(k_p I)`, with `I` the inertia a torque at the joint meets with the robot in the air
/// and every other joint free, `1 / (M⁻¹)_kk` at the standing pose (the floating base gives
/// way too, so it is less than the composite inertia `M_kk`). Where `k_p` would make `ω = √(k_p / I)`
/// exceed [`MAX_OMEGA_DT`] / `period_s`, it is capped there and the joint named: a foot in the
/// air is then a stable sampled loop. With the foot on the ground an ankle turns the whole body
/// (an inertia thousands of times the foot's), so a capped ankle is soft; gains sized for
/// that inertia instead make a lifted foot's loop unstable (measured on Talos at 200 Hz: the
/// feet bounce off the ground within 0.1 s and it falls at once).
pub fn pd_gains(robot: &Robot, spec: &PdSpec, period_s: f64) -> Result<PdGains, String> {
    let kin = robot
        .tree
        .kinematics(&robot.base_pose, &robot.pose)
        .map_err(|e| e.to_string())?;
    let m = kin.mass_matrix().map_err(|e| e.to_string())?;
    let nv = robot.tree.nv();
    let m = control_core::articulated::nalgebra::DMatrix::from_fn(nv, nv, |r, c| m[(r, c)]);
    let inverse = m
        .cholesky()
        .ok_or("the mass matrix at the standing pose is not positive definite")?
        .inverse();
    let omega_max = MAX_OMEGA_DT / period_s;
    let (mut kp, mut kd, mut capped) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..robot.joints {
        let inertia = 1.0 / inverse[(6 + k, 6 + k)];
        let mut p = robot.effort[k] / spec.effort_at_rad;
        if p > inertia * omega_max * omega_max {
            p = inertia * omega_max * omega_max;
            capped.push(robot.joint_names[k].clone());
        }
        kp.push(p);
        kd.push(2.0 * spec.damping_ratio * (p * inertia).sqrt());
    }
    Ok((kp, kd, capped))
}

/// The joint torques that hold `robot` still in its standing pose with its weight on its feet:
/// the generalized gravity's joint rows minus `Jᵀ f` of a vertical force at each foot's points'
/// centroid, the forces the least-squares split of the weight whose moment about the centre of
/// mass is zero (equal shares for two feet side by side under it).
pub fn static_torques(robot: &Robot) -> Result<Vec<f64>, String> {
    use control_core::articulated::nalgebra::DMatrix;
    let kin = robot
        .tree
        .kinematics(&robot.base_pose, &robot.pose)
        .map_err(|e| e.to_string())?;
    let (mass, com) = kin.center_of_mass().map_err(|e| e.to_string())?;
    let g = kin
        .gravity(&Vector3::from(GRAVITY))
        .map_err(|e| e.to_string())?;
    let n = robot.feet.len();
    let mut centroids = Vec::with_capacity(n);
    for f in &robot.feet {
        let mut c = [0.0; 3];
        for p in f.points.iter().take(f.count) {
            for k in 0..3 {
                c[k] += p[k] / f.count as f64;
            }
        }
        let pose = kin.body_pose(f.body).ok_or("a foot past the tree")?;
        centroids.push((c, pose * Point3::from(c)));
    }
    let a = DMatrix::from_fn(3, n, |r, i| match r {
        0 => 1.0,
        1 => centroids[i].1.y - com.y,
        _ => centroids[i].1.x - com.x,
    });
    let b = control_core::articulated::nalgebra::DVector::from_vec(vec![mass * 9.81, 0.0, 0.0]);
    let split = a
        .pseudo_inverse(1e-12)
        .map_err(|e| format!("the weight's split over the feet: {e}"))?
        * b;
    let mut hold: Vec<f64> = (0..robot.joints).map(|k| g[6 + k]).collect();
    for (i, f) in robot.feet.iter().enumerate() {
        let placement = control_core::tree::Placement {
            xyz_m: centroids[i].0,
            rotation: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
        };
        let j = kin
            .frame_jacobian(f.body, &placement)
            .map_err(|e| e.to_string())?;
        for (k, h) in hold.iter_mut().enumerate() {
            *h -= j[(2, 6 + k)] * split[i];
        }
    }
    Ok(hold)
}

impl LeggedController {
    /// The controller `law` for `robot` under `s` at the control period `period_s`; also the
    /// names of joints whose `pd_hold` stiffness the sampled loop capped.
    pub fn new(
        law: LeggedLaw,
        robot: Robot,
        s: &RobotPushScenario,
        period_s: f64,
    ) -> Result<(Self, Vec<String>), String> {
        let groups: Vec<JointGroup> = (0..robot.joints)
            .map(|k| JointGroup {
                first: k,
                count: 1,
                effort: robot.effort[k],
            })
            .collect();
        let points: usize = robot.feet.iter().map(|f| f.count).sum();
        let weight = robot.mass_kg * 9.81;
        let omega = (9.81 / robot.com_height_m).sqrt();
        let mut settings = BalanceSettings::DEFAULT;
        settings.com_kp = s.qp_balance.com_kp;
        settings.com_kd = omega + s.qp_balance.com_kp / omega;
        settings.min_normal_n = s.qp_balance.min_normal_fraction * weight / points as f64;
        settings.friction = s.qp_balance.friction;
        let (kp, kd, capped) = pd_gains(&robot, &s.pd_hold, period_s)?;
        let hold = static_torques(&robot)?;
        let n = robot.joints;
        let pd = PdHold::new(&robot.pose[..n], &hold, &kp, &kd, &robot.effort[..n]).ok_or_else(
            || format!("pd_hold: {n} joints (at most {CAP}) or a gain or static torque not finite"),
        )?;
        let foot_length_m = foot_length(&robot)?;
        let steps = s.qp_balance.step && can_step(&robot.feet) && foot_length_m > 0.0;
        let shared = Arc::new(Shared {
            robot,
            groups,
            settings,
            pd,
            steps,
            foot_length_m,
            contact_hold_ticks: s.qp_balance.contact_hold_ticks,
        });
        Ok((Self::build(law, shared)?, capped))
    }

    fn build(law: LeggedLaw, shared: Arc<Shared>) -> Result<Self, String> {
        let stepper = if law == LeggedLaw::QpBalance && shared.steps {
            let omega = (9.81 / shared.robot.com_height_m).sqrt();
            StepSettings::scaled(omega, shared.foot_length_m).and_then(Stepper::new)
        } else {
            None
        };
        let qp = match law {
            LeggedLaw::PdHold => None,
            LeggedLaw::QpBalance => {
                let sh = shared.clone();
                Some(
                    std::thread::Builder::new()
                        .stack_size(64 << 20)
                        .spawn(move || -> Result<Box<Legged>, String> {
                            let robot = &sh.robot;
                            let qp = Qp::new(robot.tree, &robot.feet, &sh.groups, sh.settings)
                                .map_err(|e| e.to_string())?;
                            let spec = LeggedSpec {
                                feet: &robot.feet,
                                pose: &robot.pose,
                                upright: robot.base_pose.rotation,
                                com_height_m: robot.com_height_m,
                                gravity: Vector3::from(GRAVITY),
                                stepper,
                                contact_hold_ticks: sh.contact_hold_ticks,
                            };
                            Ok(Box::new(Legged::new(qp, spec).ok_or_else(|| {
                                format!(
                                    "{} feet: qp_balance stands on at most {MAX_FEET}",
                                    robot.feet.len()
                                )
                            })?))
                        })
                        .map_err(|e| format!("qp_balance: cannot start its builder thread: {e}"))?
                        .join()
                        .map_err(|_| "qp_balance: its builder thread panicked".to_string())??,
                )
            }
        };
        Ok(Self { law, shared, qp })
    }

    fn command(&self, s: &LeggedState, safe: bool) -> LeggedCommand {
        LeggedCommand {
            step: s.step,
            safe,
            joints: self.shared.robot.joints,
            torques: [0.0; CAP],
            limited: 0,
            qp: None,
        }
    }
}

impl LoopController for LeggedController {
    type State = LeggedState;
    type Command = LeggedCommand;

    fn state_of(frame: &StateFrame) -> Option<LeggedState> {
        LeggedState::of(frame)
    }

    fn tick(&mut self, s: LeggedState) -> LeggedCommand {
        let mut c = self.command(&s, false);
        let shared = self.shared.clone();
        let sh = &*shared;
        match self.law {
            LeggedLaw::QpBalance if self.qp.is_some() => {
                let (base, v) = sh.robot.base_and_velocity(&s);
                let q = sh.robot.positions(&s);
                let mut loads = [0.0; MAX_FEET];
                for (load, f) in loads.iter_mut().zip(&sh.robot.feet) {
                    *load = s.normal_on(f.body);
                }
                let Some(qp) = self.qp.as_mut() else {
                    return self.command(&s, true);
                };
                let out = qp.tick(&LeggedInput {
                    time_s: s.sim_time_s,
                    base: &base,
                    q: &q,
                    v: &v,
                    loads_n: &loads[..sh.robot.feet.len()],
                });
                c.torques[..sh.robot.joints].copy_from_slice(&out.torques[6..6 + sh.robot.joints]);
                c.limited = limit_to_efforts(&mut c.torques[..c.joints], sh.pd.effort());
                c.qp = Some(QpTick {
                    steps: qp.steps(),
                    swinging: qp.swinging(),
                    ..QpTick::of(out.status, Some(&out))
                });
            }
            _ => (c.torques, c.limited) = sh.pd.tick(&s.q, &s.qd),
        }
        c
    }

    fn safe(&self, s: LeggedState) -> LeggedCommand {
        let mut c = self.command(&s, true);
        (c.torques, c.limited) = self.shared.pd.safe(&s.qd);
        c
    }

    fn accepts(&self, s: &LeggedState) -> Result<(), String> {
        if s.joints == self.shared.robot.joints {
            Ok(())
        } else {
            Err(format!(
                "the plant's states carry {} joints; the robot has {}",
                s.joints, self.shared.robot.joints
            ))
        }
    }
}

/// What the judge needs of the robot (shared by every run's recorder).
#[derive(Debug)]
pub struct Judge {
    robot: Robot,
    mu: f64,
    fall_height_m: f64,
    push_at_s: f64,
    /// The push's direction along the ground (unit; zero for a vertical push).
    push_direction: [f64; 2],
}

/// Each foot's points' centroid along the ground, m.
type FeetXy = [[f64; 2]; MAX_FEET];

/// What [`LeggedRecorder::measure`] gives at a state.
struct Measured {
    /// The capture point's signed margin inside the footprint, m.
    margin: Option<f64>,
    /// The centre of mass's speed along the push, m/s.
    speed_m_s: f64,
    /// Each foot's points' centroid along the ground, m.
    centroids: FeetXy,
    /// How far the footprint reaches beyond the capture point along the push, m, and ω, 1/s.
    front: Option<(f64, f64)>,
}

/// `pd_hold`'s stiffness and damping per joint, and the joints whose stiffness was capped.
pub type PdGains = (Vec<f64>, Vec<f64>, Vec<String>);

/// Records and judges one run.
#[derive(Debug)]
pub struct LeggedRecorder {
    judge: Arc<Judge>,
    fell_at_s: Option<f64>,
    fell_because: Option<String>,
    capture: CaptureOut,
    feet: FeetMeter,
    qp: Option<QpOut>,
    limited: u64,
    min_base_height_m: f64,
    /// Whether to keep states for the replay, and those kept.
    keep: bool,
    samples: Vec<crate::replay::legged::Sample>,
    next_sample_s: f64,
    last_torques: Vec<f64>,
    /// The balls' hits (a scenario with a pelt).
    balls: Option<BallCount>,
}

/// The replay's sampling period, s.
const SAMPLE_S: f64 = 0.01;

impl LeggedRecorder {
    fn new(judge: Arc<Judge>, keep: bool, balls: Option<BallCount>) -> Self {
        let feet = judge.robot.feet.len();
        Self {
            balls,
            keep,
            samples: Vec::new(),
            next_sample_s: 0.0,
            last_torques: Vec::new(),
            judge,
            fell_at_s: None,
            fell_because: None,
            capture: CaptureOut::default(),
            feet: FeetMeter::new(feet),
            qp: None,
            limited: 0,
            min_base_height_m: f64::INFINITY,
        }
    }

    /// At state `s`: the capture point's margin in the footprint of every foot point, the
    /// centre of mass's speed along the push, each foot's points' centroid along the ground, and
    /// (when the centre of mass is above the ground) how far the footprint reaches beyond the
    /// capture point along the push, with ω.
    fn measure(&self, s: &LeggedState) -> Option<Measured> {
        let robot = &self.judge.robot;
        let (base, v) = robot.base_and_velocity(s);
        let q = robot.positions(s);
        let kin = robot.tree.kinematics(&base, &q).ok()?;
        let (_, x) = kin.center_of_mass().ok()?;
        let jc = kin.com_jacobian().ok()?;
        let xd = jc * control_core::articulated::nalgebra::SVector::<f64, NV>::from(v);
        let mut points = Vec::with_capacity(MAX_FEET * MAX_POINTS);
        let mut centroids = [[0.0; 2]; MAX_FEET];
        for (f, c) in robot.feet.iter().zip(centroids.iter_mut()) {
            let pose = kin.body_pose(f.body)?;
            for p in f.points.iter().take(f.count) {
                let w = pose * Point3::from(*p);
                points.push([w.x, w.y]);
                c[0] += w.x / f.count as f64;
                c[1] += w.y / f.count as f64;
            }
        }
        let d = self.judge.push_direction;
        let along = |p: [f64; 2]| p[0] * d[0] + p[1] * d[1];
        let (margin, front) = if x.z > 0.0 {
            let omega = (9.81 / x.z).sqrt();
            let xi = [x.x + xd.x / omega, x.y + xd.y / omega];
            let reach = points
                .iter()
                .map(|p| along(*p))
                .fold(f64::NEG_INFINITY, f64::max);
            let front = (!points.is_empty()).then(|| (reach - along(xi), omega));
            (support_margin(&points, xi), front)
        } else {
            (None, None)
        };
        Some(Measured {
            margin,
            speed_m_s: along([xd.x, xd.y]),
            centroids,
            front,
        })
    }
}

impl KindRecorder<LeggedController> for LeggedRecorder {
    type Outcome = RobotRun;

    fn state(&mut self, frame: &StateFrame, state: &LeggedState, previous: Option<&LeggedState>) {
        let s = *state;
        // The plant's only events are its props' touches of the robot.
        if let Some(b) = self.balls.as_mut() {
            for e in &frame.events {
                if let Event::ContactBegan { body } = *e {
                    b.touched(body.0, self.fell_at_s.is_some());
                }
            }
        }
        if self.fell_at_s.is_none() {
            let robot = &self.judge.robot;
            let (base, _) = robot.base_and_velocity(&s);
            let height = base.translation.vector.z;
            self.min_base_height_m = self.min_base_height_m.min(height);
            let mut why = None;
            if !(height >= self.judge.fall_height_m) {
                why = Some(format!("the base fell to {height:.3} m"));
            }
            for &(body, f) in &s.contacts[..s.contact_count] {
                let foot = robot.feet.iter().position(|c| c.body == usize::from(body));
                match foot {
                    None if f[2] > PLANTED_N && why.is_none() => {
                        why = Some(format!("body {body} touched the ground"));
                    }
                    _ => {}
                }
            }
            let measured = self.measure(&s);
            let dt = previous.map_or(0.0, |l| s.sim_time_s - l.sim_time_s);
            let mut feet = [FootForce {
                touching: false,
                friction_use: 0.0,
            }; MAX_FEET];
            for (out, foot) in feet.iter_mut().zip(&robot.feet) {
                let f = s.contacts[..s.contact_count]
                    .iter()
                    .filter(|(b, _)| usize::from(*b) == foot.body)
                    .fold([0.0; 3], |a, (_, f)| {
                        [a[0] + f[0], a[1] + f[1], a[2] + f[2]]
                    });
                out.touching = f[2] > PLANTED_N;
                if out.touching {
                    out.friction_use = f[0].hypot(f[1]) / (self.judge.mu * f[2]);
                }
            }
            let count = robot.feet.len().min(MAX_FEET);
            self.feet.state(
                &feet[..count],
                measured.as_ref().map(|m| &m.centroids[..count]),
                dt,
                frame.step > 1,
            );
            if s.sim_time_s >= self.judge.push_at_s
                && let Some(m) = &measured
                && let Some(margin) = m.margin
            {
                if let Some((front, omega)) = m.front {
                    self.capture.at_push(front, omega);
                }
                self.capture.margin(s.sim_time_s, Some(margin));
                self.capture.speed(m.speed_m_s);
            }
            if let Some(why) = why {
                self.fell_at_s = Some(s.sim_time_s);
                self.fell_because = Some(why);
            }
        }
        if self.keep && s.sim_time_s >= self.next_sample_s {
            self.next_sample_s = s.sim_time_s + SAMPLE_S - 1e-9;
            self.samples.push(crate::replay::legged::Sample {
                time_s: s.sim_time_s,
                state: s,
                torques: self.last_torques.clone(),
            });
        }
    }

    fn tick(&mut self, c: &LeggedCommand, _last: Option<&LeggedState>) {
        if self.keep {
            self.last_torques.clear();
            self.last_torques.extend_from_slice(c.torques());
        }
        self.limited += u64::from(c.limited);
        if let Some(t) = &c.qp {
            self.qp.get_or_insert_with(QpOut::default).add(t);
        }
    }

    fn finish(mut self, last: Option<&LeggedState>) -> RobotRun {
        // The last state always.
        if let Some(&s) = last
            && self.keep
            && self.samples.last().is_none_or(|k| k.state.step != s.step)
        {
            self.samples.push(crate::replay::legged::Sample {
                time_s: s.sim_time_s,
                state: s,
                torques: self.last_torques.clone(),
            });
        }
        RobotRun {
            samples: self.samples,
            fell_at_s: self.fell_at_s,
            fell_because: self.fell_because,
            min_base_height_m: self.min_base_height_m,
            capture: self.capture,
            contacts: self.feet.out().clone(),
            qp: self.qp,
            limited: self.limited,
            balls: self.balls.map(|b| b.out()),
        }
    }
}

/// What the legged robot's recorder measured of one run (inside the [`Run`](super::recorder::Run) every kind's run
/// is).
#[derive(Debug)]
pub struct RobotRun {
    samples: Vec<crate::replay::legged::Sample>,
    fell_at_s: Option<f64>,
    fell_because: Option<String>,
    min_base_height_m: f64,
    capture: CaptureOut,
    contacts: FeetOut,
    qp: Option<QpOut>,
    limited: u64,
    balls: Option<BallsOut>,
}

/// One push in the report.
#[derive(Debug, Clone, Serialize)]
pub struct RobotPushOut {
    /// Impulse, N·s.
    pub impulse_ns: f64,
    /// Stood: not fallen, and its capture point ended inside the feet's footprint (`None`: the
    /// run was cut).
    pub stood: Option<bool>,
    /// When it fell, s.
    pub fell_at_s: Option<f64>,
    /// Why it is judged fallen (the base's height, a body other than a foot on the ground, or
    /// the capture point outside the footprint at the end).
    pub why: Option<String>,
    /// The base origin's lowest height, m.
    pub min_base_height_m: f64,
    /// The capture point against the footprint.
    pub capture: CaptureOut,
    /// The ground's forces on the feet as the plant measured them, and the feet's motion,
    /// until the fall.
    pub feet: FeetOut,
    /// `qp_balance`: its QP ticks.
    pub qp: Option<QpOut>,
    /// Joint-ticks whose torque was limited to the effort.
    pub limited_joint_ticks: u64,
    /// With a `[pelt]`: the balls thrown and those that hit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub balls: Option<BallsOut>,
}

/// One controller in the report.
#[derive(Debug, Clone, Serialize)]
pub struct RobotControllerOut {
    /// Its name.
    pub name: &'static str,
    /// The largest impulse it stood with every smaller one, N·s.
    pub largest_push_survived_ns: Option<f64>,
    /// Controller tick compute time, unpushed run, µs.
    pub tick_us: Option<Percentiles>,
    /// Plant step cost, unpushed run, µs.
    pub plant_step_us: Option<Percentiles>,
    /// Per impulse.
    pub pushes: Vec<RobotPushOut>,
}

/// `report.json` of a `robot_push` run.
#[derive(Debug, Clone, Serialize)]
pub struct RobotPushReport {
    /// Completeness, scenario, kind and mode.
    #[serde(flatten)]
    pub header: ReportHeader,
    /// The URDF.
    pub urdf: String,
    /// The robot's name.
    pub robot: String,
    /// Mass, kg.
    pub mass_kg: f64,
    /// Velocity degrees of freedom (6 + joints).
    pub dof: usize,
    /// The standing centre of mass's height, m.
    pub com_height_m: f64,
    /// The feet as given.
    pub feet: Vec<FootSpec>,
    /// The pushes.
    pub push: PushSpec,
    /// The pushed link.
    pub push_link: String,
    /// `pd_hold`'s joints whose effort-based stiffness the sampled loop capped (ω dt ≤ 0.3).
    pub pd_hold_capped_joints: Vec<String>,
    /// `qp_balance`'s smallest normal force per foot point, N.
    pub qp_min_normal_n: f64,
    /// Whether `qp_balance` takes a recovery step (`[qp_balance] step` and two feet of at
    /// least three points each).
    pub qp_step: bool,
    /// The impulse along the push that puts the standing robot's capture point on the edge of
    /// its feet's footprint, `m ω d` (d: how far the footprint reaches beyond the centre of
    /// mass along the push, ω = √(g/h)): the most feet that stay flat (ankle torques alone) can
    /// stop; surviving more takes the hips' and arms' momentum, or a step. N·s.
    pub ankle_bound_ns: Option<f64>,
    /// How far the feet's lowest point stands above the collision shapes' lowest point (the
    /// robot is placed with the latter on the ground), m.
    pub foot_points_above_ground_m: f64,
    /// Per controller.
    pub controllers: Vec<RobotControllerOut>,
}

/// In lockstep the controller ticks once per plant step.
pub fn check_mode(s: &RobotPushScenario, file: &Path, mode: Mode) -> Result<(), ScenarioError> {
    let dt = s.physics_dt_s;
    if mode == Mode::Lockstep && (1.0 / s.control_rate_hz - dt).abs() > 1e-9 * dt {
        return Err(ScenarioError {
            file: file.display().to_string(),
            field: "control_rate_hz".into(),
            reason: format!(
                "in lockstep the controller ticks once per plant step, so the control rate must be 1/physics_dt_s = {} Hz (got {} Hz); use --mode realtime for other rates",
                1.0 / dt,
                s.control_rate_hz
            ),
        });
    }
    Ok(())
}

/// [`RobotPushReport::ankle_bound_ns`] of `robot` standing, pushed along `direction`.
fn ankle_bound(robot: &Robot, direction: [f64; 3]) -> Option<f64> {
    let d = Vector3::new(direction[0], direction[1], 0.0);
    if !(d.norm() > 1e-9) {
        return None;
    }
    let d = d.normalize();
    let kin = robot.tree.kinematics(&robot.base_pose, &robot.pose).ok()?;
    let (mass, x) = kin.center_of_mass().ok()?;
    let mut front = f64::NEG_INFINITY;
    for f in &robot.feet {
        let pose = kin.body_pose(f.body)?;
        for p in f.points.iter().take(f.count) {
            front = front.max((pose * Point3::from(*p) - Point3::from(x)).dot(&d));
        }
    }
    (x.z > 0.0 && front > 0.0).then(|| mass * (9.81 / x.z).sqrt() * front)
}

/// The plant's scene for one push.
fn scene(
    s: &RobotPushScenario,
    robot: &Robot,
    impulse: f64,
    balls: &[sim_host::BallSpawn],
) -> sim_host::robot::RobotScene {
    let mut scene = sim_host::robot::RobotScene::new(s.urdf(), s.end_s);
    scene.balls = balls.to_vec();
    scene.mimic_as_independent = s.robot.mimic_as_independent;
    scene.floating_base = true;
    scene.collision = s.robot.collision;
    scene.dt_s = s.physics_dt_s;
    scene.gravity_m_s2 = GRAVITY;
    let t = robot.base_pose.translation.vector;
    scene.base_xyz_m = [t.x, t.y, t.z];
    scene.base_rpy_rad = s.up_axis().to_z_up_rpy();
    scene.initial_q = robot
        .joint_names
        .iter()
        .zip(&robot.pose)
        .filter(|(_, v)| **v != 0.0)
        .map(|(n, v)| (n.clone(), *v))
        .collect();
    scene.sole_boxes = s
        .feet
        .iter()
        .filter(|f| f.sole_box)
        .map(|f| {
            let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
            for p in &f.points_m {
                for k in 0..3 {
                    lo[k] = lo[k].min(p[k]);
                    hi[k] = hi[k].max(p[k]);
                }
            }
            sim_host::robot::SoleBox {
                link: f.link.clone(),
                min_m: [lo[0], lo[1], lo[2]],
                max_m: [hi[0], hi[1], lo[2] + SOLE_BOX_DEPTH_M],
            }
        })
        .collect();
    scene.ground = Some(sim_host::robot::Ground {
        height_m: 0.0,
        friction: s.robot.ground_friction,
    });
    if impulse > 0.0 {
        let d = s.push.direction;
        let n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let f = impulse / s.push.duration_s / n;
        scene.pushes = vec![Push {
            body: robot.push_link.clone(),
            force_n: [d[0] * f, d[1] * f, d[2] * f],
            start_s: s.push.at_s,
            duration_s: s.push.duration_s,
        }];
    }
    scene
}

/// A `robot_push` scenario ready to run: the file, the robot resolved from its model and placed
/// on the ground, and every controller built once. Everything that can be wrong with the
/// input is found here, before any output is written or any plant starts.
#[derive(Debug)]
pub struct RobotPush {
    /// The file as written.
    pub s: RobotPushScenario,
    model: robot_model::RobotModel,
    robot: Robot,
    /// The balls every run throws (`[pelt]`).
    balls: Vec<sim_host::BallSpawn>,
    controllers: Vec<(LeggedLaw, LeggedController)>,
    lowest: f64,
    ankle_bound_ns: Option<f64>,
    capped: Vec<String>,
    min_normal: f64,
    /// Whether `qp_balance` takes the recovery step on this robot.
    steps: bool,
}

impl RobotPush {
    /// Parse and check the file ([`RobotPushScenario::from_document`]), load the robot (with
    /// `robot_model::load`, as the plant does), resolve its pose and feet, build an in-process
    /// replica of the plant (its own checks, and where the robot's lowest collision point is
    /// with the feet's points on the ground: the robot is placed with that point on it), and
    /// build every controller. Errors name the file and the field.
    pub fn prepare(
        doc: super::scenario::Document<'_>,
        path: &Path,
        urdf: Option<&Path>,
        up_axis: Option<UpAxis>,
    ) -> Result<Self, ScenarioError> {
        let s = RobotPushScenario::from_document(doc, path, urdf, up_axis)?;
        let refuse = |(field, reason): (String, String)| ScenarioError {
            file: path.display().to_string(),
            field,
            reason,
        };
        let model = robot_model::load(&s.urdf(), &s.load_options())
            .map_err(|e| refuse(("robot.urdf".to_owned(), e.to_string())))?;
        let mut robot = Robot::resolve(&s, &model).map_err(refuse)?;
        let scene0 = scene(&s, &robot, 0.0, &[]);
        scene0
            .validate()
            .map_err(|(field, reason)| refuse((format!("(plant scene) {field}"), reason)))?;
        let replica = sim_host::robot::RobotPlant::from_model(&scene0, &model)
            .map_err(|e| refuse(("robot.urdf".to_owned(), format!("the plant: {e}"))))?;
        let lowest = replica.lowest_point_z_m();
        if !(lowest.is_finite() && lowest.abs() < 0.1) {
            return Err(refuse((
                "feet".to_owned(),
                format!(
                    "with the feet's lowest point on the ground the robot's lowest collision point is at {lowest} m: the feet's points are not where its collision shapes touch (or it has none)"
                ),
            )));
        }
        robot.base_pose.translation.vector.z -= lowest;
        // The balls, at the pushed body's centre of mass as the robot stands on the ground.
        let balls = match &s.pelt {
            Some(pelt) => {
                let body = replica.link_body_id(&robot.push_link).ok_or_else(|| {
                    refuse((
                        "push.link".to_owned(),
                        format!("`{}` is no link of the plant's robot", robot.push_link),
                    ))
                })?;
                let mut target = replica
                    .body_motions()
                    .get(usize::from(body.0))
                    .map(|m| m.com_m)
                    .ok_or_else(|| {
                        refuse((
                            "pelt".to_owned(),
                            format!("`{}`'s body is not in the plant's frames", robot.push_link),
                        ))
                    })?;
                target[2] -= lowest;
                pelt.balls(target, s.push.direction, 2, -GRAVITY[2])
            }
            None => Vec::new(),
        };
        let ankle_bound_ns = ankle_bound(&robot, s.push.direction);
        let period = 1.0 / s.control_rate_hz;
        let (mut controllers, mut capped, mut min_normal) = (Vec::new(), Vec::new(), 0.0);
        let mut steps = false;
        for law in s.laws() {
            let (c, cap) = LeggedController::new(law, robot.clone(), &s, period).map_err(|e| {
                refuse((
                    "controllers".to_owned(),
                    format!("{} cannot be built for this robot: {e}", law.name()),
                ))
            })?;
            capped = cap;
            min_normal = c.shared.settings.min_normal_n;
            steps = c.shared.steps;
            controllers.push((law, c));
        }
        Ok(Self {
            s,
            model,
            robot,
            balls,
            controllers,
            lowest,
            ankle_bound_ns,
            capped,
            min_normal,
            steps,
        })
    }

    /// The controllers, in report order.
    pub fn laws(&self) -> Vec<LeggedLaw> {
        self.s.laws()
    }
}

/// Runs a `robot_push` scenario: every controller at every impulse, one plant each.
pub fn run_scenario(
    args: &RunArgs,
    prepared: &RobotPush,
    file: &str,
    staging: &Path,
    stop: &StopFlag,
) -> Result<Finished, Box<dyn std::error::Error>> {
    let s = &prepared.s;
    let robot = &prepared.robot;
    let laws = select(&args.only, &prepared.laws(), LeggedLaw::name)?;
    let (lowest, ankle_bound_ns) = (prepared.lowest, prepared.ankle_bound_ns);
    let (capped, min_normal) = (prepared.capped.clone(), prepared.min_normal);
    let controllers: Vec<(LeggedLaw, LeggedController)> = prepared
        .controllers
        .iter()
        .filter(|(l, _)| laws.contains(l))
        .map(|(l, c)| (*l, c.clone()))
        .collect();
    let urdf = s.urdf();
    let period = 1.0 / s.control_rate_hz;
    let scene0 = scene(s, robot, 0.0, &prepared.balls);
    let judge = Arc::new(Judge {
        mu: s.robot.ground_friction,
        fall_height_m: s.judge.fall_height_fraction * robot.base_pose.translation.vector.z,
        push_at_s: s.push.at_s,
        push_direction: {
            let [x, y, _] = s.push.direction;
            let n = x.hypot(y);
            if n > 0.0 { [x / n, y / n] } else { [0.0, 0.0] }
        },
        robot: robot.clone(),
    });
    let scenes = staging.join("scenes");
    std::fs::create_dir_all(&scenes)?;
    let plant = plant::plant_executable()?;
    super::plan_runs(laws.len() * s.push.impulses_ns.len());
    let mut csv = String::from(
        "controller,impulse_ns,stood,fell_at_s,why,min_base_height_m,min_capture_margin_m,end_capture_margin_m,max_friction_use,saturated_steps,slip_steps,foot_lifts,max_foot_drift_m,qp_solved,qp_ticks,limited_joint_ticks\n",
    );
    let mut outs = Vec::new();
    let mut first_timing: Option<Timing> = None;
    let mut faults = Vec::new();
    let mut cut: Option<(String, Cut)> = None;
    let mut shown = Vec::new();
    'laws: for (law, controller) in controllers {
        let mut pushes = Vec::new();
        let (mut tick_us, mut plant_step_us) = (None, None);
        // The replay shows the largest push survived (with every smaller one) and the first
        // fall.
        let (mut survived, mut fell): (Option<crate::replay::legged::Run>, Option<_>) =
            (None, None);
        let mut all_stood = true;
        for (k, &impulse) in s.push.impulses_ns.iter().enumerate() {
            let scene_file = scenes.join(format!("{}_{k}.json", law.name()));
            std::fs::write(
                &scene_file,
                serde_json::to_string_pretty(&scene(s, robot, impulse, &prepared.balls))?,
            )?;
            let (run, run_cut) = run_session(
                args,
                controller.clone(),
                LeggedRecorder::new(
                    judge.clone(),
                    all_stood || fell.is_none(),
                    s.pelt.as_ref().map(|p| BallCount::new(p.count)),
                ),
                law.name(),
                ((&plant.0, &plant.1), &scene_file),
                Periods {
                    control_s: period,
                    state_s: s.physics_dt_s,
                },
                stop,
            )?;
            if first_timing.is_none() {
                first_timing = Some(run.timing.clone());
            }
            if k == 0 {
                tick_us = run.timing.compute_us;
                plant_step_us = run.plant_step_us;
            }
            let mut why = run.kind.fell_because.clone();
            let stood = if run_cut.is_some() {
                None
            } else if run.kind.fell_at_s.is_some() {
                Some(false)
            } else if run.kind.capture.end_margin_m.is_none_or(|m| m < 0.0) {
                why = Some(match run.kind.capture.end_margin_m {
                    Some(m) => format!(
                        "its capture point ended {:.3} m outside the feet's footprint",
                        -m
                    ),
                    None => "its capture point was not measured".to_owned(),
                });
                Some(false)
            } else {
                Some(true)
            };
            let out = RobotPushOut {
                impulse_ns: impulse,
                stood,
                fell_at_s: run.kind.fell_at_s,
                why,
                min_base_height_m: run.kind.min_base_height_m,
                capture: run.kind.capture.clone(),
                feet: run.kind.contacts.clone(),
                qp: run.kind.qp.clone(),
                limited_joint_ticks: run.kind.limited,
                balls: run.kind.balls.clone(),
            };
            let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
            csv.push_str(&format!(
                "{},{},{},{},\"{}\",{},{},{},{},{},{},{},{},{},{},{}\n",
                law.name(),
                impulse,
                out.stood.map_or(String::new(), |b| b.to_string()),
                opt(out.fell_at_s),
                out.why.clone().unwrap_or_default().replace('"', "'"),
                out.min_base_height_m,
                opt(out.capture.min_margin_m),
                opt(out.capture.end_margin_m),
                out.feet.max_friction_use,
                out.feet.saturated_steps,
                out.feet.slip_steps,
                out.feet.lift_events,
                out.feet.max_drift_m,
                out.qp
                    .as_ref()
                    .map_or(String::new(), |q| q.solved.to_string()),
                out.qp
                    .as_ref()
                    .map_or(String::new(), |q| q.ticks.to_string()),
                out.limited_joint_ticks,
            ));
            faults.push(run.faults);
            let kept = crate::replay::legged::Run {
                name: law.name(),
                impulse_ns: impulse,
                stood: out.stood,
                samples: run.kind.samples,
            };
            all_stood &= out.stood == Some(true);
            if all_stood {
                survived = Some(kept);
            } else if out.stood == Some(false) && fell.is_none() {
                fell = Some(kept);
            }
            pushes.push(out);
            if let Some(c) = run_cut {
                cut = Some((format!("{} at {impulse} N·s", law.name()), c));
                outs.push(summarise(law, pushes, tick_us, plant_step_us));
                shown.extend([survived, fell].into_iter().flatten());
                break 'laws;
            }
        }
        outs.push(summarise(law, pushes, tick_us, plant_step_us));
        shown.extend([survived, fell].into_iter().flatten());
    }
    let _ = std::fs::remove_dir_all(&scenes);
    std::fs::write(
        staging.join("scene.json"),
        serde_json::to_string_pretty(&scene0)?,
    )?;
    std::fs::write(staging.join("runs.csv"), csv)?;
    let report = RobotPushReport {
        header: ReportHeader::new(
            cut.as_ref().map(|(what, c)| (what.clone(), c)),
            &s.name,
            file,
            KIND,
            args.mode,
        )
        .with_runs(
            Some(s.control_rate_hz),
            first_timing.unwrap_or_default(),
            Faults::sum(faults.iter()),
        ),
        urdf: urdf.display().to_string(),
        robot: robot.name.clone(),
        mass_kg: robot.mass_kg,
        dof: robot.tree.nv(),
        com_height_m: robot.com_height_m,
        feet: s.feet.clone(),
        push: s.push.clone(),
        push_link: robot.push_link.clone(),
        pd_hold_capped_joints: capped,
        qp_min_normal_n: min_normal,
        qp_step: prepared.steps,
        foot_points_above_ground_m: -lowest,
        ankle_bound_ns,
        controllers: outs,
    };
    std::fs::write(
        staging.join("report.json"),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    let mut files = vec!["report.json", "runs.csv", "scene.json"];
    if !shown.is_empty() {
        crate::replay::legged::write(
            &staging.join("replay.html"),
            &prepared.model,
            robot,
            &scene0,
            &report,
            &shown,
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
    law: LeggedLaw,
    pushes: Vec<RobotPushOut>,
    tick_us: Option<Percentiles>,
    plant_step_us: Option<Percentiles>,
) -> RobotControllerOut {
    let largest = pushes
        .iter()
        .take_while(|p| p.stood == Some(true))
        .map(|p| p.impulse_ns)
        .last();
    RobotControllerOut {
        name: law.name(),
        largest_push_survived_ns: largest,
        tick_us,
        plant_step_us,
        pushes,
    }
}

/// The console's table.
pub fn summary_table(r: &RobotPushReport) -> String {
    let mut out = format!(
        "{} ({}, {:.1} kg, {} DoF, floating base) at {} Hz, {}; the feet alone stop {}:\n",
        r.header.scenario,
        r.robot,
        r.mass_kg,
        r.dof,
        r.header.control_rate_hz.unwrap_or_default(),
        r.header.mode,
        r.ankle_bound_ns
            .map_or("-".to_owned(), |j| format!("{j:.1} N·s"))
    );
    out.push_str(&format!(
        "{:<12} {:>16} {:>22} {:>18}\n",
        "controller", "largest push", "first fall", "tick p50/p99 µs"
    ));
    for c in &r.controllers {
        let fall = c
            .pushes
            .iter()
            .find(|p| p.stood == Some(false))
            .map_or("-".to_owned(), |p| format!("{} N·s", p.impulse_ns));
        let tick = c
            .tick_us
            .as_ref()
            .map_or("-".to_owned(), |t| format!("{:.1}/{:.1}", t.p50, t.p99));
        out.push_str(&format!(
            "{:<12} {:>16} {:>22} {:>18}\n",
            c.name,
            c.largest_push_survived_ns
                .map_or("none".to_owned(), |j| format!("{j} N·s")),
            fall,
            tick
        ));
    }
    for c in &r.controllers {
        for p in &c.pushes {
            if let Some(b) = &p.balls {
                out.push_str(&b.summary_line(c.name, p.impulse_ns, p.stood));
            }
        }
    }
    out
}

/// A small robot for tests (here and the no-allocation probe).
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;

    /// A floating box with one leg (a hinge about y) ending in a foot box: enough to check the
    /// state's conversions against the plant.
    pub(crate) const URDF: &str = r#"<robot name="hopper">
  <link name="base"><inertial><mass value="2"/><origin xyz="0.01 0.02 0.03"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.04"/></inertial>
    <collision><geometry><box size="0.2 0.2 0.1"/></geometry></collision></link>
  <link name="leg"><inertial><mass value="0.5"/><origin xyz="0 0 -0.15"/>
    <inertia ixx="0.004" ixy="0" ixz="0" iyy="0.004" iyz="0" izz="0.001"/></inertial>
    <collision><origin xyz="0 0 -0.3"/><geometry><box size="0.1 0.08 0.02"/></geometry></collision></link>
  <link name="sole"/>
  <joint name="hip" type="revolute"><parent link="base"/><child link="leg"/>
    <origin xyz="0 0 -0.05"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="20" velocity="10"/></joint>
  <joint name="sole_fix" type="fixed"><parent link="leg"/><child link="sole"/>
    <origin xyz="0 0 -0.31"/></joint>
</robot>"#;

    /// The hopper's scenario file with `extra` appended.
    pub(crate) fn scenario(extra: &str) -> String {
        format!(
            r#"kind = "robot_push"
name = "hopper"
control_rate_hz = 200.0
physics_dt_s = 0.005
end_s = 1.0
[robot]
urdf = "hopper.urdf"
[robot.pose_rad]
hip = 0.1
[[feet]]
link = "sole"
points_m = [[0.05, 0.04, 0.0], [0.05, -0.04, 0.0], [-0.05, 0.04, 0.0], [-0.05, -0.04, 0.0]]
[push]
direction = [1.0, 0.0, 0.0]
at_s = 0.5
duration_s = 0.1
impulses_ns = [0.0, 1.0]
{extra}"#
        )
    }

    /// The hopper's scenario and model.
    pub(crate) fn hopper() -> (RobotPushScenario, robot_model::RobotModel) {
        let s =
            RobotPushScenario::parse(&scenario(""), Path::new("/nowhere/s.toml"), None).unwrap();
        let model = robot_model::parse(
            URDF,
            Path::new("/nowhere/hopper.urdf"),
            &robot_model::LoadOptions {
                floating_base: true,
                ..Default::default()
            },
        )
        .unwrap();
        (s, model)
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{hopper, scenario};
    use super::*;

    fn parse(text: &str) -> Result<RobotPushScenario, ScenarioError> {
        RobotPushScenario::parse(text, Path::new("/nowhere/s.toml"), None)
    }

    #[test]
    fn refusals_name_the_field() {
        let cases: [(&str, &str, &str); 9] = [
            ("kind = \"robot_push\"", "kind = \"robot_pus\"", "kind"),
            (
                "control_rate_hz = 200.0",
                "control_rate_hz = 200.0\ncontrollers = [\"qp_balance\", \"dance\"]",
                "controllers[1]",
            ),
            (
                "control_rate_hz = 200.0",
                "control_rate_hz = 200.0\ncontrollers = [\"pd_hold\", \"pd_hold\"]",
                "controllers[1]",
            ),
            ("urdf = \"hopper.urdf\"", "", "robot.urdf"),
            (
                "impulses_ns = [0.0, 1.0]",
                "impulses_ns = [1.0, 1.0]",
                "push.impulses_ns[1]",
            ),
            (
                "impulses_ns = [0.0, 1.0]",
                "impulses_ns = [0.0, 1e9]",
                "push.impulses_ns[1]",
            ),
            (
                "direction = [1.0, 0.0, 0.0]",
                "direction = [0.0, 0.0, 0.0]",
                "push.direction",
            ),
            ("hip = 0.1", "hip = nan", "robot.pose_rad.hip"),
            (
                "points_m = [[0.05, 0.04, 0.0], [0.05, -0.04, 0.0], [-0.05, 0.04, 0.0], [-0.05, -0.04, 0.0]]",
                "points_m = [[0.05, 0.04, 0.0], [0.05, 0.04, 0.0]]\nsole_box = true",
                "feet[0].sole_box",
            ),
        ];
        for (from, to, field) in cases {
            let text = scenario("").replacen(from, to, 1);
            let e = parse(&text).expect_err(to);
            assert_eq!(e.field, field, "{to}: {e}");
        }
        let e = parse(&scenario("[judge]\nfall_height_fraction = 1.5")).unwrap_err();
        assert_eq!(e.field, "judge.fall_height_fraction");
        let e = parse(&scenario("[qp_balance]\ncom_kpp = 1.0")).unwrap_err();
        assert_eq!(e.field, "qp_balance.com_kpp");
        let e = parse(&scenario("[qp_balance]\nstep = 1")).unwrap_err();
        assert_eq!(e.field, "qp_balance.step");
        for hold in ["1001", "-1", "0.5"] {
            let text = scenario(&format!("[qp_balance]\ncontact_hold_ticks = {hold}"));
            let e = parse(&text).unwrap_err();
            assert_eq!(e.field, "qp_balance.contact_hold_ticks", "{hold}: {e}");
        }
        let parsed = parse(&scenario("[qp_balance]\ncontact_hold_ticks = 0")).unwrap();
        assert_eq!(parsed.qp_balance.contact_hold_ticks, 0);
        assert!(
            !parse(&scenario("[qp_balance]\nstep = false"))
                .unwrap()
                .qp_balance
                .step
        );
        assert_eq!(
            parse(&scenario("")).map(|s| s.laws()).unwrap(),
            vec![LeggedLaw::QpBalance, LeggedLaw::PdHold]
        );
    }

    #[test]
    fn resolving_refuses_what_the_model_lacks() {
        let (s, model) = hopper();
        let robot = Robot::resolve(&s, &model).unwrap();
        assert_eq!(robot.feet.len(), 1);
        assert_eq!(robot.feet[0].body, 1);
        // The sole frame sits 0.31 m below the hip: its corners in the leg's frame.
        assert!((robot.feet[0].points[0][2] + 0.31).abs() < 1e-12);
        // The foot's points on the ground: the lowest of them at z = 0.
        let kin = robot
            .tree
            .kinematics(&robot.base_pose, &robot.pose)
            .unwrap();
        let pose = kin.body_pose(1).unwrap();
        let lowest = robot.feet[0]
            .points
            .iter()
            .take(4)
            .map(|p| (pose * Point3::from(*p)).z)
            .fold(f64::INFINITY, f64::min);
        assert!(lowest.abs() < 1e-12, "{lowest}");
        for (edit, field) in [
            (("link = \"sole\"", "link = \"shoe\""), "feet[0].link"),
            (("link = \"sole\"", "link = \"base\""), "feet[0].link"),
            (("hip = 0.1", "knee = 0.1"), "robot.pose_rad.knee"),
            (("hip = 0.1", "hip = 1.5"), "robot.pose_rad.hip"),
        ] {
            let s = parse(&scenario("").replacen(edit.0, edit.1, 1)).unwrap();
            let e = Robot::resolve(&s, &model).unwrap_err();
            assert_eq!(e.0, field, "{}", e.1);
        }
        let s = parse(&scenario("").replacen("[push]\n", "[push]\nlink = \"hat\"\n", 1)).unwrap();
        assert_eq!(Robot::resolve(&s, &model).unwrap_err().0, "push.link");
        // The same hopper described x up and turned so: lying on its side, its centre of mass
        // off the sole's footprint.
        let s =
            parse(&scenario("").replacen("[robot]\n", "[robot]\nup_axis = \"x\"\n", 1)).unwrap();
        let e = Robot::resolve(&s, &model).unwrap_err();
        assert!(
            e.0 == "feet"
                && e.1
                    .contains("only 2 of the feet's points are on the ground"),
            "{e:?}"
        );
        // Upright, with its sole moved 0.2 m forward: the centre of mass behind it.
        let ahead =
            "[[0.25, 0.04, 0.0], [0.25, -0.04, 0.0], [0.15, 0.04, 0.0], [0.15, -0.04, 0.0]]";
        let s = parse(&scenario("").replacen(
            "[[0.05, 0.04, 0.0], [0.05, -0.04, 0.0], [-0.05, 0.04, 0.0], [-0.05, -0.04, 0.0]]",
            ahead,
            1,
        ))
        .unwrap();
        let e = Robot::resolve(&s, &model).unwrap_err();
        assert!(
            e.0 == "feet" && e.1.contains("outside the feet's footprint"),
            "{e:?}"
        );
    }

    /// A description whose up axis is y, turned z up: the same robot, the same standing.
    #[test]
    fn a_y_up_description_is_turned_to_stand_as_the_z_up_one() {
        let (s, model) = hopper();
        let z_up = Robot::resolve(&s, &model).unwrap();
        // The hopper rewritten y up: every vector (x, y, z) → (x, z, −y), the hinge about y → z.
        let turned = |v: &str| {
            let n: Vec<f64> = v.split(' ').map(|t| t.parse().unwrap()).collect();
            format!("{} {} {}", n[0], n[2], -n[1])
        };
        let mut text = String::from(fixtures::URDF);
        for v in [
            "0.01 0.02 0.03",
            "0 0 -0.15",
            "0 0 -0.3",
            "0 0 -0.05",
            "0 0 -0.31",
        ] {
            text = text.replacen(
                &format!("xyz=\"{v}\""),
                &format!("xyz=\"{}\"", turned(v)),
                1,
            );
        }
        text = text
            .replacen("<axis xyz=\"0 1 0\"/>", "<axis xyz=\"0 0 -1\"/>", 1)
            .replace(
                "ixx=\"0.02\" ixy=\"0\" ixz=\"0\" iyy=\"0.03\" iyz=\"0\" izz=\"0.04\"",
                "ixx=\"0.02\" ixy=\"0\" ixz=\"0\" iyy=\"0.04\" iyz=\"0\" izz=\"0.03\"",
            )
            .replace(
                "iyy=\"0.004\" iyz=\"0\" izz=\"0.001\"",
                "iyy=\"0.001\" iyz=\"0\" izz=\"0.004\"",
            )
            .replace("box size=\"0.2 0.2 0.1\"", "box size=\"0.2 0.1 0.2\"")
            .replace("box size=\"0.1 0.08 0.02\"", "box size=\"0.1 0.02 0.08\"");
        let y_model = robot_model::parse(
            &text,
            Path::new("/nowhere/hopper_y.urdf"),
            &robot_model::LoadOptions {
                floating_base: true,
                ..Default::default()
            },
        )
        .unwrap();
        let points =
            "[[0.05, 0.0, -0.04], [0.05, 0.0, 0.04], [-0.05, 0.0, -0.04], [-0.05, 0.0, 0.04]]";
        let text = scenario("")
            .replacen("[robot]\n", "[robot]\nup_axis = \"y\"\n", 1)
            .replacen(
                "[[0.05, 0.04, 0.0], [0.05, -0.04, 0.0], [-0.05, 0.04, 0.0], [-0.05, -0.04, 0.0]]",
                points,
                1,
            );
        let y_up = Robot::resolve(&parse(&text).unwrap(), &y_model).unwrap();
        assert!((y_up.com_height_m - z_up.com_height_m).abs() < 1e-12);
        assert!((y_up.mass_kg - z_up.mass_kg).abs() < 1e-12);
        let com = |r: &Robot| {
            let kin = r.tree.kinematics(&r.base_pose, &r.pose).unwrap();
            kin.center_of_mass().unwrap().1
        };
        assert!(
            (com(&y_up) - com(&z_up)).norm() < 1e-12,
            "{} vs {}",
            com(&y_up),
            com(&z_up)
        );
    }

    /// What the plant sends (its base body's centre of mass, world velocities) turned back into
    /// the tree's base pose and velocity equals the state the plant was set to.
    #[test]
    fn base_pose_and_velocity_from_the_plant_round_trip() {
        let (s, model) = hopper();
        let robot = Robot::resolve(&s, &model).unwrap();
        let mut scene = sim_host::robot::RobotScene::new("/nowhere/hopper.urdf", 1.0);
        scene.floating_base = true;
        let mut plant = sim_host::robot::RobotPlant::from_model(&scene, &model).unwrap();
        let base = control_core::tree::Placement::from_xyz_rpy([0.3, -0.2, 0.7], [0.2, -0.3, 0.9]);
        let v = [0.4, -0.1, 0.2, 0.7, -0.5, 0.3];
        plant.set_state(&base, v, &[0.25], &[-0.8]).unwrap();
        let state = LeggedState::of(&plant.state_frame()).unwrap();
        let (pose, got) = robot.base_and_velocity(&state);
        let want = super::super::chain::isometry(&base);
        assert!((pose.translation.vector - want.translation.vector).norm() < 1e-6);
        assert!(pose.rotation.angle_to(&want.rotation) < 1e-6);
        for k in 0..6 {
            assert!(
                (got[k] - v[k]).abs() < 1e-5,
                "{k}: {} against {}",
                got[k],
                v[k]
            );
        }
        assert!((got[6] + 0.8).abs() < 1e-6);
        assert!((robot.positions(&state)[0] - 0.25).abs() < 1e-6);
    }

    #[test]
    fn pd_hold_holds_its_static_torque_and_stays_within_effort() {
        let (s, model) = hopper();
        let robot = Robot::resolve(&s, &model).unwrap();
        let (mut c, _) =
            LeggedController::new(LeggedLaw::PdHold, robot.clone(), &s, 0.005).unwrap();
        let mut state = LeggedState {
            joints: 1,
            ..LeggedState::default()
        };
        state.q[0] = 0.1;
        let out = c.tick(state);
        assert_eq!(out.torques[0], static_torques(&robot).unwrap()[0]);
        state.q[0] = -1.0;
        state.qd[0] = 5000.0;
        let out = c.tick(state);
        assert!(out.torques[0].abs() <= 20.0 && out.limited == 1, "{out:?}");
        let safe = c.safe(state);
        assert!(safe.safe && safe.torques[0] <= 0.0 && safe.torques[0].abs() <= 20.0);
        assert!(c.accepts(&LeggedState::default()).is_err());
    }
}
