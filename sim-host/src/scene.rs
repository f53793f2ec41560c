//! What the plant simulates: the scene description the harness writes to a JSON file and hands
//! to `sim-host --scene FILE`.
//!
//! Everything random (where balls fly, where weights fall) is resolved by the harness before it
//! writes the file: the plant is a deterministic function of its scene and the torques it
//! receives. Loading never panics on a bad file: [`SceneError`] names the file, the field and the
//! reason.
//!
//! [`Scene::validate`] is the one complete check of a scene: every field a scene can hold is
//! checked there and nowhere else (a harness that builds scenes from its own files deserializes
//! their `[arm]` straight into [`ArmSpec`] and calls it too, mapping the field paths it returns
//! back to its file). Ball and weight ids share one namespace, that of
//! `control_core::frames::BodyId`: they must be unique across both lists.
//!
//! Frame of reference (the convention of `control_core::model`): the shoulder hinge is the +z axis
//! through the origin, the arm swings in the x–y plane, θ = 0 points the arm along +x and grows
//! counter-clockwise seen from +z, gravity points along −y. Balls fly along +z through the arm's
//! plane z = 0, the scene's crossing plane.
//!
//! ```
//! use sim_host::scene::{ArmSpec, BallSpawn, Scene, SceneFile};
//! let mut scene = Scene::new(ArmSpec::EXAMPLE, 4.0);
//! // A ball that crosses the arm's plane at (0, -0.6) at t = 1.5 s after 0.4 s of flight.
//! scene.balls.push(BallSpawn::aimed(0, [0.0, -0.6], 1.5, 0.4, 0.05, 0.2, 9.8));
//! let json = serde_json::to_string(&scene).unwrap();
//! assert_eq!(Scene::from_json_str(&json, "inline".as_ref()).unwrap(), scene);
//! ```
//!
//! [`PlantScene`] reads a scene file of any kind: this arm scene (no `kind` field), a biped,
//! humanoid or robot scene (`"kind": "biped"`, `"humanoid"`, `"robot"`).
//!
//! Never does: accept a value the plant cannot simulate (non-finite, out of range, a duplicate
//! id), or panic on any input.

use std::fmt;
use std::path::{Path, PathBuf};

use control_core::model::ArmModel;
use serde::{Deserialize, Serialize};

/// The default physics step, s.
pub const DEFAULT_DT_S: f64 = 0.005;
/// Balls are removed this long after they crossed the arm's plane, s (default).
pub const DEFAULT_LINGER_AFTER_CROSSING_S: f64 = 3.0;
/// Bodies whose centre falls below this height are removed, m (default).
pub const DEFAULT_REMOVE_BELOW_Y_M: f64 = -5.0;

/// Speed along +z of the balls [`BallSpawn::aimed`] makes, m/s.
pub const AIMED_BALL_SPEED_Z_M_S: f64 = 5.0;
/// The largest torque limit a scene may give its arm, N·m (robot-model's bound, which a
/// humanoid's `<limit effort>` meets too).
pub use robot_model::MAX_TORQUE_LIMIT_NM;
/// The largest magnitude of each component of a push's force (robot, biped and humanoid
/// scenes, `pushes[i].force_n`), N.
pub const MAX_PUSH_FORCE_N: f64 = 1e5;

/// A whole plant run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scene {
    /// Physics step, s (default 0.005).
    #[serde(default = "default_dt")]
    pub dt_s: f64,
    /// The plant stops after the step that reaches this simulated time, s (rounded to a whole
    /// number of steps).
    pub end_time_s: f64,
    /// The arm and its start state. Its `gravity_m_s2` is the scene's gravity (along −y).
    pub arm: ArmSpec,
    /// Balls thrown through the arm's plane.
    #[serde(default)]
    pub balls: Vec<BallSpawn>,
    /// Weights dropped on the arm.
    #[serde(default)]
    pub weights: Vec<WeightDrop>,
    /// Balls are removed this long after crossing z = 0, s (default 3).
    #[serde(default = "default_linger")]
    pub linger_after_crossing_s: f64,
    /// Balls and weights whose centre falls below this y are removed, m (default −5).
    #[serde(default = "default_remove_below")]
    pub remove_below_y_m: f64,
}

fn default_dt() -> f64 {
    DEFAULT_DT_S
}
fn default_linger() -> f64 {
    DEFAULT_LINGER_AFTER_CROSSING_S
}
fn default_remove_below() -> f64 {
    DEFAULT_REMOVE_BELOW_Y_M
}

/// The arm: the fields of [`ArmModel`], its state at t = 0 and the largest torque its joint
/// accepts.
///
/// Field names are the serialized names (a harness reads its own files' `[arm]` tables straight
/// into this type); unknown fields are refused.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArmSpec {
    /// Length from the hinge axis to the tip, m.
    pub length_m: f64,
    /// Side of the square cross-section, m.
    pub thickness_m: f64,
    /// Mass, kg.
    pub mass_kg: f64,
    /// Magnitude of gravity, m/s² (acts along −y on every body of the scene).
    pub gravity_m_s2: f64,
    /// Joint angle at t = 0, rad.
    #[serde(default)]
    pub initial_angle_rad: f64,
    /// Joint angular velocity at t = 0, rad/s.
    #[serde(default)]
    pub initial_velocity_rad_s: f64,
    /// The largest joint torque the plant applies, N·m, in (0, [`MAX_TORQUE_LIMIT_NM`]]. A
    /// torque frame with any torque τ where |τ| > this is refused whole (never clamped) and
    /// counted; |τ| equal to it is applied.
    pub torque_limit_nm: f64,
}

impl ArmSpec {
    /// The arm of `scenes/example.json`: 1 m long, 0.1 m thick, 2 kg, g = 9.8 m/s², torque
    /// limit 100 N·m, hanging straight down at rest. For examples, tests and benches.
    pub const EXAMPLE: Self = Self {
        initial_angle_rad: -core::f64::consts::FRAC_PI_2,
        ..Self::from_model(
            ArmModel {
                length_m: 1.0,
                thickness_m: 0.1,
                mass_kg: 2.0,
                gravity_m_s2: 9.8,
            },
            100.0,
        )
    };

    /// The arm of `model` with joint torques limited to `torque_limit_nm`, starting at rest at
    /// θ = 0 (set the `initial_*` fields for another start).
    pub const fn from_model(model: ArmModel, torque_limit_nm: f64) -> Self {
        Self {
            length_m: model.length_m,
            thickness_m: model.thickness_m,
            mass_kg: model.mass_kg,
            gravity_m_s2: model.gravity_m_s2,
            initial_angle_rad: 0.0,
            initial_velocity_rad_s: 0.0,
            torque_limit_nm,
        }
    }

    /// The arm's principal moments of inertia about its centre of mass, kg·m², along its length
    /// and the two axes across it: a uniform box's, M a²/6 and M (L² + a²)/12 twice.
    pub fn inertia_about_centre_kgm2(&self) -> [f64; 3] {
        let (l, a, m) = (self.length_m, self.thickness_m, self.mass_kg);
        let across = m * (l * l + a * a) / 12.0;
        [m * a * a / 6.0, across, across]
    }

    /// The mass properties the controller feeds forward from.
    pub const fn model(&self) -> ArmModel {
        ArmModel {
            length_m: self.length_m,
            thickness_m: self.thickness_m,
            mass_kg: self.mass_kg,
            gravity_m_s2: self.gravity_m_s2,
        }
    }
}

/// A ball that appears at `spawn_time_s` at `position_m` with `velocity_m_s` and then flies
/// freely (gravity, collisions). Its crossings of the plane z = 0 are reported.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BallSpawn {
    /// Id reported in events (`BodyId`; unique among the scene's balls and weights).
    pub id: u16,
    /// When it appears, s (rounded to the nearest step).
    pub spawn_time_s: f64,
    /// Centre at spawn, m.
    pub position_m: [f64; 3],
    /// Velocity at spawn, m/s.
    pub velocity_m_s: [f64; 3],
    /// Radius, m.
    pub radius_m: f64,
    /// Mass, kg.
    pub mass_kg: f64,
}

impl BallSpawn {
    /// A ball whose centre crosses the arm's plane z = 0 at `(x, y) = target_m` at
    /// `crossing_time_s`, after `flight_time_s` of free flight along +z under gravity
    /// `gravity_m_s2`, thrown with vertical velocity 0 at the crossing (the top of its arc). The
    /// ball spawns at `crossing_time_s − flight_time_s` and flies along +z at
    /// [`AIMED_BALL_SPEED_Z_M_S`].
    pub fn aimed(
        id: u16,
        target_m: [f64; 2],
        crossing_time_s: f64,
        flight_time_s: f64,
        radius_m: f64,
        mass_kg: f64,
        gravity_m_s2: f64,
    ) -> Self {
        let [x, y] = target_m;
        let t = flight_time_s;
        // z: from −z0 to 0 at constant speed vz; y: up to the apex, vy = g t, y0 = y − g t²/2.
        let vz = AIMED_BALL_SPEED_Z_M_S;
        Self {
            id,
            spawn_time_s: crossing_time_s - t,
            position_m: [x, y - 0.5 * gravity_m_s2 * t * t, -vz * t],
            velocity_m_s: [0.0, gravity_m_s2 * t, vz],
            radius_m,
            mass_kg,
        }
    }
}

/// The shape of a dropped weight.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum WeightShape {
    /// A sphere.
    Sphere {
        /// Radius, m.
        radius_m: f64,
    },
    /// A box aligned with the world axes at spawn.
    Box {
        /// Half of each side, m.
        half_extents_m: [f64; 3],
    },
}

/// A weight that appears at `spawn_time_s` at `position_m` (usually above the arm, at rest) and
/// falls.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeightDrop {
    /// Id reported in events (`BodyId`; unique among the scene's balls and weights).
    pub id: u16,
    /// When it appears, s (rounded to the nearest step).
    pub spawn_time_s: f64,
    /// Centre at spawn, m.
    pub position_m: [f64; 3],
    /// Velocity at spawn, m/s (default 0).
    #[serde(default)]
    pub velocity_m_s: [f64; 3],
    /// Shape.
    pub shape: WeightShape,
    /// Mass, kg.
    pub mass_kg: f64,
}

impl Scene {
    /// A scene with the arm only, the default step and removal rules.
    pub fn new(arm: ArmSpec, end_time_s: f64) -> Self {
        Self {
            dt_s: DEFAULT_DT_S,
            end_time_s,
            arm,
            balls: Vec::new(),
            weights: Vec::new(),
            linger_after_crossing_s: DEFAULT_LINGER_AFTER_CROSSING_S,
            remove_below_y_m: DEFAULT_REMOVE_BELOW_Y_M,
        }
    }

    /// Number of physics steps of the run: `end_time_s / dt_s`, rounded.
    pub fn total_steps(&self) -> u64 {
        steps_for(self.end_time_s, self.dt_s)
    }

    /// The one complete check of a scene: every value against what the plant can simulate
    /// (finite, in range), and ids unique across balls and weights. On failure returns the first
    /// failing field, as a path in the serialized scene (`arm.mass_kg`, `balls[2].radius_m`,
    /// `weights[0].shape.box.half_extents_m[1]`), and the reason.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let mut c = Checker::default();
        c.timing(self.dt_s, self.end_time_s);
        c.range("arm.length_m", self.arm.length_m, 1e-3, 100.0);
        c.range("arm.thickness_m", self.arm.thickness_m, 1e-4, 10.0);
        c.range("arm.mass_kg", self.arm.mass_kg, 1e-4, 1e5);
        c.range("arm.gravity_m_s2", self.arm.gravity_m_s2, 0.0, 1000.0);
        c.range(
            "arm.initial_angle_rad",
            self.arm.initial_angle_rad,
            -1e3,
            1e3,
        );
        c.range(
            "arm.initial_velocity_rad_s",
            self.arm.initial_velocity_rad_s,
            -1e3,
            1e3,
        );
        // The arm is a robot plant's link: its inertia within a robot description's bound.
        let (l, m) = (self.arm.length_m, self.arm.mass_kg);
        let [_, across, _] = self.arm.inertia_about_centre_kgm2();
        if across > crate::input::MAX_URDF_INERTIA_KG_M2 {
            c.fail(
                "arm.mass_kg",
                format!(
                    "{m} kg on a {l} m arm: its inertia about its centre, M(L² + a²)/12 = {across:.4e} kg·m², exceeds {:e}",
                    crate::input::MAX_URDF_INERTIA_KG_M2
                ),
            );
        }
        c.positive_up_to(
            "arm.torque_limit_nm",
            self.arm.torque_limit_nm,
            MAX_TORQUE_LIMIT_NM,
        );
        c.range(
            "linger_after_crossing_s",
            self.linger_after_crossing_s,
            0.0,
            1e7,
        );
        c.range("remove_below_y_m", self.remove_below_y_m, -1e6, 1e6);
        crate::environment::check_props(&mut c, &self.balls, &self.weights, 0, None, "arm");
        c.result()
    }
}

/// A plant's scene as its JSON file gives it (the arm's [`Scene`], the biped's, the humanoid's,
/// a robot's): reading one is one rule for all of them ([`SceneFile::load`],
/// [`SceneFile::from_json_str`]): read (a regular file of bounded size), parsed (unknown
/// fields refused, every number exact), its paths resolved beside the file, checked.
pub trait SceneFile: serde::de::DeserializeOwned {
    /// Every check of the scene's own values; the first failing field as a path in the
    /// serialized scene, and the reason.
    fn check(&self) -> Result<(), (String, String)>;

    /// Paths the scene gives relative to its file, resolved against the file's folder (a
    /// URDF); none by default.
    fn resolve_beside(&mut self, _file: &Path) {}

    /// Reads and checks a scene file.
    fn load(path: &Path) -> Result<Self, SceneError> {
        Self::from_json_str(&read_scene_file(path)?, path)
    }

    /// Parses and checks a scene given as JSON text; `file` names it in errors (and is where
    /// relative paths are resolved from).
    fn from_json_str(text: &str, file: &Path) -> Result<Self, SceneError> {
        let mut scene: Self = parse_scene_json(text, file)?;
        scene.resolve_beside(file);
        scene
            .check()
            .map_err(|failed| SceneError::checked(file, failed))?;
        Ok(scene)
    }
}

impl SceneFile for Scene {
    fn check(&self) -> Result<(), (String, String)> {
        self.validate()
    }
}

/// A scene of type `T` parsed from JSON `text`; a failure names the field it met, as a path in
/// the document (`balls[2].radius_m`), or `(document)`. `file` names the source.
pub(crate) fn parse_scene_json<T: serde::de::DeserializeOwned>(
    text: &str,
    file: &Path,
) -> Result<T, SceneError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        SceneError {
            file: file.to_path_buf(),
            field: if path == "." || path == "?" {
                String::from("(document)")
            } else {
                path
            },
            reason: e.into_inner().to_string(),
        }
    })
}

impl SceneError {
    /// The error for a failed check of a scene from `file`: (field, reason), as a scene's
    /// `validate` returns it.
    pub(crate) fn checked(file: &Path, (field, reason): (String, String)) -> Self {
        Self {
            file: file.to_path_buf(),
            field,
            reason,
        }
    }
}

/// A scene's `urdf` as the plant opens it: a relative, non-empty path is taken from the folder
/// of the scene `file`; anything else is kept (an empty one is the scene check's to refuse).
pub(crate) fn urdf_beside(urdf: &Path, file: &Path) -> std::path::PathBuf {
    match file.parent() {
        Some(dir) if urdf.is_relative() && !urdf.as_os_str().is_empty() => dir.join(urdf),
        _ => urdf.to_path_buf(),
    }
}

/// The text of scene file `path` (read by [`crate::input::read_text`]: a regular file of at most
/// [`crate::input::MAX_SCENE_BYTES`]), or an error naming it.
pub(crate) fn read_scene_file(path: &Path) -> Result<String, SceneError> {
    crate::input::read_text(path, crate::input::InputKind::Scene).map_err(|e| SceneError {
        file: e.file,
        field: String::from("(file)"),
        reason: e.reason,
    })
}

// The plant's count of steps, which hil's clock of a run follows.
pub use crate::clock::steps_for;

/// Collects the first failed check.
#[derive(Default)]
pub(crate) struct Checker {
    first: Option<(String, String)>,
}

impl Checker {
    /// The step and end time every scene has: `dt_s` in [1e-5, 0.1] s, `end_time_s` in
    /// [0, 1e7] s, at most 2^40 steps.
    pub(crate) fn timing(&mut self, dt_s: f64, end_time_s: f64) {
        self.range("dt_s", dt_s, 1e-5, 0.1);
        self.range("end_time_s", end_time_s, 0.0, 1e7);
        if self.ok() && steps_for(end_time_s, dt_s) > 1 << 40 {
            self.fail("end_time_s", String::from("too many steps for this dt_s"));
        }
    }

    pub(crate) fn fail(&mut self, field: &str, reason: String) {
        if self.first.is_none() {
            self.first = Some((field.to_owned(), reason));
        }
    }

    pub(crate) fn ok(&self) -> bool {
        self.first.is_none()
    }

    pub(crate) fn range(&mut self, field: &str, v: f64, lo: f64, hi: f64) {
        if !v.is_finite() {
            self.fail(field, format!("must be a finite number, got {v}"));
        } else if v < lo || v > hi {
            self.fail(field, format!("must be between {lo} and {hi}, got {v}"));
        }
    }

    /// In (0, hi].
    pub(crate) fn positive_up_to(&mut self, field: &str, v: f64, hi: f64) {
        if !v.is_finite() {
            self.fail(field, format!("must be a finite number, got {v}"));
        } else if v <= 0.0 || v > hi {
            self.fail(
                field,
                format!("must be greater than 0 and at most {hi}, got {v}"),
            );
        }
    }

    pub(crate) fn vec3(&mut self, field: &str, v: [f64; 3]) {
        for (k, x) in v.into_iter().enumerate() {
            self.range(&format!("{field}[{k}]"), x, -1e6, 1e6);
        }
    }

    pub(crate) fn result(self) -> Result<(), (String, String)> {
        self.first.map_or(Ok(()), Err)
    }
}

/// A scene file that cannot be used: which file, which field, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SceneError {
    /// The file.
    pub file: PathBuf,
    /// The field, as a path into the document (`balls[0].radius_m`).
    pub field: String,
    /// Why it was refused.
    pub reason: String,
}

impl fmt::Display for SceneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bad scene file {}: field `{}`: {}",
            self.file.display(),
            self.field,
            self.reason
        )
    }
}

impl std::error::Error for SceneError {}

/// A scene file of any plant: an arm scene ([`Scene`], no `kind` field), a biped scene
/// ([`crate::biped::BipedScene`], `"kind": "biped"`), a humanoid scene ([`crate::humanoid::HumanoidScene`], `"kind":
/// "humanoid"`) or a robot scene ([`crate::robot::RobotScene`], `"kind": "robot"`). What
/// `sim-host --scene` reads.
#[derive(Debug, Clone, PartialEq)]
pub enum PlantScene {
    /// The one-link arm with balls and weights.
    Arm(Scene),
    /// The SIMBICON planar biped.
    Biped(crate::biped::BipedScene),
    /// The 15-body humanoid built from a URDF file.
    Humanoid(crate::humanoid::HumanoidScene),
    /// Any robot, built from the shared robot model of a URDF file.
    Robot(crate::robot::RobotScene),
}

impl PlantScene {
    /// Reads and checks a scene file of either kind.
    pub fn load(path: &Path) -> Result<Self, SceneError> {
        Self::from_json_str(&read_scene_file(path)?, path)
    }

    /// Parses and checks a scene of either kind given as JSON text; `file` names it in errors
    /// (and is where a scene's relative `urdf` is resolved from). A document without a
    /// top-level `kind` is an arm scene (and one that is not a JSON object gets the arm scene's
    /// error); `"biped"`, `"humanoid"` and `"robot"` name the other kinds; any other `kind` is
    /// refused, listing them.
    pub fn from_json_str(text: &str, file: &Path) -> Result<Self, SceneError> {
        let kind = match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(mut map)) => map.remove("kind"),
            _ => None,
        };
        match kind {
            None => Scene::from_json_str(text, file).map(Self::Arm),
            Some(serde_json::Value::String(k)) if k == "biped" => {
                crate::biped::BipedScene::from_json_str(text, file).map(Self::Biped)
            }
            Some(serde_json::Value::String(k)) if k == "humanoid" => {
                crate::humanoid::HumanoidScene::from_json_str(text, file).map(Self::Humanoid)
            }
            Some(serde_json::Value::String(k)) if k == "robot" => {
                crate::robot::RobotScene::from_json_str(text, file).map(Self::Robot)
            }
            Some(k) => Err(SceneError {
                file: file.to_path_buf(),
                field: String::from("kind"),
                reason: format!(
                    "unknown scene kind {k}: \"robot\" for a robot from its URDF, \"biped\" for the biped, \"humanoid\" for the humanoid; an arm scene has no `kind`"
                ),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(json: &str) -> SceneError {
        Scene::from_json_str(json, Path::new("s.json")).unwrap_err()
    }

    const ARM: &str = r#""arm": {"length_m": 1, "thickness_m": 0.1, "mass_kg": 2, "gravity_m_s2": 9.8, "torque_limit_nm": 100}"#;

    #[test]
    fn a_minimal_file_gets_the_defaults() {
        let s = Scene::from_json_str(&format!(r#"{{"end_time_s": 1, {ARM}}}"#), Path::new("s"))
            .unwrap();
        assert_eq!(s.dt_s, 0.005);
        assert_eq!(s.total_steps(), 200);
        assert_eq!(s.arm.model(), ArmSpec::EXAMPLE.model());
        assert_eq!(s.arm.torque_limit_nm, 100.0);
        assert_eq!(s.arm.initial_angle_rad, 0.0);
    }

    #[test]
    fn errors_name_file_field_and_reason() {
        let e = err(&format!(
            r#"{{"end_time_s": 1, {ARM}, "balls": [{{"id": 1, "spawn_time_s": 0, "position_m": [0,0,0], "velocity_m_s": [0,0,0], "radius_m": -1, "mass_kg": 1}}]}}"#
        ));
        assert_eq!(e.field, "balls[0].radius_m");
        assert_eq!(
            e.to_string(),
            "bad scene file s.json: field `balls[0].radius_m`: must be between 0.001 and 10, got -1"
        );
        let e = err(&format!(r#"{{"end_time_s": "soon", {ARM}}}"#));
        assert_eq!(e.field, "end_time_s");
        assert!(e.reason.contains("invalid type"), "{e}");
        let e = err(r#"{"end_time_s": 1, "arm": {"length_m": 1}}"#);
        assert_eq!(e.field, "arm");
        assert!(e.reason.contains("missing field `thickness_m`"), "{e}");
        let e = err(&format!(r#"{{"end_time_s": 1, {ARM}, "gravity": 3}}"#));
        assert!(e.reason.contains("unknown field `gravity`"), "{e}");
        let e = err(&format!(r#"{{"end_time_s": 1, "dt_s": 0, {ARM}}}"#));
        assert_eq!(e.field, "dt_s");
        let e = err("{");
        assert!(
            e.to_string()
                .starts_with("bad scene file s.json: field `(document)`"),
            "{e}"
        );
    }

    #[test]
    fn the_example_scene_file_is_valid() {
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/example.json"));
        let s = Scene::load(path).unwrap();
        assert_eq!(
            (s.balls.len(), s.weights.len(), s.total_steps()),
            (1, 2, 1200)
        );
        assert_eq!(
            Scene::load(Path::new("/nonexistent/scene.json"))
                .unwrap_err()
                .field,
            "(file)"
        );
    }

    #[test]
    fn duplicate_ids_are_refused() {
        let mut s = Scene::new(ArmSpec::EXAMPLE, 1.0);
        let b = BallSpawn::aimed(3, [0.5, 0.0], 1.0, 0.5, 0.05, 0.1, 9.8);
        s.balls.push(b);
        s.balls.push(b);
        assert_eq!(s.validate().unwrap_err().0, "balls[1].id");
        // Across balls and weights too: one namespace.
        s.balls.pop();
        s.weights.push(WeightDrop {
            id: 3,
            spawn_time_s: 0.0,
            position_m: [0.0, 1.0, 0.0],
            velocity_m_s: [0.0; 3],
            shape: WeightShape::Sphere { radius_m: 0.1 },
            mass_kg: 1.0,
        });
        let (field, reason) = s.validate().unwrap_err();
        assert_eq!(field, "weights[0].id");
        assert!(reason.contains("already used by balls[0]"), "{reason}");
        s.weights[0].id = 4;
        assert_eq!(s.validate(), Ok(()));
    }

    /// Every field a scene can hold is checked by `validate`, under its serialized path: a bad
    /// value in each (non-finite, or out of range, including the values a looser check once let
    /// through) is refused naming exactly that field.
    #[test]
    fn validate_checks_every_field_under_its_path() {
        let mut base = Scene::new(ArmSpec::EXAMPLE, 2.0);
        base.balls
            .push(BallSpawn::aimed(0, [0.0, -0.5], 1.0, 0.4, 0.05, 0.2, 9.8));
        base.weights.push(WeightDrop {
            id: 1,
            spawn_time_s: 0.5,
            position_m: [0.5, 1.5, 0.0],
            velocity_m_s: [0.0; 3],
            shape: WeightShape::Sphere { radius_m: 0.1 },
            mass_kg: 10.0,
        });
        base.weights.push(WeightDrop {
            id: 2,
            shape: WeightShape::Box {
                half_extents_m: [0.1; 3],
            },
            ..base.weights[0]
        });
        assert_eq!(base.validate(), Ok(()));
        type Edit = fn(&mut Scene, f64);
        let cases: &[(&str, Edit, f64)] = &[
            ("dt_s", |s, v| s.dt_s = v, 0.0),
            ("end_time_s", |s, v| s.end_time_s = v, -1.0),
            ("arm.length_m", |s, v| s.arm.length_m = v, 1e3),
            ("arm.thickness_m", |s, v| s.arm.thickness_m = v, 50.0),
            ("arm.mass_kg", |s, v| s.arm.mass_kg = v, 1e9),
            ("arm.gravity_m_s2", |s, v| s.arm.gravity_m_s2 = v, 1e300),
            (
                "arm.initial_angle_rad",
                |s, v| s.arm.initial_angle_rad = v,
                1e4,
            ),
            (
                "arm.initial_velocity_rad_s",
                |s, v| s.arm.initial_velocity_rad_s = v,
                -1e4,
            ),
            ("arm.torque_limit_nm", |s, v| s.arm.torque_limit_nm = v, 0.0),
            (
                "arm.torque_limit_nm",
                |s, v| s.arm.torque_limit_nm = v,
                1.000_001e6,
            ),
            (
                "linger_after_crossing_s",
                |s, v| s.linger_after_crossing_s = v,
                -1.0,
            ),
            ("remove_below_y_m", |s, v| s.remove_below_y_m = v, -1e7),
            (
                "balls[0].spawn_time_s",
                |s, v| s.balls[0].spawn_time_s = v,
                -1.0,
            ),
            (
                "balls[0].position_m[1]",
                |s, v| s.balls[0].position_m[1] = v,
                1e7,
            ),
            (
                "balls[0].velocity_m_s[2]",
                |s, v| s.balls[0].velocity_m_s[2] = v,
                -1e7,
            ),
            ("balls[0].radius_m", |s, v| s.balls[0].radius_m = v, 0.0),
            ("balls[0].mass_kg", |s, v| s.balls[0].mass_kg = v, 1e6),
            (
                "weights[0].spawn_time_s",
                |s, v| s.weights[0].spawn_time_s = v,
                1e8,
            ),
            (
                "weights[0].position_m[0]",
                |s, v| s.weights[0].position_m[0] = v,
                -1e7,
            ),
            (
                "weights[0].velocity_m_s[1]",
                |s, v| s.weights[0].velocity_m_s[1] = v,
                1e7,
            ),
            (
                "weights[0].shape.sphere.radius_m",
                |s, v| {
                    s.weights[0].shape = WeightShape::Sphere { radius_m: v };
                },
                20.0,
            ),
            (
                "weights[1].shape.box.half_extents_m[2]",
                |s, v| {
                    s.weights[1].shape = WeightShape::Box {
                        half_extents_m: [0.1, 0.1, v],
                    };
                },
                0.0,
            ),
            ("weights[1].mass_kg", |s, v| s.weights[1].mass_kg = v, 0.0),
        ];
        for &(field, edit, bad) in cases {
            for v in [bad, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                let mut s = base.clone();
                edit(&mut s, v);
                let got = s.validate();
                assert_eq!(
                    got.as_ref().map_err(|e| e.0.as_str()),
                    Err(field),
                    "{field} = {v}: {got:?}"
                );
            }
        }
        // The torque limit's bound is inclusive at the top.
        let mut s = base.clone();
        s.arm.torque_limit_nm = MAX_TORQUE_LIMIT_NM;
        assert_eq!(s.validate(), Ok(()));
        // The id fields: see `duplicate_ids_are_refused`.
    }

    #[test]
    fn the_torque_limit_is_required_and_unknown_arm_fields_refused() {
        let e = err(
            r#"{"end_time_s": 1, "arm": {"length_m": 1, "thickness_m": 0.1, "mass_kg": 2, "gravity_m_s2": 9.8}}"#,
        );
        assert_eq!(e.field, "arm");
        assert!(e.reason.contains("missing field `torque_limit_nm`"), "{e}");
        let e = err(
            r#"{"end_time_s": 1, "arm": {"length_m": 1, "thickness_m": 0.1, "mass_kg": 2, "gravity_m_s2": 9.8, "torque_limit_nm": 5, "tourque_limit": 1}}"#,
        );
        assert!(e.reason.contains("unknown field `tourque_limit`"), "{e}");
        let e = err(&format!(
            r#"{{"end_time_s": 1, {}}}"#,
            ARM.replace("100}", "-3}")
        ));
        assert_eq!(e.field, "arm.torque_limit_nm");
        assert_eq!(
            e.reason,
            "must be greater than 0 and at most 1000000, got -3"
        );
    }

    #[test]
    fn an_aimed_ball_reaches_its_target_in_free_flight() {
        let g = 9.8;
        let b = BallSpawn::aimed(0, [0.3, -0.7], 2.0, 0.4, 0.05, 0.1, g);
        let t = 2.0 - b.spawn_time_s;
        let y = b.position_m[1] + b.velocity_m_s[1] * t - 0.5 * g * t * t;
        let z = b.position_m[2] + b.velocity_m_s[2] * t;
        assert!((y + 0.7).abs() < 1e-12 && z.abs() < 1e-12);
    }
}
