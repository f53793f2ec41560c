//! What every kind's scenario file shares: the file read once and its `kind` picked
//! ([`read_scenario_file`], [`Document`], [`ScenarioKind`]), the opening checks of `kind` and `name`, TOML into a
//! kind's type with the failing field's path ([`Document::into_kind`]), the error that names the file, the
//! field and the reason ([`ScenarioError`]), and a seeded generator. Each kind's own schema and
//! checks live in its module (the ball-blocking arm's in [`super::arm::scenario`]).

use std::fmt;
use std::path::Path;

use super::arm::scenario::BALL_BLOCKING;

/// Slowest control rate accepted, Hz.
pub const MIN_CONTROL_RATE_HZ: f64 = 1.0;
/// Fastest control rate accepted, Hz (a tick costs ~1–5 µs and a wake-up ~10–50 µs here: above
/// 10 kHz the thread would spend most of its period waking up).
pub const MAX_CONTROL_RATE_HZ: f64 = 10_000.0;
/// Largest aim beyond a pose (`controllers.*.tolerance_rad`), rad: half a turn.
pub const MAX_TOLERANCE_RAD: f64 = std::f64::consts::PI;
/// Longest simulated run accepted, s (one day; outputs stream, so memory does not grow with it).
pub const MAX_END_S: f64 = 86_400.0;

/// A scenario that could not be used.
#[derive(Debug)]
pub struct ScenarioError {
    /// The file (or the built-in's name).
    pub file: String,
    /// Dotted path of the field, or `-` when the file as a whole is at fault.
    pub field: String,
    /// Why.
    pub reason: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "scenario {}: field `{}`: {}",
            self.file, self.field, self.reason
        )
    }
}

impl std::error::Error for ScenarioError {}

/// What a scenario file is: its top-level `kind`, read with the file's text in one pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScenarioKind {
    /// No `kind`: the ball-blocking arm ([`super::arm::scenario::Scenario`]).
    BallBlocking,
    /// `"dynamo_push"`: the pushed humanoid.
    DynamoPush,
    /// `"simbicon_walk"`: the planar walker.
    SimbiconWalk,
    /// `"on_the_beat"`, `"kenwright_reach"` or `"pose_tour"`: a robot from its URDF in joint
    /// space.
    Joint(super::chain::scenario::ChainTask),
    /// `"robot_push"`: a floating-base robot from its URDF, standing, pushed.
    RobotPush,
    /// `"walk3d"`: the humanoid walking in 3D.
    Walk3d,
}

impl ScenarioKind {
    /// Every `kind` a scenario file may give, as written.
    pub const NAMES: [&'static str; 8] = [
        BALL_BLOCKING,
        super::dynamo::KIND,
        super::legged::KIND,
        super::biped::KIND,
        super::walk3d::KIND,
        "on_the_beat",
        "kenwright_reach",
        "pose_tour",
    ];

    /// The kind of `name`, as a file writes it.
    fn of(name: &str) -> Option<Self> {
        use super::chain::scenario::ChainTask;
        match name {
            BALL_BLOCKING => Some(Self::BallBlocking),
            super::dynamo::KIND => Some(Self::DynamoPush),
            super::biped::KIND => Some(Self::SimbiconWalk),
            "on_the_beat" => Some(Self::Joint(ChainTask::OnTheBeat)),
            "kenwright_reach" => Some(Self::Joint(ChainTask::KenwrightReach)),
            "pose_tour" => Some(Self::Joint(ChainTask::PoseTour)),
            super::legged::KIND => Some(Self::RobotPush),
            super::walk3d::KIND => Some(Self::Walk3d),
            _ => None,
        }
    }
}

/// A scenario file's text parsed once: its TOML tree (borrowing the text) and its `kind`.
/// [`Document::parse`] refuses text that is not TOML, or a `kind` that is not one of
/// [`ScenarioKind::NAMES`] (or not a string), listing every kind; the kind's own type is then
/// read from the tree ([`Document::into_kind`]), never from the text again.
pub struct Document<'t> {
    /// The file (or the caller's name for the text), for errors.
    file: String,
    table: toml::Spanned<toml::de::DeTable<'t>>,
    /// The file's `kind` (none: the ball-blocking arm).
    pub kind: ScenarioKind,
}

impl<'t> Document<'t> {
    /// Parses `text`, of file `file`, and picks its kind.
    pub fn parse(text: &'t str, file: &str) -> Result<Self, ScenarioError> {
        let error = |field: &str, reason: String| ScenarioError {
            file: file.to_owned(),
            field: field.to_owned(),
            reason,
        };
        let table = toml::de::DeTable::parse(text)
            .map_err(|e| error("-", format!("not valid TOML: {}", e.message())))?;
        let kinds = || {
            format!(
                "one of {} (none: \"{BALL_BLOCKING}\")",
                ScenarioKind::NAMES
                    .iter()
                    .map(|k| format!("\"{k}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let kind = table
            .get_ref()
            .iter()
            .find(|(key, _)| key.get_ref().as_ref() == "kind")
            .map(|(_, value)| value.get_ref());
        let kind = match kind {
            None => ScenarioKind::BallBlocking,
            Some(toml::de::DeValue::String(name)) => ScenarioKind::of(name)
                .ok_or_else(|| error("kind", format!("unknown kind \"{name}\": {}", kinds())))?,
            Some(other) => {
                return Err(error(
                    "kind",
                    format!(
                        "must be a string, {} (got a TOML {})",
                        kinds(),
                        other.type_str()
                    ),
                ));
            }
        };
        Ok(Self {
            file: file.to_owned(),
            table,
            kind,
        })
    }

    /// The file it was read from, as errors name it.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The tree read as a `T`: a field that does not fit `T` is refused under its path
    /// (`push.at_s`, `feet[1].link`; a missing field under its own path, `reach.joint`; the
    /// whole document as `-`).
    pub fn into_kind<T: serde::de::DeserializeOwned>(self) -> Result<T, ScenarioError> {
        let file = self.file;
        let de = toml::de::Deserializer::from(self.table);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let reason = e.into_inner().message().to_string();
            ScenarioError {
                file,
                field: field_of(&path, &reason),
                reason,
            }
        })
    }
}

/// The field a deserialisation error names: its path (`push.at_s`), with the field a "missing
/// field" error names appended (`reach.joint`), the whole document as `-`.
fn field_of(path: &str, reason: &str) -> String {
    let missing = reason
        .strip_prefix("missing field `")
        .and_then(|r| r.split('`').next())
        .filter(|m| !m.is_empty());
    match (path, missing) {
        (".", Some(m)) => m.to_owned(),
        (".", None) => "-".to_owned(),
        (p, Some(m)) => format!("{p}.{m}"),
        (p, None) => p.to_owned(),
    }
}

/// The checks every kind with a `kind` field opens with: `kind` is `expected`, and `name` is
/// non-empty ASCII letters, digits, `_` or `-` (it names the output folder). The first failure
/// as (field, reason).
pub fn check_kind_and_name(kind: &str, expected: &str, name: &str) -> Result<(), (String, String)> {
    if kind != expected {
        return Err(("kind".into(), format!("must be \"{expected}\"")));
    }
    check_name(name)
}

/// Every kind's check of `name`: non-empty ASCII letters, digits, `_` or `-` (it names the
/// output folder). The failure as (field, reason).
pub fn check_name(name: &str) -> Result<(), (String, String)> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err((
            "name".into(),
            "must be non-empty ASCII letters, digits, '_' or '-' (it names the output folder)"
                .into(),
        ));
    }
    Ok(())
}

/// The text of scenario file `path`, by the one input reader (`sim_host::input::read_text`: a
/// regular file, never a FIFO or a device, of at most 1 MiB), or the error naming the file.
pub fn read_scenario_file(path: &Path) -> Result<String, ScenarioError> {
    sim_host::input::read_text(path, sim_host::input::InputKind::Scenario).map_err(|e| {
        ScenarioError {
            file: path.display().to_string(),
            field: "-".into(),
            reason: e.reason,
        }
    })
}

/// The reason for a list longer than its cap: "200000 entries; at most 64".
pub fn too_many(len: usize, max: usize) -> String {
    format!("{len} entries; at most {max}")
}

/// A small seeded generator (SplitMix64): the same seed gives the same drops on every machine.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// Seeded.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        // 53 random bits → [0, 1).
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        lo + (hi - lo) * unit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_field_is_named() {
        assert_eq!(
            field_of(".", "missing field `fall_tilt_rad`"),
            "fall_tilt_rad"
        );
        assert_eq!(field_of("reach", "missing field `joint`"), "reach.joint");
        assert_eq!(field_of(".", "invalid type"), "-");
        assert_eq!(field_of("push_at_s", "invalid type"), "push_at_s");
    }

    #[test]
    fn the_generator_is_reproducible() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        for _ in 0..100 {
            let x = a.uniform(2.0, 3.0);
            assert_eq!(x.to_bits(), b.uniform(2.0, 3.0).to_bits());
            assert!((2.0..3.0).contains(&x));
        }
    }
}
