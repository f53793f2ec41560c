//! Chain scenario files: a URDF chain, keyframes on a beat, pushes, and the controllers' settings
//! (`scenarios/on_the_beat.toml`). What `hil run` reads when a scenario has `kind =
//! "on_the_beat"`, how it is checked, and how it resolves into the plant's
//! [`sim_host::ChainScene`].
//!
//! One description for both sides: the scenario names a URDF file (relative to the scenario
//! file), which the plant builds its Rapier chain from and `hil` its controller model from
//! ([`crate::model::chain_from_urdf`]). The resolved scene is checked by the plant's own
//! [`ChainScene::validate`] and by building an in-process replica of the plant
//! ([`ChainPlant::new`], which reads the URDF as the plant will), before any process starts; the
//! plant's field paths are mapped back to the user's. Every error names the file, the field and
//! the reason.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use sim_host::chain::{ChainKind, ChainPlant, ChainScene, Push};

use super::super::scenario::{MAX_CONTROL_RATE_HZ, MAX_END_S, MIN_CONTROL_RATE_HZ, ScenarioError};

/// Most keyframes a chain scenario may have.
pub const MAX_KEYFRAMES: usize = 10_000;

/// Which demonstration a chain scenario is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChainTask {
    /// "On the Beat!": keyframed joint poses at given instants.
    OnTheBeat,
}

impl ChainTask {
    /// The name in scenario files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::OnTheBeat => "on_the_beat",
        }
    }
}

/// A chain scenario file, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainScenario {
    /// Which demonstration (`"on_the_beat"`).
    pub kind: ChainTask,
    /// Name (the default output folder is `out/<name>/`).
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
    /// Joint poses and the instants they must be reached at, in time order.
    pub keyframes: Vec<Keyframe>,
    /// Controller settings.
    pub controllers: ChainControllerSpec,
}

/// The chain's description and start.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// The URDF file, relative to the scenario file (or absolute).
    pub urdf: PathBuf,
    /// Gravity, world vector, m/s².
    pub gravity_m_s2: [f64; 3],
    /// Joint angles at t = 0, rad, URDF joint order (empty: all 0).
    #[serde(default)]
    pub initial_positions_rad: Vec<f64>,
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

/// Settings of the four chain controllers.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainControllerSpec {
    /// Fraction of the sampled loop's stable gain limit any gain may use, in (0, 1].
    pub stability_margin: f64,
    /// n of "On the Beat!": λ = t̂/n for `single_link`, `composite`, `composite_feedforward`.
    pub time_constants: f64,
    /// `arrival`: the setpoint is aimed this far beyond each pose, rad.
    pub tolerance_rad: f64,
    /// `arrival`: natural frequency of the hold after the last keyframe, rad/s.
    pub hold_natural_freq_rad_s: f64,
}

impl ChainScenario {
    /// Read and check a chain scenario file.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: file.clone(),
            field: "-".into(),
            reason: format!("cannot read: {e}"),
        })?;
        Self::parse(&text, path)
    }

    /// Parse and check scenario text read from `path` (relative URDF paths are resolved against
    /// its folder).
    pub fn parse(text: &str, path: &Path) -> Result<Self, ScenarioError> {
        let file = path.display().to_string();
        let error = |field: String, reason: String| ScenarioError {
            file: file.clone(),
            field,
            reason,
        };
        let de = toml::Deserializer::parse(text)
            .map_err(|e| error("-".into(), format!("not valid TOML: {}", e.message())))?;
        let mut scenario: Self = serde_path_to_error::deserialize(de).map_err(|e| {
            let field = e.path().to_string();
            error(
                if field == "." { "-".into() } else { field },
                e.into_inner().message().to_string(),
            )
        })?;
        if scenario.model.urdf.is_relative()
            && let Some(dir) = path.parent()
        {
            scenario.model.urdf = dir.join(&scenario.model.urdf);
        }
        scenario
            .check()
            .map_err(|(field, reason)| error(field, reason))?;
        Ok(scenario)
    }

    /// The control period, s.
    pub fn control_period_s(&self) -> f64 {
        1.0 / self.control_rate_hz
    }

    /// `out/<name>/`.
    pub fn default_out_dir(&self) -> PathBuf {
        PathBuf::from("out").join(&self.name)
    }

    /// The plant's scene: the URDF as an absolute path (the scene file is written elsewhere).
    pub fn scene(&self) -> ChainScene {
        let urdf =
            std::path::absolute(&self.model.urdf).unwrap_or_else(|_| self.model.urdf.clone());
        ChainScene {
            kind: ChainKind::Chain,
            urdf,
            dt_s: self.physics_dt_s,
            end_time_s: self.end_s,
            gravity_m_s2: self.model.gravity_m_s2,
            initial_positions_rad: self.model.initial_positions_rad.clone(),
            initial_velocities_rad_s: Vec::new(),
            pushes: self.pushes.clone(),
            ..ChainScene::new(PathBuf::new(), self.end_s, self.model.gravity_m_s2)
        }
    }

    /// Semantic checks: (field, reason) of the first failure.
    fn check(&self) -> Result<(), (String, String)> {
        let fail = |field: &str, reason: String| Err((field.to_owned(), reason));
        if self.name.is_empty()
            || !self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return fail(
                "name",
                "must be non-empty ASCII letters, digits, '_' or '-' (it names the output folder)"
                    .into(),
            );
        }
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
        let c = &self.controllers;
        if !(c.stability_margin > 0.0 && c.stability_margin <= 1.0) {
            return fail(
                "controllers.stability_margin",
                format!("must lie in (0, 1] (got {})", c.stability_margin),
            );
        }
        for (field, v) in [
            ("controllers.time_constants", c.time_constants),
            ("controllers.tolerance_rad", c.tolerance_rad),
            (
                "controllers.hold_natural_freq_rad_s",
                c.hold_natural_freq_rad_s,
            ),
        ] {
            if !(v.is_finite() && v > 0.0 && v <= 1e6) {
                return fail(field, format!("must lie in (0, 1e6] (got {v})"));
            }
        }
        // Everything the plant is given, by the plant's checks (a URDF-free pass, then the
        // replica built from the URDF as the plant will build it).
        let scene = self.scene();
        scene
            .validate()
            .map_err(|(field, reason)| (scene_field(&field), reason))?;
        let plant = ChainPlant::new(&scene).map_err(|e| (scene_field(&e.field), e.reason))?;
        let joints = plant.joint_count();
        if self.keyframes.is_empty() {
            return fail("keyframes", "at least one keyframe is needed".into());
        }
        if self.keyframes.len() > MAX_KEYFRAMES {
            return fail(
                "keyframes",
                format!(
                    "at most {MAX_KEYFRAMES} keyframes (got {})",
                    self.keyframes.len()
                ),
            );
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
            if k.positions_rad.len() != joints {
                return Err((
                    field("positions_rad"),
                    format!(
                        "{} values for a chain of {joints} joints (one per joint, in URDF order: {})",
                        k.positions_rad.len(),
                        plant.joint_names().join(", ")
                    ),
                ));
            }
            for (j, &p) in k.positions_rad.iter().enumerate() {
                if !(p.is_finite() && p.abs() <= 100.0) {
                    return Err((
                        format!("keyframes[{i}].positions_rad[{j}]"),
                        format!("must be finite and within ±100 rad (got {p})"),
                    ));
                }
            }
            previous = k.time_s;
        }
        Ok(())
    }
}

/// A field of the plant's scene named as the scenario names it.
fn scene_field(field: &str) -> String {
    for (scene, ours) in [
        ("urdf", "model.urdf"),
        ("gravity_m_s2", "model.gravity_m_s2"),
        ("initial_positions_rad", "model.initial_positions_rad"),
        ("dt_s", "physics_dt_s"),
        ("end_time_s", "end_s"),
    ] {
        if let Some(rest) = field.strip_prefix(scene) {
            return format!("{ours}{rest}");
        }
    }
    field.to_owned()
}
