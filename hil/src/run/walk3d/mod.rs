//! `hil run scenarios/walk3d.toml`: the 15-body humanoid (`models/humanoid15.urdf`, after
//! Cartwheel-3d's Bip) walking in 3D on [`control_core::simbicon3d`] (Cartwheel's SIMBICON and
//! its Bip `Walking` controller), one plant process per (controller, control rate), the plant
//! stepping once per control tick (dt = 1 / rate, as Carensac et al. run their low-frequency
//! simulations), with the desired coronal (sideways) speed cycling every few steps and optional
//! pushes.
//!
//! The wiring of one scenario kind (`walk3d`): the file ([`Walk3dScenario`]), the humanoid loaded
//! once by `robot_model::humanoid::HumanoidModel::load` for the controller (the plant loads the same
//! file with the same function), the joint roles from the file (never from joint names'
//! substrings), the controllers ([`Walk3dController`]), the judge ([`Walk3dRecorder`]: a fall is
//! any body but the feet and toes touching the ground, or the pelvis below `fall_height_m`) and
//! the report. The plant, sessions, drivers, timing and fault records are the ones every kind
//! uses.
//!
//! Controllers:
//! - `simbicon3d`: Cartwheel's Bip gains as given (tuned at 2 kHz);
//! - `simbicon3d_analytic`: the same with every PD pair that is an unstable sampled loop at the
//!   control period moved inside the stable region by the planar walker's rule
//!   ([`Simbicon3dConfig::stabilised`]), for the inertia each joint moves: the composite inertia
//!   of its child's subtree about the joint in the zero pose, and for the pelvis's PD the pelvis
//!   alone (SIMBICON's hips make up every torque its other joints put on it, so the root's PD
//!   drives the pelvis's own inertia);
//! - `simbicon3d_tuned`: the scenario's `tuned_gains` for the rate (Algorithm 1's);
//! - `simbicon3d_stabilised`, `_m3`, `_m0`: Carensac et al.'s ground-contact stabiliser
//!   ([`control_core::contact_stabiliser::stance`]) on the reduced model M5, M3 or the whole character, on
//!   Cartwheel's or the tuned gains (`stabiliser_gains`), its baseline the plant's measured
//!   corner forces or the model's prediction (`stabiliser_baseline`);
//! - `simbicon3d_stable_pd`: Cartwheel's gains through stable PD
//!   ([`control_core::stable_pd`], [`Simbicon3d::tick_stable_pd`]): the walker's torques from the
//!   state one control period ahead, its damping acting on the accelerations they cause, each
//!   body's own inertia; `simbicon3d_stable_pd_stabilised`, `_m3`, `_m0`: the same with the
//!   ground-contact stabiliser (on Cartwheel's gains), whose supplement stable PD's observer
//!   takes for a disturbance.
//!
//! Every run counts the stance foot's disequilibria from the plant's four sole-corner forces
//! ([`ContactOut`]), and a stabilised run compares each prediction with the step the plant then
//! took ([`StabiliserOut`]).
//!
//! The controller itself is the library's [`Walker3d`] (the walker, stable PD, the stabiliser,
//! the speed schedule and tuner, the safe state); [`Walk3dController`] builds it from the
//! scenario and feeds it the plant's state. On the control thread ([`Walk3dController::tick`],
//! [`Walk3dController::safe`]): never an allocation, a block or a panic; a tick the controller
//! refuses gives the safe state's damping for that tick, counted.
// `!(x > 0.0)` is meant: NaN fails every check.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use std::path::{Path, PathBuf};

use control_core::articulated::nalgebra::UnitQuaternion;
use control_core::contact_stabiliser::stance::{Baseline, ReducedModel, StanceInput};
use control_core::contact_stabiliser::{Distribution, StabiliserSettings, StabiliserStatus};
use control_core::dynamo::{BodyInertia, subtree_inertia_about};
use control_core::frames::{Event, MAX_JOINTS, StateFrame};
use control_core::simbicon3d::{
    BipRoles, GainMoves, MAX_WALK_JOINTS, Side, Simbicon3d, Simbicon3dConfig, SpeedTuner,
    SpeedTuning,
};
use control_core::walker3d::{Walker3d, Walker3dCommand, Walker3dInput, Walker3dSpec};
use robot_model::humanoid::{BodyPose, HumanoidModel, stance_stabiliser};
use serde::{Deserialize, Serialize};
use sim_host::Push;
use sim_host::humanoid::HumanoidScene;

use super::dynamo::controller::HumanoidState;
use super::dynamo::{PoseSample, torque_norms_into, write_humanoid_gif};
use super::recorder::{KindRecorder, Run};
use super::report::{Faults, Percentiles, ReportHeader};
use super::roles::{RolesSpec, body_sides};
use super::scenario::{MAX_END_S, ScenarioError};
use super::session::{Cut, LoopCommand, LoopController, StopFlag};
use super::{Finished, Periods, RunArgs, plant, run_session, select};

/// The `kind` of these scenario files.
pub const KIND: &str = "walk3d";

/// Gravity, m/s² (the humanoid's world is y up).
const GRAVITY: [f64; 3] = [0.0, -9.81, 0.0];

/// The scenario's and the report's names of a stabiliser's [`Baseline`].
#[derive(Deserialize, Serialize)]
#[serde(remote = "Baseline", rename_all = "snake_case")]
enum BaselineName {
    Predicted,
    Measured,
}

/// A `walk3d` scenario file, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Walk3dScenario {
    /// Always `"walk3d"`.
    pub kind: String,
    /// Name (letters, digits, `_`, `-`).
    pub name: String,
    /// The humanoid's URDF, relative to the scenario file.
    pub urdf: PathBuf,
    /// The control rates, Hz, each in [50, 5000]: one run per controller and rate; the plant
    /// steps once per tick.
    pub control_rates_hz: Vec<f64>,
    /// Each run's simulated length, s.
    pub duration_s: f64,
    /// The controllers, in report order (default both).
    #[serde(default = "default_laws")]
    pub controllers: Vec<String>,
    /// How the walk starts (default `"cartwheel"`).
    #[serde(default)]
    pub start: Start,
    /// The desired coronal (rightward) speed of the centre of mass, m/s, cycled through, each
    /// held for `steps_per_speed` steps (default `[0]`: straight ahead).
    #[serde(default = "default_speeds")]
    pub coronal_speeds_m_s: Vec<f64>,
    /// Steps per entry of `coronal_speeds_m_s` (default 5).
    #[serde(default = "default_steps_per_speed")]
    pub steps_per_speed: u32,
    /// The walk has fallen when the pelvis's centre of mass is below this height, m (default
    /// 0.6), or when any body but the feet and toes touches the ground.
    #[serde(default = "default_fall_height")]
    pub fall_height_m: f64,
    /// `simbicon3d_analytic`'s margin μ in (0, 1) (default 0.5).
    #[serde(default = "default_margin")]
    pub stability_margin: f64,
    /// Which joint plays which part (default: `models/humanoid15.urdf`'s names).
    #[serde(default)]
    pub roles: RolesSpec,
    /// Forces on bodies (the plant's pushes).
    #[serde(default)]
    pub pushes: Vec<Push>,
    /// Velocity tuning: hold the forward speed at a target by moving the desired forward
    /// velocity SIMBICON's feedback reads, once per step (default: none, Cartwheel's walk).
    #[serde(default)]
    pub speed_tuning: Option<SpeedTuningSpec>,
    /// A push test: after each (controller, rate)'s walk, one more walk per direction, start
    /// and impulse, each with that one push added (default: none).
    #[serde(default)]
    pub push_test: Option<PushTest>,
    /// `simbicon3d_tuned`'s gains per control rate (from `hil study walk3d-cmaes`): every rate
    /// of `control_rates_hz` needs an entry when that controller is named.
    #[serde(default)]
    pub tuned_gains: Vec<TunedGains>,
    /// The gains under the ground-contact stabiliser (`simbicon3d_stabilised*`): `"cartwheel"`
    /// (default) or `"tuned"` (each rate's `tuned_gains`).
    #[serde(default)]
    pub stabiliser_gains: StabiliserGains,
    /// Where the stabiliser's spread without a supplement comes from: `"measured"` (default:
    /// the plant's corner forces of the last step, the model giving the supplement's effect)
    /// or `"predicted"` (the reduced model's rigid one-step prediction, as the paper).
    #[serde(default, with = "BaselineName")]
    pub stabiliser_baseline: Baseline,
    /// The first this many seconds of each controller's run at the first rate as an animated
    /// side view, `walk3d_<controller>.gif`, and in the 3D replay `replay.html` (default 0:
    /// neither; at most 60).
    #[serde(default)]
    pub animation_s: f64,
}

fn default_laws() -> Vec<String> {
    WalkLaw::ALL.iter().map(|l| l.name().to_owned()).collect()
}
fn default_speeds() -> Vec<f64> {
    vec![0.0]
}
fn default_steps_per_speed() -> u32 {
    5
}
fn default_fall_height() -> f64 {
    0.6
}
fn default_margin() -> f64 {
    0.5
}

/// The velocity tuning of a walk (see [`control_core::simbicon3d::SpeedTuner`]).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SpeedTuningSpec {
    /// The forward speeds to hold, m/s, each within ±5: cycled through, each held for
    /// `steps_per_speed` steps (with the coronal speeds' entries).
    pub targets_m_s: Vec<f64>,
    /// The desired forward velocity's move per step per m/s of the last step's speed error, in
    /// [0, 10] (default 0.25).
    #[serde(default = "default_tuning_gain")]
    pub gain: f64,
    /// The desired forward velocity stays within ±this, m/s, in [0, 5] (default 1).
    #[serde(default = "default_tuning_bound")]
    pub bound_m_s: f64,
}

fn default_tuning_gain() -> f64 {
    0.25
}
fn default_tuning_bound() -> f64 {
    1.0
}

impl SpeedTuningSpec {
    fn tuning(&self) -> SpeedTuning {
        SpeedTuning {
            target_m_s: self.targets_m_s.first().copied().unwrap_or(0.0),
            gain: self.gain,
            bound_m_s: self.bound_m_s,
        }
    }

    fn check(&self) -> Result<(), (String, String)> {
        let bad = |f: &str, r: String| Err((format!("speed_tuning.{f}"), r));
        let (g, b) = (self.gain, self.bound_m_s);
        let n = self.targets_m_s.len();
        if n == 0 || n > 64 {
            return bad("targets_m_s", format!("{n} speeds: give 1 to 64"));
        }
        for (k, &t) in self.targets_m_s.iter().enumerate() {
            if !(t.is_finite() && t.abs() <= 5.0) {
                return bad(
                    &format!("targets_m_s[{k}]"),
                    format!("{t}: must be within ±5 m/s"),
                );
            }
        }
        if !(0.0..=10.0).contains(&g) {
            return bad("gain", format!("{g}: must be in [0, 10]"));
        }
        if !(0.0..=5.0).contains(&b) {
            return bad("bound_m_s", format!("{b}: must be in [0, 5] m/s"));
        }
        Ok(())
    }
}

/// Pushes of rising impulse at several moments of the gait, in several directions: one walk
/// each (see [`Walk3dScenario::push_test`]).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PushTest {
    /// The link pushed, at its body's centre of mass (default: `roles.pelvis`).
    #[serde(default)]
    pub link: Option<String>,
    /// The directions, world frame (y up, x forward, z right), each normalised: 1 to 8.
    pub directions_world: Vec<[f64; 3]>,
    /// When each push starts, s (the moments fall at different phases of a step; the report
    /// gives the phase): 1 to 16, each with its push ending before `duration_s`.
    pub at_s: Vec<f64>,
    /// Each push's length, s, in (0, 1] (the force is impulse / length).
    pub duration_s: f64,
    /// The impulses, N·s, rising, each > 0: 1 to 32.
    pub impulses_ns: Vec<f64>,
}

impl PushTest {
    /// The walks the test adds per (controller, rate).
    pub fn runs(&self) -> usize {
        self.directions_world.len() * self.at_s.len() * self.impulses_ns.len()
    }

    /// The push of one walk: `direction` (normalised), at `at_s`, with `impulse_ns`.
    fn push(&self, link: &str, direction: [f64; 3], at_s: f64, impulse_ns: f64) -> Push {
        let f = impulse_ns / self.duration_s;
        Push {
            body: link.to_owned(),
            force_n: direction.map(|d| d * f),
            start_s: at_s,
            duration_s: self.duration_s,
        }
    }

    fn check(&self, walk_s: f64) -> Result<(), (String, String)> {
        let bad = |f: &str, r: String| Err((format!("push_test.{f}"), r));
        let n = self.directions_world.len();
        if n == 0 || n > 8 {
            return bad("directions_world", format!("{n} directions: give 1 to 8"));
        }
        for (k, d) in self.directions_world.iter().enumerate() {
            let norm = d.iter().map(|x| x * x).sum::<f64>().sqrt();
            if !(norm.is_finite() && norm > 1e-9) {
                return bad(
                    &format!("directions_world[{k}]"),
                    format!("{d:?}: not a direction (finite, not zero)"),
                );
            }
        }
        let d = self.duration_s;
        if !(d > 0.0 && d <= 1.0) {
            return bad("duration_s", format!("{d}: must be in (0, 1] s"));
        }
        let n = self.at_s.len();
        if n == 0 || n > 16 {
            return bad("at_s", format!("{n} start times: give 1 to 16"));
        }
        for (k, &t) in self.at_s.iter().enumerate() {
            if !(t >= 0.0 && t + d < walk_s) {
                return bad(
                    &format!("at_s[{k}]"),
                    format!(
                        "{t}: the push must start at 0 s or later and end before the walk's {walk_s} s"
                    ),
                );
            }
        }
        let n = self.impulses_ns.len();
        if n == 0 || n > 32 {
            return bad("impulses_ns", format!("{n} impulses: give 1 to 32"));
        }
        for (k, &j) in self.impulses_ns.iter().enumerate() {
            let f = j / d;
            if !(j > 0.0 && f <= sim_host::scene::MAX_PUSH_FORCE_N) {
                return bad(
                    &format!("impulses_ns[{k}]"),
                    format!(
                        "{j}: must be > 0 N·s, its force (impulse / duration_s) at most {} N",
                        sim_host::scene::MAX_PUSH_FORCE_N
                    ),
                );
            }
            if k > 0 && j <= self.impulses_ns[k - 1] {
                return bad(&format!("impulses_ns[{k}]"), format!("{j}: must rise"));
            }
        }
        Ok(())
    }

    /// The directions, normalised.
    fn unit_directions(&self) -> Vec<[f64; 3]> {
        self.directions_world
            .iter()
            .map(|d| {
                let n = d.iter().map(|x| x * x).sum::<f64>().sqrt();
                d.map(|x| x / n)
            })
            .collect()
    }
}

/// Gains found for one control rate.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TunedGains {
    /// The rate, Hz.
    pub rate_hz: f64,
    /// [kp, kd] per group of [`GROUPS`], in that order.
    pub gains: GroupGains,
}

/// How a walk starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Start {
    /// Cartwheel's saved walking state for Bip (`WalkingState.rs`): its joint rotations and the
    /// pelvis's velocity (1.08 m/s forward), on the left foot.
    #[default]
    Cartwheel,
    /// Standing at rest in the zero pose.
    Stand,
}

/// Cartwheel's `WalkingState.rs` for Bip, mapped to this project's axes (a Cartwheel vector
/// (x, y, z) is (z, y, −x) here): each joint's relative rotation as an axis-angle vector, rad,
/// with a hinge's off-axis parts and a two-axis joint's locked part (|·| < 0.004 rad) left out.
pub const CARTWHEEL_START_ROTATIONS: [(&str, [f64; 3]); 13] = [
    ("waist", [0.019899, 0.073314, 0.006614]),
    ("left_hip", [-0.030971, -0.004925, 0.424692]),
    ("right_hip", [0.070516, -0.018680, -0.173586]),
    ("neck", [-0.004107, -0.111173, 0.059001]),
    ("left_shoulder", [-1.579188, 0.051598, -0.053175]),
    ("right_shoulder", [1.545802, 0.109208, 0.118175]),
    ("left_knee", [0.0, 0.0, -0.106422]),
    ("left_elbow", [0.0, -0.179069, 0.0]),
    ("right_elbow", [0.0, 0.225155, 0.0]),
    ("left_ankle", [0.044806, 0.0, 0.282082]),
    ("right_ankle", [-0.052866, 0.0, 0.240622]),
    ("left_toe", [0.0, 0.0, 0.002964]),
    ("right_toe", [0.0, 0.0, 0.054125]),
];

/// The pelvis's velocity in Cartwheel's saved walking state, here, m/s.
pub const CARTWHEEL_START_VELOCITY_M_S: [f64; 3] = [1.078190, -0.255831, -0.095324];

/// The gains the stabilised controllers walk on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StabiliserGains {
    /// Cartwheel's.
    #[default]
    Cartwheel,
    /// The scenario's `tuned_gains` for the rate.
    Tuned,
}

/// The controllers of a `walk3d` scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkLaw {
    /// Cartwheel's gains as given.
    Simbicon3d,
    /// Cartwheel's gains made stable for the control period where they are not.
    Simbicon3dAnalytic,
    /// The gains the scenario gives for the rate (`tuned_gains`, found by Algorithm 1).
    Simbicon3dTuned,
    /// Cartwheel's gains with the ground-contact stabiliser predicting on a reduced model.
    Simbicon3dStabilised(ReducedModel),
    /// Cartwheel's gains through stable PD ([`control_core::stable_pd`]).
    Simbicon3dStablePd,
    /// Cartwheel's gains through stable PD, with the ground-contact stabiliser.
    Simbicon3dStablePdStabilised(ReducedModel),
}

impl WalkLaw {
    /// Every one, in report order.
    pub const ALL: [Self; 10] = [
        Self::Simbicon3d,
        Self::Simbicon3dAnalytic,
        Self::Simbicon3dTuned,
        Self::Simbicon3dStabilised(ReducedModel::M5),
        Self::Simbicon3dStabilised(ReducedModel::M3),
        Self::Simbicon3dStabilised(ReducedModel::M0),
        Self::Simbicon3dStablePd,
        Self::Simbicon3dStablePdStabilised(ReducedModel::M5),
        Self::Simbicon3dStablePdStabilised(ReducedModel::M3),
        Self::Simbicon3dStablePdStabilised(ReducedModel::M0),
    ];

    /// The name in scenarios and reports.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Simbicon3d => "simbicon3d",
            Self::Simbicon3dAnalytic => "simbicon3d_analytic",
            Self::Simbicon3dTuned => "simbicon3d_tuned",
            Self::Simbicon3dStabilised(ReducedModel::M5) => "simbicon3d_stabilised",
            Self::Simbicon3dStabilised(ReducedModel::M3) => "simbicon3d_stabilised_m3",
            Self::Simbicon3dStabilised(ReducedModel::M0) => "simbicon3d_stabilised_m0",
            Self::Simbicon3dStablePd => "simbicon3d_stable_pd",
            Self::Simbicon3dStablePdStabilised(ReducedModel::M5) => {
                "simbicon3d_stable_pd_stabilised"
            }
            Self::Simbicon3dStablePdStabilised(ReducedModel::M3) => {
                "simbicon3d_stable_pd_stabilised_m3"
            }
            Self::Simbicon3dStablePdStabilised(ReducedModel::M0) => {
                "simbicon3d_stable_pd_stabilised_m0"
            }
        }
    }

    /// The ground-contact stabiliser's reduced model (`None`: no stabiliser).
    pub const fn stabiliser(self) -> Option<ReducedModel> {
        match self {
            Self::Simbicon3dStabilised(m) | Self::Simbicon3dStablePdStabilised(m) => Some(m),
            _ => None,
        }
    }

    /// Whether the torques go through stable PD.
    pub const fn stable_pd(self) -> bool {
        matches!(
            self,
            Self::Simbicon3dStablePd | Self::Simbicon3dStablePdStabilised(_)
        )
    }

    /// The law named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.name() == name)
    }

    /// Its animation's file (the scenario's first rate).
    pub const fn gif_name(self) -> &'static str {
        match self {
            Self::Simbicon3d => "walk3d_simbicon3d.gif",
            Self::Simbicon3dAnalytic => "walk3d_simbicon3d_analytic.gif",
            Self::Simbicon3dTuned => "walk3d_simbicon3d_tuned.gif",
            Self::Simbicon3dStabilised(ReducedModel::M5) => "walk3d_simbicon3d_stabilised.gif",
            Self::Simbicon3dStabilised(ReducedModel::M3) => "walk3d_simbicon3d_stabilised_m3.gif",
            Self::Simbicon3dStabilised(ReducedModel::M0) => "walk3d_simbicon3d_stabilised_m0.gif",
            Self::Simbicon3dStablePd => "walk3d_simbicon3d_stable_pd.gif",
            Self::Simbicon3dStablePdStabilised(ReducedModel::M5) => {
                "walk3d_simbicon3d_stable_pd_stabilised.gif"
            }
            Self::Simbicon3dStablePdStabilised(ReducedModel::M3) => {
                "walk3d_simbicon3d_stable_pd_stabilised_m3.gif"
            }
            Self::Simbicon3dStablePdStabilised(ReducedModel::M0) => {
                "walk3d_simbicon3d_stable_pd_stabilised_m0.gif"
            }
        }
    }
}

impl Walk3dScenario {
    /// Parses and checks a scenario file's text; a relative `urdf` is resolved against the file's
    /// folder. The roles are checked against the URDF by [`Walk3dScenario::prepare`].
    pub fn parse(text: &str, path: &Path) -> Result<Self, ScenarioError> {
        Self::from_document(
            super::scenario::Document::parse(text, &path.display().to_string())?,
            path,
        )
    }

    /// [`Self::parse`] of a parsed file, read from `path`.
    pub fn from_document(
        doc: super::scenario::Document<'_>,
        path: &Path,
    ) -> Result<Self, ScenarioError> {
        let file = doc.file().to_owned();
        let mut s: Self = doc.into_kind()?;
        if s.urdf.is_relative()
            && let Some(dir) = path.parent()
        {
            s.urdf = dir.join(&s.urdf);
        }
        s.check().map_err(|(field, reason)| ScenarioError {
            file,
            field,
            reason,
        })?;
        Ok(s)
    }

    fn check(&self) -> Result<(), (String, String)> {
        let bad = |f: &str, r: String| Err((f.to_owned(), r));
        super::scenario::check_kind_and_name(&self.kind, KIND, &self.name)?;
        if self.control_rates_hz.is_empty() || self.control_rates_hz.len() > 32 {
            return bad("control_rates_hz", "give 1 to 32 rates".into());
        }
        for (k, &r) in self.control_rates_hz.iter().enumerate() {
            if !(r.is_finite() && (50.0..=5000.0).contains(&r)) {
                return bad(
                    &format!("control_rates_hz[{k}]"),
                    format!("{r}: must be within [50, 5000] Hz"),
                );
            }
        }
        let d = self.duration_s;
        if !(d > 0.0 && d <= MAX_END_S) {
            return bad("duration_s", format!("{d}: must be in (0, {MAX_END_S}] s"));
        }
        if self.controllers.is_empty() {
            return bad("controllers", "name at least one controller".into());
        }
        for (k, c) in self.controllers.iter().enumerate() {
            if WalkLaw::from_name(c).is_none() {
                return bad(
                    &format!("controllers[{k}]"),
                    format!(
                        "`{c}` is no controller of this kind (known: {})",
                        default_laws().join(", ")
                    ),
                );
            }
            if self.controllers[..k].contains(c) {
                return bad(
                    &format!("controllers[{k}]"),
                    format!("`{c}` is given twice"),
                );
            }
        }
        if self.coronal_speeds_m_s.is_empty() || self.coronal_speeds_m_s.len() > 64 {
            return bad("coronal_speeds_m_s", "give 1 to 64 speeds".into());
        }
        for (k, &v) in self.coronal_speeds_m_s.iter().enumerate() {
            if !(v.is_finite() && v.abs() <= 2.0) {
                return bad(
                    &format!("coronal_speeds_m_s[{k}]"),
                    format!("{v}: must be within ±2 m/s"),
                );
            }
        }
        if !(1..=10_000).contains(&self.steps_per_speed) {
            return bad(
                "steps_per_speed",
                format!("{}: must be in [1, 10000]", self.steps_per_speed),
            );
        }
        let h = self.fall_height_m;
        if !(h > 0.0 && h <= 10.0) {
            return bad("fall_height_m", format!("{h}: must be in (0, 10] m"));
        }
        for (k, t) in self.tuned_gains.iter().enumerate() {
            let f = format!("tuned_gains[{k}]");
            if !t.rate_hz.is_finite() {
                return bad(
                    &format!("{f}.rate_hz"),
                    format!("{}: not finite", t.rate_hz),
                );
            }
            if self.tuned_gains[..k].iter().any(|u| u.rate_hz == t.rate_hz) {
                return bad(
                    &format!("{f}.rate_hz"),
                    format!("{} Hz is given twice", t.rate_hz),
                );
            }
            for (g, [kp, kd]) in t.gains.iter().enumerate() {
                let ok = kp.is_finite() && *kp > 0.0 && *kp <= 1e6 && kd.is_finite();
                if !(ok && *kd >= 0.0 && *kd <= 1e6) {
                    return bad(
                        &format!("{f}.gains[{g}]"),
                        format!(
                            "{} kp {kp}, kd {kd}: kp in (0, 1e6], kd in [0, 1e6]",
                            GROUPS[g]
                        ),
                    );
                }
            }
        }
        let tuned_law = self.laws().into_iter().find(|l| {
            *l == WalkLaw::Simbicon3dTuned
                || (matches!(l, WalkLaw::Simbicon3dStabilised(_))
                    && self.stabiliser_gains == StabiliserGains::Tuned)
        });
        if let Some(law) = tuned_law {
            for (k, r) in self.control_rates_hz.iter().enumerate() {
                if self.tuned(*r).is_none() {
                    return bad(
                        "tuned_gains",
                        format!(
                            "{} runs on tuned gains at control_rates_hz[{k}] = {r} Hz: give them ([[tuned_gains]] rate_hz = {r})",
                            law.name()
                        ),
                    );
                }
            }
        }
        let a = self.animation_s;
        if !(0.0..=60.0).contains(&a) {
            return bad("animation_s", format!("{a}: must be in [0, 60] s"));
        }
        let m = self.stability_margin;
        if !(m > 0.0 && m < 1.0) {
            return bad("stability_margin", format!("{m}: must be in (0, 1)"));
        }
        if let Some(p) = &self.push_test {
            p.check(self.duration_s)?;
        }
        if let Some(t) = &self.speed_tuning {
            t.check()?;
        }
        Ok(())
    }

    /// The tuned gains for `rate_hz`, if given.
    pub fn tuned(&self, rate_hz: f64) -> Option<&GroupGains> {
        self.tuned_gains
            .iter()
            .find(|t| t.rate_hz == rate_hz)
            .map(|t| &t.gains)
    }

    /// The link the push test pushes.
    pub fn push_link(&self) -> &str {
        self.push_test
            .as_ref()
            .and_then(|t| t.link.as_deref())
            .unwrap_or(&self.roles.pelvis)
    }

    /// The controllers named, in file order.
    pub fn laws(&self) -> Vec<WalkLaw> {
        self.controllers
            .iter()
            .filter_map(|c| WalkLaw::from_name(c))
            .collect()
    }

    /// The plant's scene for a run at `rate_hz`.
    pub fn scene(&self, rate_hz: f64) -> HumanoidScene {
        let mut scene = HumanoidScene::new(self.urdf.clone(), self.duration_s, GRAVITY);
        scene.dt_s = 1.0 / rate_hz;
        if self.start == Start::Cartwheel {
            scene.initial_velocity_m_s = CARTWHEEL_START_VELOCITY_M_S;
            for (name, v) in CARTWHEEL_START_ROTATIONS {
                scene.initial_joint_rotations_rad.insert(name.to_owned(), v);
            }
        }
        scene.pushes = self.pushes.clone();
        scene
    }

    /// Loads the humanoid, resolves the roles (each refused naming its field) and checks the
    /// plant's scene in process, before anything runs.
    pub fn prepare(&self, file: &str) -> Result<Prepared, ScenarioError> {
        let error = |field: &str, reason: String| ScenarioError {
            file: file.to_owned(),
            field: field.to_owned(),
            reason,
        };
        let model = HumanoidModel::load(&self.urdf).map_err(|e| error("urdf", e.to_string()))?;
        let body = |field: String, name: &str| {
            model.body_index(name).ok_or_else(|| {
                error(
                    &field,
                    format!("`{name}` is no link of {}", self.urdf.display()),
                )
            })
        };
        let roles = self
            .roles
            .resolve(&model, &self.urdf)
            .map_err(|(field, reason)| error(&field, reason))?;
        for &rate in &self.control_rates_hz {
            sim_host::humanoid::HumanoidPlant::new(&self.scene(rate)).map_err(|e| {
                error(
                    &format!("(plant) {}", e.field),
                    format!("{} (at {rate} Hz)", e.reason),
                )
            })?;
        }
        if let Some(t) = &self.push_test {
            let link = self.push_link();
            body("push_test.link".into(), link)?;
            // The plant's own checks on the strongest push of the test.
            let rate = self.control_rates_hz.first().copied().unwrap_or(300.0);
            let strongest = t.impulses_ns.last().copied().unwrap_or(0.0);
            let at = t.at_s.first().copied().unwrap_or(0.0);
            for (k, d) in t.unit_directions().into_iter().enumerate() {
                let mut scene = self.scene(rate);
                scene.pushes.push(t.push(link, d, at, strongest));
                sim_host::humanoid::HumanoidPlant::new(&scene).map_err(|e| {
                    error(
                        &format!("push_test (plant) {}", e.field),
                        format!(
                            "{} (the test's strongest push in directions_world[{k}] added to `pushes`)",
                            e.reason
                        ),
                    )
                })?;
            }
        }
        let mut controllers = Vec::new();
        for &rate in &self.control_rates_hz {
            for law in self.laws() {
                let gains = match law {
                    WalkLaw::Simbicon3dTuned => self.tuned(rate),
                    WalkLaw::Simbicon3dStabilised(_)
                        if self.stabiliser_gains == StabiliserGains::Tuned =>
                    {
                        self.tuned(rate)
                    }
                    _ => None,
                };
                let c = Walk3dController::new(law, &model, roles, self, rate, gains)
                    .map_err(|e| error("roles", format!("{}: {e}", law.name())))?;
                controllers.push((law, rate, c));
            }
        }
        Ok(Prepared {
            model,
            roles,
            controllers,
        })
    }
}

/// A checked scenario's humanoid and controllers.
pub struct Prepared {
    /// The humanoid.
    pub model: HumanoidModel,
    /// The joints' roles.
    pub roles: BipRoles,
    /// One controller per (law, rate), rates in file order.
    pub controllers: Vec<(WalkLaw, f64, Walk3dController)>,
}

/// The prepared scenario that `run_kind` runs.
pub struct Walk3d {
    /// The file.
    pub s: Walk3dScenario,
    /// Its humanoid and controllers.
    pub p: Prepared,
}

impl Walk3d {
    /// Parses, checks and prepares a file.
    pub fn prepare(doc: super::scenario::Document<'_>, path: &Path) -> Result<Self, ScenarioError> {
        let s = Walk3dScenario::from_document(doc, path)?;
        let p = s.prepare(&path.display().to_string())?;
        Ok(Self { s, p })
    }

    /// The controllers named.
    pub fn laws(&self) -> Vec<WalkLaw> {
        self.s.laws()
    }
}

/// The inertia (world axes of the zero pose, diagonal) of `bodies` about `point`, kg·m².
fn inertia_about(
    model: &HumanoidModel,
    poses: &[BodyPose],
    point: [f64; 3],
    bodies: &[usize],
) -> Result<[f64; 3], String> {
    let list: Vec<BodyInertia> = bodies
        .iter()
        .map(|&b| BodyInertia {
            mass_kg: model.bodies[b].mass_kg,
            principal_inertia_kgm2: model.bodies[b].inertia_kg_m2.into(),
            orientation: UnitQuaternion::identity(),
            com_m: poses[b].com_m.into(),
        })
        .collect();
    let m = subtree_inertia_about(&point.into(), &list).map_err(|e| e.to_string())?;
    Ok([m[(0, 0)], m[(1, 1)], m[(2, 2)]])
}

/// The joint groups whose gains a study searches (Bip is mirror-symmetric: one pair per group,
/// both sides alike).
pub const GROUPS: [&str; 9] = [
    "root", "waist", "neck", "hip", "knee", "ankle", "toe", "shoulder", "elbow",
];

/// [kp N·m/rad, kd N·m·s/rad] per group of [`GROUPS`], in that order.
pub type GroupGains = [[f64; 2]; 9];

/// Cartwheel's Bip gains per group (its `Walking.py`).
pub const CARTWHEEL_GAINS: GroupGains = [
    [3000.0, 300.0],
    [200.0, 30.0],
    [200.0, 20.0],
    [300.0, 30.0],
    [300.0, 30.0],
    [75.0, 10.0],
    [10.0, 0.5],
    [20.0, 5.0],
    [5.0, 1.0],
];

/// `config` with each group's gains replaced by `gains` (the per-axis scales kept).
fn with_group_gains(
    mut config: Simbicon3dConfig,
    roles: &BipRoles,
    gains: &GroupGains,
) -> Simbicon3dConfig {
    config.root.kp = gains[0][0];
    config.root.kd = gains[0][1];
    let mut set = |joint: Option<usize>, g: [f64; 2]| {
        if let Some(j) = joint.and_then(|j| config.joints.get_mut(j)) {
            j.kp = g[0];
            j.kd = g[1];
        }
    };
    set(Some(roles.waist), gains[1]);
    set(Some(roles.neck), gains[2]);
    for side in &roles.sides {
        set(Some(side.hip), gains[3]);
        set(Some(side.knee), gains[4]);
        set(Some(side.ankle), gains[5]);
        set(side.toe, gains[6]);
        set(side.shoulder, gains[7]);
        set(side.elbow, gains[8]);
    }
    config
}

/// One tick's command: the library's, with the plant step it answers.
#[derive(Debug, Clone, Copy)]
pub struct Walk3dTick {
    /// The plant step it answers.
    pub step: u64,
    /// Its time, s.
    pub time_s: f64,
    /// The safe state's output.
    pub safe: bool,
    /// The controller refused its input (the safe state's damping was sent).
    pub refused: bool,
    /// The walker's command.
    pub walk: Walker3dCommand,
}

impl LoopCommand for Walk3dTick {
    fn step(&self) -> u64 {
        self.step
    }
    fn is_safe(&self) -> bool {
        self.safe
    }
    fn torques(&self) -> &[f64] {
        self.walk.torques_nm.get(..self.walk.len).unwrap_or(&[])
    }
}

/// The walking controller of a run, the same object in lockstep and in real time: the
/// library's [`Walker3d`] (boxed: stable PD's matrices and the stabiliser's models take about
/// 0.14 MB) fed from the plant's state.
#[derive(Debug, Clone)]
pub struct Walk3dController {
    walker: Box<Walker3d>,
    bodies: usize,
    /// What the analytic rule moved (`None` for Cartwheel's gains).
    pub moves: Option<GainMoves>,
}

impl Walk3dController {
    /// Builds `law`'s controller for the humanoid `model` at `rate_hz`.
    pub fn new(
        law: WalkLaw,
        model: &HumanoidModel,
        roles: BipRoles,
        s: &Walk3dScenario,
        rate_hz: f64,
        gains: Option<&GroupGains>,
    ) -> Result<Self, String> {
        if model.joints.len() > MAX_WALK_JOINTS || 3 * model.joints.len() > MAX_JOINTS {
            return Err(format!(
                "{} joints: the walker drives at most {MAX_WALK_JOINTS}",
                model.joints.len()
            ));
        }
        let joints = model.walk_joints();
        let masses: Vec<f64> = model.bodies.iter().map(|b| b.mass_kg).collect();
        let config = Simbicon3dConfig::cartwheel_bip_walking(&masses, &joints, roles, Side::Left)
            .map_err(|e| e.to_string())?;
        let config = match gains {
            Some(g) => with_group_gains(config, &roles, g),
            None => config,
        };
        let (config, moves) = match law {
            WalkLaw::Simbicon3d
            | WalkLaw::Simbicon3dTuned
            | WalkLaw::Simbicon3dStabilised(_)
            | WalkLaw::Simbicon3dStablePd
            | WalkLaw::Simbicon3dStablePdStabilised(_) => (config, None),
            WalkLaw::Simbicon3dAnalytic => {
                let upright = BodyPose {
                    com_m: [0.0; 3],
                    orientation: [1.0, 0.0, 0.0, 0.0],
                };
                let poses = model.pose(upright, &[]);
                let mut inertias = Vec::with_capacity(model.joints.len());
                for j in &model.joints {
                    let (p, a) = (poses[j.parent].com_m, j.anchor_in_parent_m);
                    let anchor = [p[0] + a[0], p[1] + a[1], p[2] + a[2]];
                    inertias.push(inertia_about(
                        model,
                        &poses,
                        anchor,
                        &model.subtree(j.child),
                    )?);
                }
                let root = roles.root_body;
                let pelvis = inertia_about(model, &poses, poses[root].com_m, &[root])?;
                let (c, m) = config
                    .stabilised(1.0 / rate_hz, s.stability_margin, &inertias, pelvis)
                    .map_err(|e| e.to_string())?;
                (c, Some(m))
            }
        };
        let stable_pd = if law.stable_pd() {
            Some(model.stable_pd(1.0 / rate_hz)?)
        } else {
            None
        };
        let stabiliser = match law.stabiliser() {
            Some(reduced) => Some(stance_stabiliser(
                model,
                &roles,
                reduced,
                s.stabiliser_baseline,
                GRAVITY,
                StabiliserSettings::DEFAULT,
            )?),
            None => None,
        };
        let targets = s
            .speed_tuning
            .as_ref()
            .map_or_else(Vec::new, |t| t.targets_m_s.clone());
        let tuner = s
            .speed_tuning
            .as_ref()
            .map(|t| SpeedTuner::new(t.tuning()))
            .transpose()
            .map_err(|e| e.to_string())?;
        let spec = Walker3dSpec {
            coronal_speeds_m_s: &s.coronal_speeds_m_s,
            steps_per_speed: s.steps_per_speed,
            tuner,
            forward_targets_m_s: &targets,
        };
        let walker = Simbicon3d::new(config).map_err(|e| e.to_string())?;
        Ok(Self {
            walker: Box::new(
                Walker3d::new(walker, stable_pd, stabiliser, &spec).map_err(|e| e.to_string())?,
            ),
            bodies: model.bodies.len(),
            moves,
        })
    }

    /// The gains the walker uses: (kp, kd) per joint, in joint order, and the pelvis's.
    pub fn gains(&self) -> (Vec<[f64; 2]>, [f64; 2]) {
        let c = self.walker.walker().config();
        (
            c.joints.iter().map(|j| [j.kp, j.kd]).collect(),
            [c.root.kp, c.root.kd],
        )
    }

    /// The library walker's input of state `s`.
    fn input(s: &HumanoidState) -> Walker3dInput<'_> {
        Walker3dInput {
            time_s: s.sim_time_s,
            plant: StanceInput {
                bodies: s.bodies.get(..s.body_count).unwrap_or(&[]),
                contact_normal_n: s.contact_normal_n,
                sole_corner_n: [0, 1].map(|side| s.sole_corners(side).unwrap_or_default()),
            },
        }
    }

    /// One tick (never allocates, blocks or panics).
    pub fn tick(&mut self, s: HumanoidState) -> Walk3dTick {
        match self.walker.tick(&Self::input(&s)) {
            Ok(walk) => Walk3dTick {
                step: s.step,
                time_s: s.sim_time_s,
                safe: false,
                refused: false,
                walk,
            },
            Err(_) => {
                let mut out = self.safe(s);
                out.safe = false;
                out.refused = true;
                out
            }
        }
    }

    /// The safe state: each joint damps its relative angular velocity, within its effort.
    pub fn safe(&self, s: HumanoidState) -> Walk3dTick {
        Walk3dTick {
            step: s.step,
            time_s: s.sim_time_s,
            safe: true,
            refused: false,
            walk: self.walker.safe(&s.bodies),
        }
    }
}

impl LoopController for Walk3dController {
    type State = HumanoidState;
    type Command = Walk3dTick;

    fn state_of(frame: &StateFrame) -> Option<HumanoidState> {
        Some(HumanoidState::of(frame))
    }

    fn tick(&mut self, state: HumanoidState) -> Walk3dTick {
        Self::tick(self, state)
    }

    fn safe(&self, state: HumanoidState) -> Walk3dTick {
        Self::safe(self, state)
    }

    fn accepts(&self, state: &HumanoidState) -> Result<(), String> {
        state.fits(self.bodies)
    }
}

/// One step of a walk, as the report lists it.
#[derive(Debug, Clone, Serialize)]
pub struct StepOut {
    /// When it began (the foot strike, or the state's end), s.
    pub time_s: f64,
    /// The new stance foot.
    pub stance: &'static str,
    /// The pelvis's position then, m (x forward, z right).
    pub pelvis_m: [f64; 2],
    /// The desired coronal speed during the step that ended, m/s.
    pub desired_coronal_m_s: f64,
    /// The desired forward velocity during the step that ended (the velocity tuning's), m/s.
    pub desired_forward_m_s: f64,
    /// The forward speed the velocity tuning held to during the step that ended, m/s.
    pub target_forward_m_s: Option<f64>,
    /// The centre of mass's mean coronal velocity over the step that ended, m/s.
    pub coronal_m_s: f64,
    /// Its mean forward velocity over the step that ended, m/s.
    pub forward_m_s: f64,
}

/// What judges and records a walk.
#[derive(Debug)]
pub struct Walk3dRecorder {
    feet: [usize; 4],
    pelvis: usize,
    fall_height_m: f64,
    touching: Vec<u16>,
    fell_at_s: Option<f64>,
    fell_because: Option<String>,
    steps: Vec<StepOut>,
    step_v: (f64, f64, u64, [f64; 2], Option<f64>),
    limited: u64,
    refused: u64,
    animation_s: f64,
    /// The humanoid's joints (a torque frame carries three values each).
    joints: usize,
    /// The norm of each joint's torque vector at the last tick, for the next pose kept.
    last_torque_norms: Vec<f64>,
    poses: Vec<PoseSample>,
    next_pose_s: f64,
    contacts: ContactOut,
    /// The stance side and loaded corners at the last tick the stance foot was on the ground.
    last_corners: Option<(usize, u8)>,
    /// Measured r_sag and r_cor summed over the stance ticks.
    r_sums: [f64; 2],
    /// The last stance tick's side and measured spread.
    last_spread: Option<(usize, Distribution)>,
    /// |Δ| sums between consecutive stance ticks.
    change_sums: [f64; 3],
    stabiliser: Option<StabiliserOut>,
    stable_pd: Option<StablePdOut>,
    /// The last tick's stabiliser prediction: stance side, without and with the supplement.
    prediction: Option<(usize, Distribution, Distribution)>,
    /// |Δ| sums of r_sag, r_cor and relative normal force.
    error_sums: [f64; 3],
}

/// A sole corner counts as loaded above this normal force, N.
pub const CORNER_LOADED_N: f64 = 1.0;

/// The stance foot's contact over a run, as the plant measured it at its sole's four corners
/// (Carensac et al.'s figure 2, middle).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ContactOut {
    /// Ticks the stance foot was on the ground (its corners' normal forces above 1 N in sum).
    pub stance_ticks: u64,
    /// Of those, ticks with a disequilibrium: fewer than four corners loaded (above
    /// [`CORNER_LOADED_N`]) or a change of which are since the tick before.
    pub disequilibrium_ticks: u64,
    /// `disequilibrium_ticks / stance_ticks`.
    pub disequilibrium_share: Option<f64>,
    /// Ticks with fewer than four corners loaded.
    pub fewer_than_four_ticks: u64,
    /// Ticks whose loaded corners changed since the tick before.
    pub changed_ticks: u64,
    /// Mean measured r_sag and r_cor (the less loaded side's share; 0.5 is even).
    pub mean_r: Option<[f64; 2]>,
    /// How much the measured spread moves from one stance tick to the next: the mean |Δ| of
    /// r_sag, r_cor and the normal force (relative), over consecutive stance ticks on the same
    /// foot (what predicting each tick as the last would miss).
    pub tick_to_tick_change: Option<[f64; 3]>,
    /// Consecutive stance ticks compared for `tick_to_tick_change`.
    pub consecutive_ticks: u64,
}

/// What the stabiliser did over a run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StabiliserOut {
    /// The reduced model it predicted with.
    pub model: &'static str,
    /// Where its baseline came from (`"measured"` or `"predicted"`).
    pub baseline: Option<&'static str>,
    /// Ticks with a supplement predicted better than none.
    pub improved_ticks: u64,
    /// Ticks where nothing beat no supplement.
    pub kept_ticks: u64,
    /// Ticks whose input or model failed (no supplement).
    pub failed_ticks: u64,
    /// Over the improved ticks: the predicted (r_sag, r_cor) without and with the supplement,
    /// summed (means in the report).
    pub predicted_r: [[f64; 2]; 2],
    /// Samples evaluated, summed.
    pub evaluations: u64,
    /// The prediction against the plant: the mean |predicted − measured| r_sag, r_cor and
    /// normal force (relative to the measured), the measured being the stance foot's corners
    /// over the step the supplement drove (ticks with the foot on the ground).
    pub prediction_error: Option<[f64; 3]>,
    /// Ticks compared for `prediction_error`.
    pub compared_ticks: u64,
    /// The predicted (r_sag, r_cor, normal N) without the supplement, and the measured, summed
    /// over the compared ticks (means in the report).
    pub predicted_vs_measured: [[f64; 3]; 2],
}

impl Walk3dRecorder {
    /// A recorder for the humanoid `model` with pelvis body `pelvis`, keeping poses for an
    /// animation of the first `animation_s` seconds (0: none).
    pub fn new(model: &HumanoidModel, pelvis: usize, fall_height_m: f64, animation_s: f64) -> Self {
        Self {
            feet: model.ground_contact_bodies,
            pelvis,
            fall_height_m,
            touching: Vec::new(),
            fell_at_s: None,
            fell_because: None,
            steps: Vec::new(),
            step_v: (0.0, 0.0, 0, [0.0; 2], None),
            limited: 0,
            refused: 0,
            animation_s,
            joints: model.joints.len(),
            last_torque_norms: Vec::new(),
            poses: Vec::new(),
            next_pose_s: 0.0,
            contacts: ContactOut::default(),
            last_corners: None,
            r_sums: [0.0; 2],
            last_spread: None,
            change_sums: [0.0; 3],
            stabiliser: None,
            stable_pd: None,
            prediction: None,
            error_sums: [0.0; 3],
        }
    }
}

impl Walk3dRecorder {
    /// Counts the stance foot's corners at the state the tick answered (`last`).
    fn count_corners(&mut self, stance: usize, last: Option<&HumanoidState>) {
        let Some((corners, ordered)) = last.and_then(|s| {
            Some((
                s.sole_corner_n.get(stance).copied()?,
                s.sole_corners(stance)?,
            ))
        }) else {
            return;
        };
        let total: f64 = corners.iter().map(|f| f.max(0.0)).sum();
        if !(total > CORNER_LOADED_N) {
            self.last_corners = None;
            self.last_spread = None;
            return;
        }
        let mask = corners
            .iter()
            .enumerate()
            .filter(|(_, f)| **f > CORNER_LOADED_N)
            .fold(0u8, |m, (k, _)| m | (1 << k));
        let c = &mut self.contacts;
        c.stance_ticks += 1;
        let fewer = mask != 0b1111;
        let changed = self
            .last_corners
            .is_some_and(|(side, m)| side == stance && m != mask);
        c.fewer_than_four_ticks += u64::from(fewer);
        c.changed_ticks += u64::from(changed);
        c.disequilibrium_ticks += u64::from(fewer || changed);
        self.last_corners = Some((stance, mask));
        let d = Distribution::of_corners(ordered);
        self.r_sums[0] += d.r_sag;
        self.r_sums[1] += d.r_cor;
        if let Some((side, e)) = self.last_spread
            && side == stance
        {
            c.consecutive_ticks += 1;
            self.change_sums[0] += (d.r_sag - e.r_sag).abs();
            self.change_sums[1] += (d.r_cor - e.r_cor).abs();
            self.change_sums[2] += ((d.normal_n - e.normal_n) / d.normal_n).abs();
        }
        self.last_spread = Some((stance, d));
    }

    /// When the walk fell, s (`None`: it has not).
    pub fn fell_at_s(&self) -> Option<f64> {
        self.fell_at_s
    }
}

/// Poses for the animation are kept this often, s.
pub const POSE_EVERY_S: f64 = 0.02;

/// What the walk's recorder measured of one run (inside the [`Run`] every kind's run is).
#[derive(Debug, Clone)]
pub struct Walk3dRun {
    /// The poses for the animation.
    pub poses: Vec<PoseSample>,
    /// When it fell, s.
    pub fell_at_s: Option<f64>,
    /// Why (the body that touched the ground, or the pelvis's height).
    pub fell_because: Option<String>,
    /// Steps before the fall (or the end).
    pub steps: Vec<StepOut>,
    /// Joint-ticks whose torque the effort cut.
    pub limited: u64,
    /// Ticks the controller refused (the safe state's damping was sent).
    pub refused: u64,
    /// The stance foot's corners.
    pub contacts: ContactOut,
    /// The stabiliser's work (`None`: none ran).
    pub stabiliser: Option<StabiliserOut>,
    /// Stable PD's work (`None`: not used).
    pub stable_pd: Option<StablePdOut>,
}

/// What stable PD did over a run.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct StablePdOut {
    /// Ticks it ran (until a fall).
    pub ticks: u64,
    /// Ticks it failed on (the walker's own torques were sent instead).
    pub fallback_ticks: u64,
}

impl KindRecorder<Walk3dController> for Walk3dRecorder {
    type Outcome = Walk3dRun;

    fn state(
        &mut self,
        frame: &StateFrame,
        state: &HumanoidState,
        _previous: Option<&HumanoidState>,
    ) {
        for e in &frame.events {
            match *e {
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
        if let (Some((stance, initial, predicted)), Some(st)) =
            (self.prediction.take(), self.stabiliser.as_mut())
            && let Some(c) = s.sole_corners(stance)
        {
            let m = Distribution::of_corners(c);
            if m.normal_n > CORNER_LOADED_N && self.fell_at_s.is_none() {
                st.compared_ticks += 1;
                self.error_sums[0] += (predicted.r_sag - m.r_sag).abs();
                self.error_sums[1] += (predicted.r_cor - m.r_cor).abs();
                self.error_sums[2] += ((predicted.normal_n - m.normal_n) / m.normal_n).abs();
                for (k, x) in [initial.r_sag, initial.r_cor, initial.normal_n]
                    .into_iter()
                    .enumerate()
                {
                    st.predicted_vs_measured[0][k] += x;
                }
                for (k, x) in [m.r_sag, m.r_cor, m.normal_n].into_iter().enumerate() {
                    st.predicted_vs_measured[1][k] += x;
                }
            }
        }
        if self.fell_at_s.is_none() {
            let h = s.bodies.get(self.pelvis).map_or(f64::NAN, |b| b.com_m[1]);
            if let Some(b) = self.touching.first() {
                self.fell_at_s = Some(frame.sim_time_s);
                self.fell_because = Some(format!("body {b} touched the ground"));
            } else if !(h >= self.fall_height_m) {
                self.fell_at_s = Some(frame.sim_time_s);
                self.fell_because = Some(format!(
                    "the pelvis came down to {h:.3} m (below {} m)",
                    self.fall_height_m
                ));
            }
        }
        if frame.sim_time_s < self.animation_s && frame.sim_time_s >= self.next_pose_s {
            self.next_pose_s = frame.sim_time_s + POSE_EVERY_S - 1e-9;
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

    fn tick(&mut self, c: &Walk3dTick, last: Option<&HumanoidState>) {
        if c.time_s < self.animation_s {
            torque_norms_into(&c.walk.torques_nm, self.joints, &mut self.last_torque_norms);
        }
        if self.fell_at_s.is_some() || c.safe {
            return;
        }
        self.limited += u64::from(c.walk.limited.count_ones());
        self.refused += u64::from(c.refused);
        self.count_corners(c.walk.stance.index(), last);
        if let Some(ok) = c.walk.stable_pd {
            let sp = self.stable_pd.get_or_insert_with(StablePdOut::default);
            sp.ticks += 1;
            sp.fallback_ticks += u64::from(!ok);
        }
        if let Some(o) = c.walk.stabiliser {
            let st = self.stabiliser.get_or_insert_with(StabiliserOut::default);
            st.evaluations += u64::from(o.evaluations);
            if matches!(
                o.status,
                StabiliserStatus::Improved | StabiliserStatus::Kept
            ) {
                self.prediction = Some((c.walk.stance.index(), o.initial, o.predicted));
            }
            match o.status {
                StabiliserStatus::Improved => {
                    st.improved_ticks += 1;
                    for (sum, d) in st.predicted_r.iter_mut().zip([o.initial, o.predicted]) {
                        sum[0] += d.r_sag;
                        sum[1] += d.r_cor;
                    }
                }
                StabiliserStatus::Kept => st.kept_ticks += 1,
                StabiliserStatus::BadInput | StabiliserStatus::Model => st.failed_ticks += 1,
            }
        }
        let (sum_z, sum_x, n, desired, target) = &mut self.step_v;
        if c.walk.step_began && c.time_s > 0.0 {
            let pelvis = last
                .and_then(|s| s.bodies.get(self.pelvis).copied())
                .map_or([f64::NAN; 2], |b| [b.com_m[0], b.com_m[2]]);
            let mean = |v: f64| if *n > 0 { v / *n as f64 } else { f64::NAN };
            self.steps.push(StepOut {
                time_s: c.time_s,
                stance: match c.walk.stance {
                    Side::Left => "left",
                    Side::Right => "right",
                },
                pelvis_m: pelvis,
                desired_coronal_m_s: desired[0],
                desired_forward_m_s: desired[1],
                target_forward_m_s: *target,
                coronal_m_s: mean(*sum_z),
                forward_m_s: mean(*sum_x),
            });
            *sum_z = 0.0;
            *sum_x = 0.0;
            *n = 0;
        }
        *sum_z += c.walk.v_m_s[2];
        *sum_x += c.walk.v_m_s[0];
        *n += 1;
        *desired = [c.walk.desired_coronal_m_s, c.walk.desired_forward_m_s];
        *target = c.walk.target_forward_m_s;
    }

    fn finish(self, _last: Option<&HumanoidState>) -> Walk3dRun {
        Walk3dRun {
            poses: self.poses,
            fell_at_s: self.fell_at_s,
            fell_because: self.fell_because,
            steps: self.steps,
            limited: self.limited,
            refused: self.refused,
            contacts: {
                let mut c = self.contacts;
                if c.stance_ticks > 0 {
                    let n = c.stance_ticks as f64;
                    c.disequilibrium_share = Some(c.disequilibrium_ticks as f64 / n);
                    c.mean_r = Some(self.r_sums.map(|s| s / n));
                }
                if c.consecutive_ticks > 0 {
                    let n = c.consecutive_ticks as f64;
                    c.tick_to_tick_change = Some(self.change_sums.map(|s| s / n));
                }
                c
            },
            stable_pd: self.stable_pd,
            stabiliser: self.stabiliser.map(|mut st| {
                if st.improved_ticks > 0 {
                    let n = st.improved_ticks as f64;
                    st.predicted_r = st.predicted_r.map(|r| r.map(|x| x / n));
                }
                if st.compared_ticks > 0 {
                    let n = st.compared_ticks as f64;
                    st.prediction_error = Some(self.error_sums.map(|x| x / n));
                    st.predicted_vs_measured = st.predicted_vs_measured.map(|r| r.map(|x| x / n));
                }
                st
            }),
        }
    }
}

/// One (controller, rate) run in the report.
#[derive(Debug, Clone, Serialize)]
pub struct RunOut {
    /// The controller.
    pub controller: &'static str,
    /// The control rate (and plant rate), Hz.
    pub control_rate_hz: f64,
    /// Whether it walked to the end without falling (`None`: the run was cut).
    pub walked: Option<bool>,
    /// Steps taken before the fall (or the end).
    pub steps: usize,
    /// When it fell, s.
    pub fell_at_s: Option<f64>,
    /// Why.
    pub fell_because: Option<String>,
    /// Forward distance of the pelvis over the steps, m.
    pub distance_m: f64,
    /// Mean forward speed over the steps after the first, m/s.
    pub mean_speed_m_s: Option<f64>,
    /// Mean |measured − desired| coronal speed over strides (consecutive pairs of steps under
    /// the same desired speed, after the first step: a single step's mean carries the body's
    /// sideways sway), m/s.
    pub coronal_speed_error_m_s: Option<f64>,
    /// With velocity tuning: the mean |measured − target| forward speed over strides, as the
    /// coronal one, m/s.
    pub forward_speed_error_m_s: Option<f64>,
    /// Joint-ticks whose torque the URDF effort cut (before the fall).
    pub limited_joint_ticks: u64,
    /// Ticks the controller refused its input.
    pub refused_ticks: u64,
    /// Joints whose gains the analytic rule moved, with the factor a (kp·a², kd·a), and the
    /// root's factor.
    pub moved_gains: Option<MovedOut>,
    /// The gains used, [kp N·m/rad, kd N·m·s/rad], by joint name, and the pelvis's as `root`.
    pub gains: Vec<(String, [f64; 2])>,
    /// The controller's tick, µs.
    pub tick_us: Option<Percentiles>,
    /// The plant's step, µs.
    pub plant_step_us: Option<Percentiles>,
    /// The stance foot's corners as the plant measured them.
    pub contacts: ContactOut,
    /// What the ground-contact stabiliser did (its `predicted_r`: means over the improved
    /// ticks).
    pub stabiliser: Option<StabiliserOut>,
    /// What stable PD did (`simbicon3d_stable_pd*`; absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stable_pd: Option<StablePdOut>,
    /// Every step.
    pub step_list: Vec<StepOut>,
}

/// Which walk a push struck, and when: the fields a pushed walk and its series share.
#[derive(Debug, Clone, Serialize)]
pub struct PushedWalk {
    /// The controller.
    pub controller: &'static str,
    /// The control rate, Hz.
    pub control_rate_hz: f64,
    /// The push's direction, world frame (x forward, y up, z right), normalised.
    pub direction_world: [f64; 3],
    /// When it started, s.
    pub at_s: f64,
    /// The phase of the step it started in: the time since that step's foot strike over the
    /// step before's length (`None`: before the second step).
    pub phase: Option<f64>,
    /// The stance foot it started on.
    pub stance: Option<&'static str>,
}

impl PushedWalk {
    /// The same controller, rate, direction and start.
    fn same_series(&self, other: &Self) -> bool {
        self.controller == other.controller
            && self.control_rate_hz == other.control_rate_hz
            && self.direction_world == other.direction_world
            && self.at_s == other.at_s
    }
}

/// One pushed walk.
#[derive(Debug, Clone, Serialize)]
pub struct PushRunOut {
    /// The walk and the push's moment.
    #[serde(flatten)]
    pub walk: PushedWalk,
    /// The impulse, N·s.
    pub impulse_ns: f64,
    /// Whether it walked to the end (`None`: not run, or cut).
    pub walked: Option<bool>,
    /// When it fell, s.
    pub fell_at_s: Option<f64>,
    /// Steps begun after the push started.
    pub steps_after_push: usize,
    /// Why it was not run (the unpushed walk fell).
    pub not_run: Option<String>,
}

/// One push series: a controller and rate pushed in one direction at one moment with rising
/// impulses.
#[derive(Debug, Clone, Serialize)]
pub struct PushSummaryOut {
    /// The walk and the pushes' moment (the phase and stance of the first pushed walk that ran).
    #[serde(flatten)]
    pub walk: PushedWalk,
    /// The largest impulse walked through with every smaller one, N·s (`None`: not even the
    /// smallest, or not run).
    pub largest_survived_ns: Option<f64>,
    /// The smallest impulse that felled it, N·s.
    pub first_fall_ns: Option<f64>,
    /// Every impulse walked through, N·s (a larger one can be survived after a fall).
    pub survived_ns: Vec<f64>,
    /// Whether the series ran (the unpushed walk did not fall).
    pub ran: bool,
}

/// The phase and stance foot at `at_s` from a walk's steps (see [`PushedWalk::phase`]).
fn phase_at(steps: &[StepOut], at_s: f64) -> (Option<f64>, Option<&'static str>) {
    let k = steps.iter().take_while(|st| st.time_s <= at_s).count();
    let Some(now) = k.checked_sub(1).and_then(|k| steps.get(k)) else {
        return (None, None);
    };
    let phase = k
        .checked_sub(2)
        .and_then(|j| steps.get(j))
        .map(|before| now.time_s - before.time_s)
        .filter(|len| *len > 0.0)
        .map(|len| (at_s - now.time_s) / len);
    (phase, Some(now.stance))
}

/// The push series of `rows` (in run order: impulses rising within a series).
fn summarise_pushes(rows: &[PushRunOut]) -> Vec<PushSummaryOut> {
    let mut out: Vec<PushSummaryOut> = Vec::new();
    for r in rows {
        if !out.last().is_some_and(|p| p.walk.same_series(&r.walk)) {
            out.push(PushSummaryOut {
                walk: r.walk.clone(),
                largest_survived_ns: None,
                first_fall_ns: None,
                survived_ns: Vec::new(),
                ran: r.not_run.is_none(),
            });
        }
        let Some(p) = out.last_mut() else { continue };
        if p.walk.phase.is_none() {
            (p.walk.phase, p.walk.stance) = (r.walk.phase, r.walk.stance);
        }
        match r.walked {
            Some(true) => {
                p.survived_ns.push(r.impulse_ns);
                if p.first_fall_ns.is_none() {
                    p.largest_survived_ns = Some(r.impulse_ns);
                }
            }
            Some(false) => {
                p.first_fall_ns.get_or_insert(r.impulse_ns);
            }
            None => {}
        }
    }
    out
}

/// The analytic rule's moves.
#[derive(Debug, Clone, Serialize)]
pub struct MovedOut {
    /// (joint, factor) for each joint moved.
    pub joints: Vec<(String, f64)>,
    /// The pelvis PD's factor (1: kept).
    pub root: f64,
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct Walk3dReport {
    /// Completeness, scenario, kind and mode.
    #[serde(flatten)]
    pub header: ReportHeader,
    /// The URDF.
    pub urdf: String,
    /// Each run's length, s.
    pub duration_s: f64,
    /// How the walks start.
    pub start: Start,
    /// The coronal speed cycle, m/s, and steps per entry.
    pub coronal_speeds_m_s: Vec<f64>,
    /// Steps per entry.
    pub steps_per_speed: u32,
    /// The velocity tuning, if any.
    pub speed_tuning: Option<SpeedTuningSpec>,
    /// The gains under the stabiliser.
    pub stabiliser_gains: StabiliserGains,
    /// Where the stabiliser's baseline comes from.
    #[serde(with = "BaselineName")]
    pub stabiliser_baseline: Baseline,
    /// The runs, per controller then rate.
    pub runs: Vec<RunOut>,
    /// The push test, as given.
    pub push_test: Option<PushTest>,
    /// The link it pushed.
    pub push_link: Option<String>,
    /// Per (controller, rate, direction, start): the largest impulse walked through with every
    /// smaller one.
    pub push_summary: Vec<PushSummaryOut>,
    /// Every pushed walk.
    pub push_runs: Vec<PushRunOut>,
}

/// The mean over strides of |stride's mean speed − desired|, the speed and the desired one
/// read by `speed` (see [`RunOut::coronal_speed_error_m_s`]); strides without a desired speed
/// are left out.
fn stride_error(steps: &[StepOut], speed: fn(&StepOut) -> (f64, Option<f64>)) -> Option<f64> {
    let errors: Vec<f64> = steps
        .chunks_exact(2)
        .filter_map(|p| {
            let ((a, want), (b, want_too)) = (speed(&p[0]), speed(&p[1]));
            let want = want.filter(|_| want == want_too)?;
            Some((0.5 * (a + b) - want).abs())
        })
        .collect();
    (!errors.is_empty()).then(|| errors.iter().sum::<f64>() / errors.len() as f64)
}

fn summarise(
    law: WalkLaw,
    rate: f64,
    run: &Run<Walk3dRun>,
    cut: bool,
    model: &HumanoidModel,
    controller: &Walk3dController,
) -> RunOut {
    let moves = controller.moves;
    let (joint_gains, root_gains) = controller.gains();
    let mut gains: Vec<(String, [f64; 2])> = model
        .joints
        .iter()
        .zip(joint_gains)
        .map(|(j, g)| (j.name.clone(), g))
        .collect();
    gains.push(("root".into(), root_gains));
    let steps = &run.kind.steps;
    let later = steps.get(1..).unwrap_or(&[]);
    let mean = |f: &dyn Fn(&StepOut) -> f64| {
        (!later.is_empty()).then(|| later.iter().map(f).sum::<f64>() / later.len() as f64)
    };
    let first_x = steps.first().map_or(0.0, |s| s.pelvis_m[0]);
    let last_x = steps.last().map_or(0.0, |s| s.pelvis_m[0]);
    RunOut {
        controller: law.name(),
        control_rate_hz: rate,
        walked: (!cut).then_some(run.kind.fell_at_s.is_none()),
        steps: steps.len(),
        fell_at_s: run.kind.fell_at_s,
        fell_because: run.kind.fell_because.clone(),
        distance_m: last_x - first_x,
        mean_speed_m_s: mean(&|s| s.forward_m_s),
        coronal_speed_error_m_s: stride_error(later, |st| {
            (st.coronal_m_s, Some(st.desired_coronal_m_s))
        }),
        forward_speed_error_m_s: stride_error(later, |st| (st.forward_m_s, st.target_forward_m_s)),
        limited_joint_ticks: run.kind.limited,
        refused_ticks: run.kind.refused,
        moved_gains: moves.map(|m| MovedOut {
            joints: (0..model.joints.len())
                .filter(|k| m.joints & (1 << k) != 0)
                .map(|k| (model.joints[k].name.clone(), m.factors[k]))
                .collect(),
            root: m.root,
        }),
        gains,
        tick_us: run.timing.compute_us,
        plant_step_us: run.plant_step_us,
        contacts: run.kind.contacts.clone(),
        stabiliser: run.kind.stabiliser.clone().map(|mut st| {
            if let Some(s) = controller.walker.stabiliser() {
                st.model = s.model().name();
                st.baseline = Some(s.baseline().name());
            }
            st
        }),
        stable_pd: run.kind.stable_pd,
        step_list: run.kind.steps.clone(),
    }
}

/// Runs a prepared `walk3d` scenario: one plant process per (controller, rate).
pub fn run_scenario(
    args: &RunArgs,
    w: &Walk3d,
    file: &str,
    staging: &Path,
    stop: &StopFlag,
) -> Result<Finished, Box<dyn std::error::Error>> {
    let s = &w.s;
    let laws = select(&args.only, &s.laws(), WalkLaw::name)?;
    let model = &w.p.model;
    let sides = body_sides(&w.p.roles, model);
    let pelvis = model.body_index(&s.roles.pelvis).unwrap_or(0);
    let scenes = staging.join("scenes");
    std::fs::create_dir_all(&scenes)?;
    let plant = plant::plant_executable()?;
    let chosen: Vec<&(WalkLaw, f64, Walk3dController)> =
        w.p.controllers
            .iter()
            .filter(|(l, _, _)| laws.contains(l))
            .collect();
    super::plan_runs(chosen.len() * (1 + s.push_test.as_ref().map_or(0, PushTest::runs)));
    let mut runs = Vec::new();
    let mut faults = Vec::new();
    let mut first_timing = None;
    let mut cut: Option<(String, Cut)> = None;
    let mut gifs: Vec<&'static str> = Vec::new();
    // The animated window of each walk at the first rate: (name, summary, poses) for the replay.
    let mut replay_runs: Vec<(String, String, Vec<PoseSample>)> = Vec::new();
    let mut csv = String::from(
        "controller,control_rate_hz,walked,steps,fell_at_s,distance_m,mean_speed_m_s,coronal_speed_error_m_s,limited_joint_ticks,tick_p50_us,disequilibrium_share,stabiliser_improved_ticks,forward_speed_error_m_s\n",
    );
    let mut steps_csv = String::from(
        "controller,control_rate_hz,step,time_s,stance,pelvis_x_m,pelvis_z_m,desired_coronal_m_s,coronal_m_s,forward_m_s,desired_forward_m_s,target_forward_m_s\n",
    );
    let walk = |law: WalkLaw,
                rate: f64,
                controller: &Walk3dController,
                scene: HumanoidScene,
                file: String,
                animation_s: f64|
     -> Result<(Run<Walk3dRun>, Option<Cut>), Box<dyn std::error::Error>> {
        let scene_file = scenes.join(file);
        let mut scene = scene;
        scene.urdf = std::fs::canonicalize(&scene.urdf).unwrap_or(scene.urdf);
        std::fs::write(&scene_file, serde_json::to_string_pretty(&scene)?)?;
        run_session(
            args,
            controller.clone(),
            Walk3dRecorder::new(model, pelvis, s.fall_height_m, animation_s),
            law.name(),
            ((&plant.0, &plant.1), &scene_file),
            Periods {
                control_s: 1.0 / rate,
                state_s: 1.0 / rate,
            },
            stop,
        )
    };
    let mut push_runs = Vec::new();
    let mut pushes_csv = String::from(
        "controller,control_rate_hz,direction_x,direction_y,direction_z,at_s,phase,stance,impulse_ns,walked,fell_at_s,steps_after_push,not_run\n",
    );
    'runs: for (law, rate, controller) in chosen {
        let animation_s = if Some(rate) == s.control_rates_hz.first() {
            s.animation_s
        } else {
            0.0
        };
        let (run, run_cut) = walk(
            *law,
            *rate,
            controller,
            s.scene(*rate),
            format!("{}_{rate}.json", law.name()),
            animation_s,
        )?;
        if first_timing.is_none() {
            first_timing = Some(run.timing.clone());
        }
        let out = summarise(*law, *rate, &run, run_cut.is_some(), model, controller);
        let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
        csv.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            out.controller,
            rate,
            out.walked.map_or(String::new(), |b| b.to_string()),
            out.steps,
            opt(out.fell_at_s),
            out.distance_m,
            opt(out.mean_speed_m_s),
            opt(out.coronal_speed_error_m_s),
            out.limited_joint_ticks,
            opt(out.tick_us.map(|p| p.p50)),
            opt(out.contacts.disequilibrium_share),
            out.stabiliser
                .as_ref()
                .map_or(String::new(), |s| s.improved_ticks.to_string()),
            opt(out.forward_speed_error_m_s),
        ));
        for (k, st) in out.step_list.iter().enumerate() {
            steps_csv.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{},{},{}\n",
                out.controller,
                rate,
                k + 1,
                st.time_s,
                st.stance,
                st.pelvis_m[0],
                st.pelvis_m[1],
                st.desired_coronal_m_s,
                st.coronal_m_s,
                st.forward_m_s,
                st.desired_forward_m_s,
                st.target_forward_m_s
                    .map_or(String::new(), |v| v.to_string())
            ));
        }
        if !run.kind.poses.is_empty() {
            write_humanoid_gif(
                &staging.join(law.gif_name()),
                (model, &sides),
                &run.kind.poses,
                run.kind.fell_at_s,
            )?;
            gifs.push(law.gif_name());
            let summary = match (out.fell_at_s, &out.fell_because) {
                (Some(t), why) => format!(
                    "fell at {t:.2} s after {} steps{}",
                    out.steps,
                    why.as_ref().map_or(String::new(), |w| format!(": {w}"))
                ),
                (None, _) if run_cut.is_some() => format!("cut short after {} steps", out.steps),
                (None, _) => format!(
                    "walked {} s: {} steps, {:.2} m",
                    s.duration_s, out.steps, out.distance_m
                ),
            };
            replay_runs.push((
                format!("{} at {rate} Hz", law.name()),
                summary,
                run.kind.poses.clone(),
            ));
        }
        faults.push(run.faults.clone());
        let unpushed_fell = out.fell_at_s;
        runs.push(out);
        if let Some(c) = run_cut {
            cut = Some((format!("{} at {rate} Hz", law.name()), c));
            break;
        }
        let Some(test) = &s.push_test else { continue };
        for (d, direction) in test.unit_directions().into_iter().enumerate() {
            for (a, &at_s) in test.at_s.iter().enumerate() {
                for (k, &impulse_ns) in test.impulses_ns.iter().enumerate() {
                    let mut row = PushRunOut {
                        walk: PushedWalk {
                            controller: law.name(),
                            control_rate_hz: *rate,
                            direction_world: direction,
                            at_s,
                            phase: None,
                            stance: None,
                        },
                        impulse_ns,
                        walked: None,
                        fell_at_s: None,
                        steps_after_push: 0,
                        not_run: None,
                    };
                    if let Some(t) = unpushed_fell {
                        row.not_run = Some(format!("the unpushed walk fell at {t:.2} s"));
                    } else {
                        let mut scene = s.scene(*rate);
                        scene
                            .pushes
                            .push(test.push(s.push_link(), direction, at_s, impulse_ns));
                        let (run, run_cut) = walk(
                            *law,
                            *rate,
                            controller,
                            scene,
                            format!("{}_{rate}_push_{d}_{a}_{k}.json", law.name()),
                            0.0,
                        )?;
                        (row.walk.phase, row.walk.stance) = phase_at(&run.kind.steps, at_s);
                        row.walked = run_cut.is_none().then_some(run.kind.fell_at_s.is_none());
                        row.fell_at_s = run.kind.fell_at_s;
                        row.steps_after_push =
                            run.kind.steps.iter().filter(|st| st.time_s > at_s).count();
                        faults.push(run.faults.clone());
                        if let Some(c) = run_cut {
                            push_runs.push(row);
                            cut = Some((
                                format!(
                                    "{} at {rate} Hz pushed with {impulse_ns} N·s at {at_s} s",
                                    law.name()
                                ),
                                c,
                            ));
                            break 'runs;
                        }
                    }
                    let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
                    pushes_csv.push_str(&format!(
                        "{},{},{},{},{},{},{},{},{},{},{},{},\"{}\"\n",
                        row.walk.controller,
                        rate,
                        direction[0],
                        direction[1],
                        direction[2],
                        at_s,
                        opt(row.walk.phase),
                        row.walk.stance.unwrap_or(""),
                        impulse_ns,
                        row.walked.map_or(String::new(), |b| b.to_string()),
                        opt(row.fell_at_s),
                        row.steps_after_push,
                        row.not_run.clone().unwrap_or_default(),
                    ));
                    push_runs.push(row);
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scenes);
    let first_rate = s.control_rates_hz.first().copied().unwrap_or(300.0);
    std::fs::write(
        staging.join("scene.json"),
        serde_json::to_string_pretty(&s.scene(first_rate))?,
    )?;
    std::fs::write(staging.join("runs.csv"), csv)?;
    std::fs::write(staging.join("steps.csv"), steps_csv)?;
    if s.push_test.is_some() {
        std::fs::write(staging.join("pushes.csv"), pushes_csv)?;
    }
    let push_summary = summarise_pushes(&push_runs);
    let report = Walk3dReport {
        header: ReportHeader::new(
            cut.as_ref().map(|(what, c)| (what.clone(), c)),
            &s.name,
            file,
            KIND,
            args.mode,
        )
        .with_runs(
            None,
            first_timing.unwrap_or_default(),
            Faults::sum(faults.iter()),
        ),
        urdf: s.urdf.display().to_string(),
        duration_s: s.duration_s,
        start: s.start,
        coronal_speeds_m_s: s.coronal_speeds_m_s.clone(),
        steps_per_speed: s.steps_per_speed,
        speed_tuning: s.speed_tuning.clone(),
        stabiliser_gains: s.stabiliser_gains,
        stabiliser_baseline: s.stabiliser_baseline,
        runs,
        push_test: s.push_test.clone(),
        push_link: s.push_test.as_ref().map(|_| s.push_link().to_owned()),
        push_summary,
        push_runs,
    };
    std::fs::write(
        staging.join("report.json"),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    if !replay_runs.is_empty() {
        let shown: Vec<_> = replay_runs
            .iter()
            .map(|(name, summary, samples)| crate::replay::humanoid::Shown {
                name,
                summary,
                samples,
            })
            .collect();
        let mut notes = vec![format!(
            "each walk's first {} s (the scenario's animation_s), at the first control rate",
            s.animation_s
        )];
        if s.push_test.is_some() {
            notes.push(String::from("the push test's walks are not shown"));
        }
        let decimation = format!(
            "one sample per {} ms of simulated time over each walk's first {} s (the animation's); positions to 0.1 mm, torques (each joint's torque vector's norm, at the tick before the sample) and forces to 4 digits",
            1e3 * POSE_EVERY_S,
            s.animation_s
        );
        let data = crate::replay::humanoid::page_data(
            (&report.header, &report.urdf),
            model,
            (notes, &decimation, true),
            None,
            &shown,
        );
        crate::replay::humanoid::write_page(
            &staging.join("replay.html"),
            &report.header.scenario,
            model,
            &data,
        )?;
    }
    Ok(Finished {
        summary: summary_table(&report),
        incomplete_reason: report.header.incomplete_reason.clone(),
        files: ["report.json", "runs.csv", "steps.csv", "scene.json"]
            .into_iter()
            .chain(s.push_test.as_ref().map(|_| "pushes.csv"))
            .chain(gifs)
            .chain((!replay_runs.is_empty()).then_some("replay.html"))
            .collect(),
    })
}

/// The console's table.
pub fn summary_table(r: &Walk3dReport) -> String {
    let mut out = format!(
        "{}: the humanoid walking {} s per run ({}), coronal speeds {:?} m/s every {} steps:\n",
        r.header.scenario, r.duration_s, r.header.mode, r.coronal_speeds_m_s, r.steps_per_speed
    );
    out.push_str(&format!(
        "  {:<24} {:>7} {:>7} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
        "controller",
        "rate Hz",
        "steps",
        "fell at s",
        "dist m",
        "speed",
        "limited",
        "tick µs",
        "diseq %"
    ));
    for run in &r.runs {
        out.push_str(&format!(
            "  {:<24} {:>7} {:>7} {:>10} {:>9.2} {:>9} {:>9} {:>9} {:>9}\n",
            run.controller,
            run.control_rate_hz,
            run.steps,
            run.fell_at_s.map_or("–".into(), |t| format!("{t:.2}")),
            run.distance_m,
            run.mean_speed_m_s.map_or("–".into(), |v| format!("{v:.2}")),
            run.limited_joint_ticks,
            run.tick_us.map_or("–".into(), |p| format!("{:.1}", p.p50)),
            run.contacts
                .disequilibrium_share
                .map_or("–".into(), |d| format!("{:.1}", 100.0 * d)),
        ));
    }
    if !r.push_summary.is_empty() {
        out.push_str(&format!(
            "pushes on {} ({} s each; the largest walked through with every smaller one):\n  {:<24} {:>7} {:>16} {:>6} {:>6} {:>6} {:>10} {:>10}\n",
            r.push_link.as_deref().unwrap_or("?"),
            r.push_test.as_ref().map_or(0.0, |t| t.duration_s),
            "controller",
            "rate Hz",
            "direction",
            "at s",
            "phase",
            "stance",
            "largest",
            "first fall"
        ));
        let ns = |v: Option<f64>| v.map_or("–".into(), |v| format!("{v} N·s"));
        for p in &r.push_summary {
            let d = p.walk.direction_world;
            out.push_str(&format!(
                "  {:<24} {:>7} {:>16} {:>6} {:>6} {:>6} {:>10} {:>10}\n",
                p.walk.controller,
                p.walk.control_rate_hz,
                format!("[{:.2},{:.2},{:.2}]", d[0], d[1], d[2]),
                p.walk.at_s,
                p.walk.phase.map_or("–".into(), |f| format!("{f:.2}")),
                p.walk.stance.unwrap_or("–"),
                if p.ran {
                    ns(p.largest_survived_ns)
                } else {
                    "not run".into()
                },
                ns(p.first_fall_ns),
            ));
        }
    }
    out
}
