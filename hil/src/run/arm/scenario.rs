//! The ball-blocking arm's scenario files: what `hil run` reads, how it checks them, and how it resolves their random
//! parts (seeded) into the fully explicit scene the plant builds.
//!
//! One schema, checked once: the `[arm]` table *is* the plant's [`sim_host::ArmSpec`], and
//! every value that reaches the plant is checked by the plant's own [`Scene::validate`] on the
//! scene resolved here, its field paths mapped back to the fields of the user's file. The checks
//! here cover only what the scene does not hold (names, rates, targets, controller settings).
//! Every error names the file, the field (as a dotted path) and the reason.
//!
//! Documented ranges: `control_rate_hz` in [[`MIN_CONTROL_RATE_HZ`], [`MAX_CONTROL_RATE_HZ`]],
//! `physics_dt_s` in [1e-5, 0.1] s (the plant's range), `end_s` up to [`MAX_END_S`],
//! `targets[i].angle_rad` within ±[`MAX_TARGET_ANGLE_RAD`], `weights.drop_height_m` in (0,
//! [`MAX_DROP_HEIGHT_M`]], `controllers.*.tolerance_rad` in (0, [`MAX_TOLERANCE_RAD`]],
//! `controllers.static_timing.time_constants` in (0, [`MAX_TIME_CONSTANTS`]]. Lists: at most
//! [`MAX_TARGETS`] targets and [`MAX_RUN_CONTROLLERS`] entries in `controllers.run`. The file is
//! read by [`read_scenario_file`] (a regular file of at most 1 MiB).

use control_core::model::ArmModel;
use serde::Deserialize;
use sim_host::{ArmSpec, BallSpawn, Scene, WeightDrop, WeightShape};

use super::controller::ControllerKind;
use std::path::Path;

use crate::run::scenario::{
    Document, MAX_CONTROL_RATE_HZ, MAX_END_S, MAX_TOLERANCE_RAD, MIN_CONTROL_RATE_HZ,
    ScenarioError, SplitMix64, check_name, read_scenario_file, too_many,
};

/// The built-in scenario: `hil run` with no file.
pub const BUILT_IN: &str = include_str!("../../../../scenarios/ball_blocking.toml");
/// The ball-blocking arm's `kind`: what its reports say; its files may give it or leave it out.
pub const BALL_BLOCKING: &str = "ball_blocking";
/// The name shown for the built-in scenario's "file".
pub const BUILT_IN_NAME: &str = "<built-in scenarios/ball_blocking.toml>";
/// Most targets a scenario may have (each has a ball and may have a weight, the plant names
/// bodies with 16-bit ids, and the scene of this many balls and weights fits the plant's scene
/// file limit, `sim_host::input::MAX_SCENE_BYTES`, with room to spare).
pub const MAX_TARGETS: usize = 10_000;
/// Most entries of `controllers.run` (there are five controllers, each named once).
pub const MAX_RUN_CONTROLLERS: usize = 16;
/// Largest |`targets[i].angle_rad`|, rad (the plant's bound on `arm.initial_angle_rad`).
pub const MAX_TARGET_ANGLE_RAD: f64 = 1e3;
/// Largest `weights.drop_height_m`, m.
pub const MAX_DROP_HEIGHT_M: f64 = 1e3;
/// Largest `controllers.static_timing.time_constants` (n of λ = t̂/n).
pub const MAX_TIME_CONSTANTS: f64 = 1e6;

/// A scenario file, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// `"ball_blocking"`, or left out.
    #[serde(default)]
    pub kind: Option<String>,
    /// Name of the scenario (reports and plot titles; the default output folder is named after
    /// the scenario file, see `output::default_out_dir`).
    pub name: String,
    /// Seed of every random choice (where and when the weights drop).
    pub seed: u64,
    /// Control rate, Hz.
    pub control_rate_hz: f64,
    /// Physics step, s.
    pub physics_dt_s: f64,
    /// Simulated end time, s.
    pub end_s: f64,
    /// The arm: the plant's own description (`sim_host::ArmSpec`), so its checks are the plant's.
    pub arm: ArmSpec,
    /// The balls, one per target.
    pub balls: BallSpec,
    /// Target poses and instants, in order.
    pub targets: Vec<Target>,
    /// The perturbing weights.
    pub weights: WeightSpec,
    /// Controller settings.
    pub controllers: ControllerSpec,
}

/// How the balls are thrown.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BallSpec {
    /// Radius, m.
    pub radius_m: f64,
    /// Mass, kg.
    pub mass_kg: f64,
    /// Distance from the shoulder along the target angle at which a ball crosses the arm's plane.
    pub crossing_radius_m: f64,
    /// Time between launch and crossing, s (balls fly along +z at the plant's aimed speed and
    /// cross at the top of their arc).
    pub flight_time_s: f64,
}

/// One target: the arm must be at `angle_rad` at `time_s` (a ball crosses there then).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// The instant, s.
    pub time_s: f64,
    /// The pose, rad.
    pub angle_rad: f64,
}

/// The perturbing weights: one per segment between targets.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeightSpec {
    /// Whether to drop any.
    pub enabled: bool,
    /// Mass of each, kg.
    pub mass_kg: f64,
    /// Radius of each (a sphere), m.
    pub radius_m: f64,
    /// Height of the release above the shoulder, m.
    pub drop_height_m: f64,
    /// Release points are drawn uniformly in this fraction range of the arm's length…
    pub along_arm_min: f64,
    /// …up to this fraction.
    pub along_arm_max: f64,
    /// Each weight is released so that it would reach the arm, were the arm at the higher of its
    /// segment's two end poses, at an instant drawn uniformly in this fraction range of the
    /// segment (from the previous target's instant, or 0, to its target's); a lower arm is met
    /// later…
    pub segment_fraction_min: f64,
    /// …up to this fraction.
    pub segment_fraction_max: f64,
}

/// Controller settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControllerSpec {
    /// Fraction of the stable gain limit of the sampled loop (semi-implicit Euler at the control
    /// period) that every servo may use, in (0, 1]; the gains are clamped there.
    pub stability_margin: f64,
    /// The analytic arrival servo.
    pub analytic: ToleranceSpec,
    /// The fixed-gain PD.
    pub fixed_gain: ToleranceSpec,
    /// The static-timing method.
    pub static_timing: StaticTimingSpec,
    /// Which controllers the scenario runs, in order (default: `analytic`, `fixed_gain`,
    /// `static_timing`). The firmware profile adds `analytic_f32` and
    /// `analytic_fixed`, which share `analytic`'s tolerance.
    #[serde(default)]
    pub run: Option<Vec<String>>,
    /// `analytic_fixed`: its gains are re-solved every this many ticks (default 4: 50 Hz at
    /// 200 Hz), the fixed-point torque law runs every tick.
    #[serde(default)]
    pub fixed_gain_decimation: Option<u32>,
}

/// Servo that aims `tolerance_rad` beyond each pose.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToleranceSpec {
    /// rad, > 0.
    pub tolerance_rad: f64,
}

/// The static-timing method's n.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticTimingSpec {
    /// Time constants per plan, > 0.
    pub time_constants: f64,
}

impl Scenario {
    /// Read and check a scenario file; `None` reads the built-in.
    pub fn load(path: Option<&Path>) -> Result<(Self, String), ScenarioError> {
        let (text, file) = match path {
            Some(p) => (read_scenario_file(p)?, p.display().to_string()),
            None => (BUILT_IN.to_string(), BUILT_IN_NAME.to_string()),
        };
        let scenario = Self::parse(&text, &file)?;
        Ok((scenario, file))
    }

    /// Parse and check scenario text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, ScenarioError> {
        Self::from_document(Document::parse(text, file)?)
    }

    /// Check the scenario of a parsed file.
    pub fn from_document(doc: Document<'_>) -> Result<Self, ScenarioError> {
        let file = doc.file().to_owned();
        let scenario: Self = doc.into_kind()?;
        // The scenario's own fields first, then everything the plant will be given, by the
        // plant's checks, named as the user wrote it.
        scenario
            .check()
            .and_then(|()| {
                scenario
                    .scene()
                    .validate()
                    .map_err(|(field, reason)| scene_field_in_scenario(&field, reason))
            })
            .map_err(|(field, reason)| ScenarioError {
                file,
                field,
                reason,
            })?;
        Ok(scenario)
    }

    /// Semantic checks: (field, reason) of the first failure.
    fn check(&self) -> Result<(), (String, String)> {
        if let Some(kind) = &self.kind
            && kind != BALL_BLOCKING
        {
            return Err((
                "kind".into(),
                format!("must be \"{BALL_BLOCKING}\" (or left out) in this file"),
            ));
        }
        fn positive(field: &str, v: f64) -> Result<(), (String, String)> {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err((
                    field.into(),
                    format!("must be a finite number > 0 (got {v})"),
                ))
            }
        }
        fn positive_up_to(field: &str, v: f64, max: f64) -> Result<(), (String, String)> {
            if v.is_finite() && v > 0.0 && v <= max {
                Ok(())
            } else {
                Err((
                    field.into(),
                    format!("must be a finite number in (0, {max}] (got {v:?})"),
                ))
            }
        }
        fn within(field: &str, v: f64, max: f64) -> Result<(), (String, String)> {
            if v.is_finite() && v.abs() <= max {
                Ok(())
            } else {
                Err((
                    field.into(),
                    format!("must be finite and within ±{max} (got {v:?})"),
                ))
            }
        }
        // List lengths first: nothing below walks a list longer than its cap.
        if self.targets.len() > MAX_TARGETS {
            return Err(("targets".into(), too_many(self.targets.len(), MAX_TARGETS)));
        }
        if let Some(run) = &self.controllers.run
            && run.len() > MAX_RUN_CONTROLLERS
        {
            return Err((
                "controllers.run".into(),
                too_many(run.len(), MAX_RUN_CONTROLLERS),
            ));
        }
        check_name(&self.name)?;
        let rate = self.control_rate_hz;
        if !(MIN_CONTROL_RATE_HZ..=MAX_CONTROL_RATE_HZ).contains(&rate) {
            return Err((
                "control_rate_hz".into(),
                format!(
                    "must lie in [{MIN_CONTROL_RATE_HZ}, {MAX_CONTROL_RATE_HZ}] Hz (got {rate})"
                ),
            ));
        }
        positive("physics_dt_s", self.physics_dt_s)?;
        positive("end_s", self.end_s)?;
        if self.end_s > MAX_END_S {
            return Err((
                "end_s".into(),
                format!("must be at most {MAX_END_S} s (got {})", self.end_s),
            ));
        }
        let a = &self.arm;
        // The arm by the plant's checks first: the checks below compare against its values.
        Scene::new(*a, 0.0)
            .validate()
            .map_err(|(field, reason)| scene_field_in_scenario(&field, reason))?;
        let b = &self.balls;
        positive("balls.radius_m", b.radius_m)?;
        positive("balls.mass_kg", b.mass_kg)?;
        positive("balls.crossing_radius_m", b.crossing_radius_m)?;
        positive("balls.flight_time_s", b.flight_time_s)?;
        if b.crossing_radius_m > a.length_m {
            return Err((
                "balls.crossing_radius_m".into(),
                format!(
                    "balls must cross within the arm's reach ({} m), got {} m",
                    a.length_m, b.crossing_radius_m
                ),
            ));
        }
        if self.targets.is_empty() {
            return Err(("targets".into(), "at least one target is needed".into()));
        }
        let mut previous = 0.0;
        for (i, t) in self.targets.iter().enumerate() {
            positive(&format!("targets[{i}].time_s"), t.time_s)?;
            within(
                &format!("targets[{i}].angle_rad"),
                t.angle_rad,
                MAX_TARGET_ANGLE_RAD,
            )?;
            if t.time_s <= previous {
                return Err((
                    format!("targets[{i}].time_s"),
                    format!("targets must be in increasing time order (after {previous} s)"),
                ));
            }
            if t.time_s >= self.end_s {
                return Err((
                    format!("targets[{i}].time_s"),
                    format!("must come before end_s = {} s", self.end_s),
                ));
            }
            if t.time_s < b.flight_time_s {
                return Err((
                    format!("targets[{i}].time_s"),
                    format!(
                        "its ball must be launched after t = 0 (flight time {} s)",
                        b.flight_time_s
                    ),
                ));
            }
            previous = t.time_s;
        }
        let w = &self.weights;
        if w.enabled {
            positive("weights.mass_kg", w.mass_kg)?;
            positive("weights.radius_m", w.radius_m)?;
            positive_up_to("weights.drop_height_m", w.drop_height_m, MAX_DROP_HEIGHT_M)?;
            for (field, v) in [
                ("weights.along_arm_min", w.along_arm_min),
                ("weights.along_arm_max", w.along_arm_max),
                ("weights.segment_fraction_min", w.segment_fraction_min),
                ("weights.segment_fraction_max", w.segment_fraction_max),
            ] {
                if !(0.0..=1.0).contains(&v) {
                    return Err((field.into(), format!("must lie in [0, 1] (got {v})")));
                }
            }
            if w.along_arm_min > w.along_arm_max {
                return Err((
                    "weights.along_arm_max".into(),
                    "must not be below weights.along_arm_min".into(),
                ));
            }
            if w.segment_fraction_min > w.segment_fraction_max {
                return Err((
                    "weights.segment_fraction_max".into(),
                    "must not be below weights.segment_fraction_min".into(),
                ));
            }
        }
        let margin = self.controllers.stability_margin;
        if !(margin.is_finite() && margin > 0.0 && margin <= 1.0) {
            return Err((
                "controllers.stability_margin".into(),
                format!("must lie in (0, 1] (got {margin})"),
            ));
        }
        positive_up_to(
            "controllers.analytic.tolerance_rad",
            self.controllers.analytic.tolerance_rad,
            MAX_TOLERANCE_RAD,
        )?;
        positive_up_to(
            "controllers.fixed_gain.tolerance_rad",
            self.controllers.fixed_gain.tolerance_rad,
            MAX_TOLERANCE_RAD,
        )?;
        positive_up_to(
            "controllers.static_timing.time_constants",
            self.controllers.static_timing.time_constants,
            MAX_TIME_CONSTANTS,
        )?;
        if let Some(run) = &self.controllers.run {
            if run.is_empty() {
                return Err(("controllers.run".into(), "names no controller".into()));
            }
            for (i, name) in run.iter().enumerate() {
                if ControllerKind::from_name(name).is_none() {
                    return Err((
                        format!("controllers.run[{i}]"),
                        format!(
                            "no controller `{name}` (known: {})",
                            ControllerKind::KNOWN.map(ControllerKind::name).join(", ")
                        ),
                    ));
                }
                if run.get(..i).is_some_and(|before| before.contains(name)) {
                    return Err((format!("controllers.run[{i}]"), format!("`{name}` twice")));
                }
            }
        }
        if let Some(d) = self.controllers.fixed_gain_decimation
            && !(1..=10_000).contains(&d)
        {
            return Err((
                "controllers.fixed_gain_decimation".into(),
                format!("must lie in [1, 10000] ticks (got {d})"),
            ));
        }
        Ok(())
    }

    /// The controllers this scenario runs, in order.
    pub fn controller_kinds(&self) -> Vec<ControllerKind> {
        match &self.controllers.run {
            Some(run) => run
                .iter()
                .filter_map(|n| ControllerKind::from_name(n))
                .collect(),
            None => ControllerKind::ALL.to_vec(),
        }
    }

    /// The arm's mass properties.
    pub fn arm_model(&self) -> ArmModel {
        self.arm.model()
    }

    /// The targets as the arm's controller takes them.
    pub fn arm_targets(&self) -> Vec<control_core::arm::ArmTarget> {
        self.targets
            .iter()
            .map(|t| control_core::arm::ArmTarget {
                time_s: t.time_s,
                angle_rad: t.angle_rad,
            })
            .collect()
    }

    /// The fully explicit scene the plant builds: balls aimed at the targets, weights drawn
    /// from the seed.
    pub fn scene(&self) -> Scene {
        let mut scene = Scene::new(self.arm, self.end_s);
        scene.dt_s = self.physics_dt_s;
        let b = &self.balls;
        scene.balls = self
            .targets
            .iter()
            .zip(0u16..)
            .map(|(t, id)| {
                let (sin, cos) = t.angle_rad.sin_cos();
                BallSpawn::aimed(
                    id,
                    [b.crossing_radius_m * cos, b.crossing_radius_m * sin],
                    t.time_s,
                    b.flight_time_s,
                    b.radius_m,
                    b.mass_kg,
                    self.arm.gravity_m_s2,
                )
            })
            .collect();
        let w = &self.weights;
        if w.enabled {
            let mut rng = SplitMix64::new(self.seed);
            let mut segment_start = 0.0;
            // The arm's pose when the segment starts: the previous target (or the start).
            let mut start_angle = self.arm.initial_angle_rad;
            // Weights are numbered after the balls: one namespace of body ids in the plant.
            let mut id = u16::try_from(self.targets.len()).unwrap_or(u16::MAX);
            for t in &self.targets {
                let along = rng.uniform(w.along_arm_min, w.along_arm_max);
                let fraction = rng.uniform(w.segment_fraction_min, w.segment_fraction_max);
                let arrive = segment_start + fraction * (t.time_s - segment_start);
                // Free fall from the release height to the top of the arm at the higher of the
                // segment's two end poses: the weight cannot meet the arm before `arrive`, and
                // meets it later by as much as the arm is lower.
                let x = along * self.arm.length_m;
                let highest = start_angle.tan().max(t.angle_rad.tan()) * x;
                let arm_top = highest + 0.5 * self.arm.thickness_m + w.radius_m;
                let fall_m = (w.drop_height_m - arm_top).max(0.0);
                let fall_s = (2.0 * fall_m / self.arm.gravity_m_s2).sqrt();
                segment_start = t.time_s;
                start_angle = t.angle_rad;
                let release = arrive - fall_s;
                if release < 0.0 {
                    continue;
                }
                scene.weights.push(WeightDrop {
                    id,
                    spawn_time_s: release,
                    position_m: [along * self.arm.length_m, w.drop_height_m, 0.0],
                    velocity_m_s: [0.0; 3],
                    shape: WeightShape::Sphere {
                        radius_m: w.radius_m,
                    },
                    mass_kg: w.mass_kg,
                });
                id = id.wrapping_add(1);
            }
        }
        scene
    }

    /// The control period, s.
    pub fn control_period_s(&self) -> f64 {
        1.0 / self.control_rate_hz
    }
}
/// The scenario field a field of the resolved scene comes from, for an error the user can act
/// on: `dt_s` is `physics_dt_s`, `balls[i].radius_m` is `balls.radius_m`, a ball's flight is
/// made from `targets[i]` and the `[balls]` table, a weight's from the `[weights]` table.
fn scene_field_in_scenario(scene_field: &str, reason: String) -> (String, String) {
    let (head, tail) = scene_field.split_once('.').unwrap_or((scene_field, ""));
    let index = |h: &str| {
        h.split_once('[')
            .and_then(|(_, r)| r.strip_suffix(']'))
            .map(str::to_owned)
    };
    let field = match (head, tail) {
        ("dt_s", _) => "physics_dt_s".to_owned(),
        ("end_time_s", _) => "end_s".to_owned(),
        ("arm", t) => format!("arm.{t}"),
        (h, "radius_m" | "mass_kg") if h.starts_with("balls[") => format!("balls.{tail}"),
        (h, _) if h.starts_with("balls[") => {
            let i = index(h).unwrap_or_default();
            return (
                format!("targets[{i}]"),
                format!(
                    "the ball for this target gets an invalid {tail} ({reason}); check it with balls.flight_time_s and balls.crossing_radius_m"
                ),
            );
        }
        (h, "mass_kg") if h.starts_with("weights[") => "weights.mass_kg".to_owned(),
        (h, "shape.sphere.radius_m") if h.starts_with("weights[") => "weights.radius_m".to_owned(),
        (h, _) if h.starts_with("weights[") => {
            return (
                "weights".to_owned(),
                format!(
                    "weight {} gets an invalid {tail}: {reason}",
                    index(h).unwrap_or_default()
                ),
            );
        }
        _ => scene_field.to_owned(),
    };
    (field, reason)
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_scenarios_load() {
        let (s, _) = Scenario::load(None).unwrap();
        assert_eq!(s.name, "ball_blocking");
        assert_eq!(s.targets.len(), 4);
        let text = include_str!("../../../../scenarios/ball_blocking_no_weights.toml");
        assert!(!Scenario::parse(text, "x").unwrap().weights.enabled);
    }

    #[test]
    fn errors_name_the_file_the_field_and_the_reason() {
        let bad_type = BUILT_IN.replace("mass_kg = 2.0", "mass_kg = \"heavy\"");
        let e = Scenario::parse(&bad_type, "f.toml").unwrap_err();
        assert_eq!(
            (e.file.as_str(), e.field.as_str()),
            ("f.toml", "arm.mass_kg")
        );
        assert!(e.reason.contains("invalid type"), "{e}");

        let negative = BUILT_IN.replace("mass_kg = 2.0", "mass_kg = -2.0");
        let e = Scenario::parse(&negative, "f.toml").unwrap_err();
        assert_eq!(e.field, "arm.mass_kg");
        assert!(e.reason.contains("got -2"), "{e}");

        // What the plant refuses is refused here, under the user's field (one schema), never
        // under a field of the generated scene.
        for (from, to, field) in [
            (
                "thickness_m = 0.06",
                "thickness_m = 50.0",
                "arm.thickness_m",
            ),
            ("mass_kg = 2.0", "mass_kg = 1e9", "arm.mass_kg"),
            (
                "gravity_m_s2 = 9.8",
                "gravity_m_s2 = 1e300",
                "arm.gravity_m_s2",
            ),
            (
                "torque_limit_nm = 1000.0",
                "torque_limit_nm = 0.0",
                "arm.torque_limit_nm",
            ),
            ("physics_dt_s = 0.005", "physics_dt_s = 1.0", "physics_dt_s"),
            (
                "control_rate_hz = 200.0",
                "control_rate_hz = 1e-300",
                "control_rate_hz",
            ),
            (
                "control_rate_hz = 200.0",
                "control_rate_hz = 1e9",
                "control_rate_hz",
            ),
            ("end_s = 4.0", "end_s = 1e9", "end_s"),
            ("radius_m = 0.03", "radius_m = 50.0", "balls.radius_m"),
            ("mass_kg = 10.0", "mass_kg = 1e9", "weights.mass_kg"),
        ] {
            let e = Scenario::parse(&BUILT_IN.replace(from, to), "f.toml").unwrap_err();
            assert_eq!(e.field, field, "{to}: {e}");
        }

        // The arm's kind may be given, and only as itself.
        let named = format!("kind = \"ball_blocking\"\n{BUILT_IN}");
        assert!(Scenario::parse(&named, "f.toml").is_ok());
        let other = format!("kind = \"walk3d\"\n{BUILT_IN}");
        let e = Scenario::parse(&other, "f.toml").unwrap_err();
        assert_eq!(e.field, "kind", "{e}");

        let unknown = BUILT_IN.replace("length_m = 1.0", "length_m = 1.0\nlenght_m = 1.0");
        let e = Scenario::parse(&unknown, "f.toml").unwrap_err();
        assert!(e.reason.contains("unknown field"), "{e}");

        let order = BUILT_IN.replace("time_s = 1.7", "time_s = 0.9");
        let e = Scenario::parse(&order, "f.toml").unwrap_err();
        assert_eq!(e.field, "targets[1].time_s");

        let e = Scenario::parse("name = ", "f.toml").unwrap_err();
        assert!(e.reason.contains("not valid TOML"), "{e}");
        assert!(
            e.to_string().starts_with("scenario f.toml: field `-`: "),
            "{e}"
        );
    }

    #[test]
    fn the_scene_aims_each_ball_at_its_target_and_draws_weights_from_the_seed() {
        let (s, _) = Scenario::load(None).unwrap();
        let scene = s.scene();
        assert_eq!(scene.balls.len(), 4);
        assert!(!scene.weights.is_empty() && scene.weights.len() <= 4);
        for (ball, t) in scene.balls.iter().zip(&s.targets) {
            assert!((ball.spawn_time_s - (t.time_s - s.balls.flight_time_s)).abs() < 1e-12);
        }
        for w in &scene.weights {
            assert!((0.3..0.9).contains(&w.position_m[0]));
            assert!(w.spawn_time_s >= 0.0 && w.spawn_time_s < s.end_s);
        }
        assert_eq!(scene, s.scene(), "same seed, same scene");
    }

    #[test]
    fn magnitudes_once_checked_only_for_sign_are_bounded() {
        for (from, to, field) in [
            (
                "drop_height_m = 1.5",
                "drop_height_m = 1e308",
                "weights.drop_height_m",
            ),
            (
                "tolerance_rad = 0.05",
                "tolerance_rad = 1e308",
                "controllers.analytic.tolerance_rad",
            ),
            (
                "time_constants = 5.0",
                "time_constants = 1e308",
                "controllers.static_timing.time_constants",
            ),
            (
                "angle_rad = 0.5",
                "angle_rad = 1e308",
                "targets[0].angle_rad",
            ),
        ] {
            assert!(BUILT_IN.contains(from), "{from}");
            let e = Scenario::parse(&BUILT_IN.replacen(from, to, 1), "f.toml").unwrap_err();
            assert_eq!(e.field, field, "{to}: {e}");
            assert!(e.reason.contains("1e308"), "{e}");
        }
    }

    #[test]
    fn lists_are_capped_and_the_largest_scene_fits_the_plant_s_file_limit() {
        let (mut s, _) = Scenario::load(None).unwrap();
        s.end_s = MAX_END_S;
        s.targets = (0..MAX_TARGETS)
            .map(|i| Target {
                time_s: 1.0 + i as f64 * 0.01,
                angle_rad: if i % 2 == 0 { 0.5 } else { -0.6 },
            })
            .collect();
        let scene = serde_json::to_string_pretty(&s.scene()).unwrap();
        assert!(
            (scene.len() as u64) < sim_host::input::MAX_SCENE_BYTES / 2,
            "{} bytes",
            scene.len()
        );
        let many = |n: usize| {
            let mut text = BUILT_IN.replace("end_s = 4.0", &format!("end_s = {MAX_END_S}"));
            for i in 0..n {
                text += &format!(
                    "[[targets]]\ntime_s = {}\nangle_rad = 0.1\n",
                    4.0 + i as f64
                );
            }
            text
        };
        let e = Scenario::parse(&many(MAX_TARGETS), "f.toml").unwrap_err();
        assert_eq!(e.field, "targets");
        assert_eq!(
            e.reason,
            format!("{} entries; at most {MAX_TARGETS}", MAX_TARGETS + 4)
        );
        let run = format!(
            "[controllers]\nrun = [{}]\n",
            vec!["\"analytic\""; MAX_RUN_CONTROLLERS + 1].join(", ")
        );
        let e = Scenario::parse(&BUILT_IN.replace("[controllers]\n", &run), "f.toml").unwrap_err();
        assert_eq!(e.field, "controllers.run");
        assert!(e.reason.contains("17 entries; at most 16"), "{e}");
    }
}
