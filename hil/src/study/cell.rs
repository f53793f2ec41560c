//! One cell of a study: one SIMBICON walk at one control rate with one set of gains, from a
//! (possibly perturbed) start, and its JSON line. `hil study cell` is the only caller of
//! [`run_cell`]; sweeps and searches run cells as separate `hil study cell` processes and read
//! their lines, so nothing else depends on how a cell runs.

use std::time::Instant;

use control_core::simbicon::{Gains, PdGains, RoleGains, SimbiconConfig};
use serde::{Deserialize, Serialize};
use sim_host::biped::{BipedScene, TorsoPush};
use sim_host::walk::{jsimbicon_start, run_walk};

/// SIMBICON's design stiffness, N·m/rad (every role).
pub const DESIGN_KP: f64 = 300.0;
/// SIMBICON's design damping at damping scale 1, N·m·s/rad (every role).
pub const DESIGN_KD: f64 = 30.0;

/// The accepted control rates, Hz.
pub const RATE_RANGE_HZ: [f64; 2] = [50.0, 20_000.0];
/// The largest damping scale (the range is (0, this]).
pub const MAX_DAMPING_SCALE: f64 = 100.0;
/// The longest run, s (the range is (0, this]).
pub const MAX_DURATION_S: f64 = 600.0;
/// The plant's largest push force, N.
pub const MAX_PUSH_FORCE_N: f64 = 1e5;
/// The longest push, s.
pub const MAX_PUSH_DURATION_S: f64 = 10.0;
/// A perturbed start's forward velocity is JSimbicon's ± up to this, m/s.
pub const SEED_VELOCITY_SPREAD_M_S: f64 = 0.1;
/// A perturbed start's torso pitch is JSimbicon's ± up to this, rad.
pub const SEED_PITCH_SPREAD_RAD: f64 = 0.02;

/// The controllers a cell can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Controller {
    /// SIMBICON with fixed gains: kp 300, kd 30·S on every role ([`Gains::Fixed`]).
    Simbicon,
    /// The design pair (300, 30·S) through the period rule ([`Gains::Analytic`]).
    SimbiconAnalytic,
}

impl Controller {
    /// Every controller, in table order.
    pub const ALL: [Self; 2] = [Self::Simbicon, Self::SimbiconAnalytic];

    /// Its name on the command line and in the JSON lines.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Simbicon => "simbicon",
            Self::SimbiconAnalytic => "simbicon_analytic",
        }
    }

    /// The controller named `name` (`-` and `_` alike), or a message listing the known ones.
    pub fn parse(name: &str) -> Result<Self, String> {
        let n = name.replace('-', "_");
        Self::ALL
            .into_iter()
            .find(|c| c.name() == n)
            .ok_or_else(|| format!("no controller {name:?} (known: simbicon, simbicon_analytic)"))
    }
}

/// One value per walk role, in the order of `control_core::simbicon::RoleGains`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Roles<T> {
    /// The torso's virtual PD (the stance hip's composition).
    pub torso: T,
    /// The swing hip.
    pub swing_hip: T,
    /// The swing knee.
    pub swing_knee: T,
    /// The swing ankle.
    pub swing_ankle: T,
    /// The stance knee.
    pub stance_knee: T,
    /// The stance ankle.
    pub stance_ankle: T,
}

/// The roles' names, in order.
pub const ROLE_NAMES: [&str; 6] = [
    "torso",
    "swing_hip",
    "swing_knee",
    "swing_ankle",
    "stance_knee",
    "stance_ankle",
];

impl<T: Copy> Roles<T> {
    /// The same value for every role.
    pub const fn all(v: T) -> Self {
        Self {
            torso: v,
            swing_hip: v,
            swing_knee: v,
            swing_ankle: v,
            stance_knee: v,
            stance_ankle: v,
        }
    }

    /// The values in role order.
    pub const fn to_array(self) -> [T; 6] {
        [
            self.torso,
            self.swing_hip,
            self.swing_knee,
            self.swing_ankle,
            self.stance_knee,
            self.stance_ankle,
        ]
    }

    /// From values in role order.
    pub const fn from_array(a: [T; 6]) -> Self {
        let [
            torso,
            swing_hip,
            swing_knee,
            swing_ankle,
            stance_knee,
            stance_ankle,
        ] = a;
        Self {
            torso,
            swing_hip,
            swing_knee,
            swing_ankle,
            stance_knee,
            stance_ankle,
        }
    }

    /// Each value mapped.
    pub fn map<U: Copy>(self, f: impl Fn(T) -> U) -> Roles<U> {
        Roles::from_array(self.to_array().map(f))
    }
}

/// A PD pair as given on the command line (`--gains`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pd {
    /// kp, N·m/rad.
    pub kp: f64,
    /// kd, N·m·s/rad.
    pub kd: f64,
}

/// A PD pair as used by the controller.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UsedPd {
    /// kp, N·m/rad.
    pub kp: f64,
    /// kd, N·m·s/rad.
    pub kd: f64,
    /// Whether the period's stability rule moved the design pair (analytic gains only).
    pub clamped: bool,
}

impl Roles<UsedPd> {
    /// The gains as given pairs (dropping the `clamped` flags).
    pub fn pairs(&self) -> Roles<Pd> {
        self.map(|u| Pd { kp: u.kp, kd: u.kd })
    }
}

impl Roles<Pd> {
    /// Σ over the roles of kp + 10·kd (the quantity of Carensac et al.'s Fig. 2, right).
    pub fn kp_plus_10_kd(&self) -> f64 {
        self.to_array().iter().map(|p| p.kp + 10.0 * p.kd).sum()
    }
}

/// A horizontal push on the torso's centre of mass.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Push {
    /// The impulse along +x, N·s (negative: backwards); the force is this over the duration.
    pub impulse_ns: f64,
    /// When it starts, s.
    pub at_s: f64,
    /// How long it lasts, s.
    pub duration_s: f64,
}

/// What one cell runs.
#[derive(Debug, Clone, PartialEq)]
pub struct CellSpec {
    /// The controller (and so the gain rule, unless `gains` is given).
    pub controller: Controller,
    /// Control rate = physics rate, Hz.
    pub rate_hz: f64,
    /// The design damping is 30 times this.
    pub damping_scale: f64,
    /// Per-role gains overriding the controller's ([`Gains::PerRole`]).
    pub gains: Option<Roles<Pd>>,
    /// Length of the run, s.
    pub duration_s: f64,
    /// An optional push.
    pub push: Option<Push>,
    /// 0: JSimbicon's start; N > 0: that start perturbed by [`perturbation`].
    pub seed: u64,
}

/// A start, as the plant's scene takes it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Start {
    /// Every body's velocity along +x at t = 0, m/s.
    pub forward_velocity_m_s: f64,
    /// The torso's pitch at t = 0, rad.
    pub torso_pitch_rad: f64,
}

/// The nominal (seed 0) start: JSimbicon's.
pub fn nominal_start() -> Start {
    let mut scene = BipedScene::new(1.0, [0.0, -9.81]);
    jsimbicon_start(&mut scene);
    Start {
        forward_velocity_m_s: scene.initial_forward_velocity_m_s,
        torso_pitch_rad: scene.initial_torso_pitch_rad,
    }
}

pub use crate::run::scenario::SplitMix64;

/// The start's offsets from JSimbicon's for `seed`: (forward velocity m/s, torso pitch rad),
/// uniform within ±[`SEED_VELOCITY_SPREAD_M_S`] and ±[`SEED_PITCH_SPREAD_RAD`]; (0, 0) for seed 0.
pub fn perturbation(seed: u64) -> (f64, f64) {
    if seed == 0 {
        return (0.0, 0.0);
    }
    let mut rng = SplitMix64::new(seed);
    let dv = rng.uniform(-SEED_VELOCITY_SPREAD_M_S, SEED_VELOCITY_SPREAD_M_S);
    let dpitch = rng.uniform(-SEED_PITCH_SPREAD_RAD, SEED_PITCH_SPREAD_RAD);
    (dv, dpitch)
}

fn in_range(name: &str, v: f64, lo_open: f64, hi: f64, unit: &str) -> Result<(), String> {
    if v.is_finite() && v > lo_open && v <= hi {
        Ok(())
    } else {
        Err(format!(
            "{name} {v}: must be a finite number in ({lo_open}, {hi}]{unit}"
        ))
    }
}

/// Checks a control rate (finite, within [`RATE_RANGE_HZ`]).
pub fn check_rate(rate_hz: f64) -> Result<(), String> {
    let [lo, hi] = RATE_RANGE_HZ;
    if rate_hz.is_finite() && (lo..=hi).contains(&rate_hz) {
        Ok(())
    } else {
        Err(format!(
            "rate {rate_hz} Hz: must be a finite number in [{lo}, {hi}] Hz"
        ))
    }
}

/// Checks a damping scale (finite, in (0, [`MAX_DAMPING_SCALE`]]).
pub fn check_scale(scale: f64) -> Result<(), String> {
    in_range("damping scale", scale, 0.0, MAX_DAMPING_SCALE, "")
}

/// Checks a run's duration (finite, in (0, [`MAX_DURATION_S`]] s).
pub fn check_duration(duration_s: f64) -> Result<(), String> {
    in_range("duration", duration_s, 0.0, MAX_DURATION_S, " s")
}

/// Checks per-role gains: every kp finite and > 0, every kd finite and ≥ 0.
pub fn check_gains(gains: &Roles<Pd>) -> Result<(), String> {
    for (name, pd) in ROLE_NAMES.iter().zip(gains.to_array()) {
        if !(pd.kp.is_finite() && pd.kp > 0.0) {
            return Err(format!(
                "gains: {name}.kp = {}: must be a finite number > 0",
                pd.kp
            ));
        }
        if !(pd.kd.is_finite() && pd.kd >= 0.0) {
            return Err(format!(
                "gains: {name}.kd = {}: must be a finite number ≥ 0",
                pd.kd
            ));
        }
    }
    Ok(())
}

/// Reads `--gains`: a JSON object with the six roles, each `{"kp": .., "kd": ..}`.
pub fn parse_gains(json: &str) -> Result<Roles<Pd>, String> {
    let de = &mut serde_json::Deserializer::from_str(json);
    let gains: Roles<Pd> = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        format!(
            "--gains: {path}: {} (expected {{\"torso\": {{\"kp\": .., \"kd\": ..}}, ...}} with the roles {})",
            e.inner(),
            ROLE_NAMES.join(", ")
        )
    })?;
    check_gains(&gains).map_err(|e| format!("--{e}"))?;
    Ok(gains)
}

impl CellSpec {
    /// Every field within its range (see `hil study cell --help`).
    pub fn validate(&self) -> Result<(), String> {
        check_rate(self.rate_hz).map_err(|e| format!("--rate-hz: {e}"))?;
        check_scale(self.damping_scale).map_err(|e| format!("--damping-scale: {e}"))?;
        check_duration(self.duration_s).map_err(|e| format!("--duration-s: {e}"))?;
        if let Some(g) = &self.gains {
            check_gains(g).map_err(|e| format!("--{e}"))?;
        }
        if let Some(p) = self.push {
            in_range(
                "--push-duration-s",
                p.duration_s,
                0.0,
                MAX_PUSH_DURATION_S,
                " s",
            )?;
            if !(p.at_s.is_finite() && p.at_s >= 0.0 && p.at_s <= self.duration_s) {
                return Err(format!(
                    "--push-at-s {}: must be within the run, [0, {}] s",
                    p.at_s, self.duration_s
                ));
            }
            let force = p.impulse_ns / p.duration_s;
            if !(p.impulse_ns.is_finite() && force.abs() <= MAX_PUSH_FORCE_N) {
                return Err(format!(
                    "--push-ns {} over {} s: the force must be finite and within ±{MAX_PUSH_FORCE_N} N",
                    p.impulse_ns, p.duration_s
                ));
            }
        }
        Ok(())
    }

    /// How the gains are chosen: `fixed`, `analytic` or `per_role`.
    pub fn gains_source(&self) -> &'static str {
        match (self.gains.is_some(), self.controller) {
            (true, _) => "per_role",
            (false, Controller::Simbicon) => "fixed",
            (false, Controller::SimbiconAnalytic) => "analytic",
        }
    }

    /// The controller's gain rule for this cell.
    pub fn gains(&self) -> Gains {
        let kd = DESIGN_KD * self.damping_scale;
        match (self.gains, self.controller) {
            (Some(g), _) => Gains::PerRole(to_role_gains(&g)),
            (None, Controller::Simbicon) => Gains::Fixed {
                stiffness_nm_per_rad: DESIGN_KP,
                damping_nms_per_rad: kd,
            },
            (None, Controller::SimbiconAnalytic) => match Gains::analytic(1.0 / self.rate_hz) {
                Gains::Analytic {
                    period_s,
                    stability_margin,
                    integrator,
                    inertias,
                    ..
                } => Gains::Analytic {
                    period_s,
                    stability_margin,
                    integrator,
                    design_stiffness_nm_per_rad: DESIGN_KP,
                    design_damping_nms_per_rad: kd,
                    inertias,
                },
                other => other,
            },
        }
    }

    /// The gains the controller will use, per role, or why there are none.
    pub fn resolved_gains(&self) -> Result<Roles<UsedPd>, String> {
        let g = self
            .gains()
            .resolve()
            .map_err(|e| format!("the gains cannot be used: {e}"))?;
        Ok(from_role_gains(&g))
    }

    /// This cell's start.
    pub fn start(&self) -> Start {
        let nominal = nominal_start();
        let (dv, dpitch) = perturbation(self.seed);
        Start {
            forward_velocity_m_s: nominal.forward_velocity_m_s + dv,
            torso_pitch_rad: nominal.torso_pitch_rad + dpitch,
        }
    }

    /// The arguments of `hil study cell` that run this cell (after `study cell`).
    pub fn args(&self) -> Vec<String> {
        let mut a = vec![
            "--controller".into(),
            self.controller.name().into(),
            "--rate-hz".into(),
            self.rate_hz.to_string(),
            "--damping-scale".into(),
            self.damping_scale.to_string(),
            "--duration-s".into(),
            self.duration_s.to_string(),
            "--seed".into(),
            self.seed.to_string(),
        ];
        if let Some(g) = &self.gains {
            a.push("--gains".into());
            a.push(serde_json::to_string(g).unwrap_or_default());
        }
        if let Some(p) = self.push {
            a.extend([
                "--push-ns".into(),
                p.impulse_ns.to_string(),
                "--push-at-s".into(),
                p.at_s.to_string(),
                "--push-duration-s".into(),
                p.duration_s.to_string(),
            ]);
        }
        a
    }
}

fn to_role_gains(g: &Roles<Pd>) -> RoleGains {
    let pd = |p: Pd| PdGains {
        stiffness_nm_per_rad: p.kp,
        damping_nms_per_rad: p.kd,
        clamped: false,
    };
    RoleGains {
        torso: pd(g.torso),
        swing_hip: pd(g.swing_hip),
        swing_knee: pd(g.swing_knee),
        swing_ankle: pd(g.swing_ankle),
        stance_knee: pd(g.stance_knee),
        stance_ankle: pd(g.stance_ankle),
    }
}

/// The controller's resolved gains as per-role JSON values.
pub fn from_role_gains(g: &RoleGains) -> Roles<UsedPd> {
    let used = |p: PdGains| UsedPd {
        kp: p.stiffness_nm_per_rad,
        kd: p.damping_nms_per_rad,
        clamped: p.clamped,
    };
    Roles {
        torso: used(g.torso),
        swing_hip: used(g.swing_hip),
        swing_knee: used(g.swing_knee),
        swing_ankle: used(g.swing_ankle),
        stance_knee: used(g.stance_knee),
        stance_ankle: used(g.stance_ankle),
    }
}

/// What a cell's walk did.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CellOutcome {
    /// Whether it fell (torso centre below 0.8 m or a non-foot body on the ground).
    pub fell: bool,
    /// When, s; `None` if it did not.
    pub fell_at_s: Option<f64>,
    /// The whole body's COM x at the end (or the fall) minus at the start, m.
    pub distance_m: f64,
    /// `distance_m` over the time walked, m/s.
    pub mean_speed_mps: f64,
    /// Stance changes.
    pub steps: u32,
    /// Torques the controller's limit cut.
    pub limited_torques: u64,
    /// Ticks whose input the controller refused (zero torque applied).
    pub refused_ticks: u64,
    /// Wall time of the run, s (not part of the result's determinism).
    pub wall_s: f64,
}

/// The biped scene of `spec`: its rate, duration, start and push.
pub fn scene(spec: &CellSpec) -> BipedScene {
    let mut scene = BipedScene::new(spec.duration_s, [0.0, -9.81]);
    scene.dt_s = 1.0 / spec.rate_hz;
    jsimbicon_start(&mut scene);
    let start = spec.start();
    scene.initial_forward_velocity_m_s = start.forward_velocity_m_s;
    scene.initial_torso_pitch_rad = start.torso_pitch_rad;
    if let Some(p) = spec.push
        && p.impulse_ns != 0.0
    {
        scene.pushes.push(TorsoPush {
            force_n: [p.impulse_ns / p.duration_s, 0.0],
            start_s: p.at_s,
            duration_s: p.duration_s,
        });
    }
    scene
}

/// Runs one cell: the walk of `spec` from its start, one controller tick per physics step,
/// stopped at the fall (whose time is reported). For now in process
/// (`sim_host::walk::run_walk`); the same walk can run through the plant process instead without
/// changing this signature or any caller.
pub fn run_cell(spec: &CellSpec) -> Result<CellOutcome, String> {
    spec.validate()?;
    let config = SimbiconConfig {
        gains: spec.gains(),
        ..SimbiconConfig::default()
    };
    let started = Instant::now();
    let s = run_walk(&scene(spec), config, true, |_, _| {}).map_err(|e| format!("{e}"))?;
    Ok(CellOutcome {
        fell: s.fell,
        fell_at_s: s.fell_at_s,
        distance_m: s.distance_m,
        mean_speed_mps: s.mean_speed_mps,
        steps: s.steps,
        limited_torques: s.limited_torques,
        refused_ticks: s.refused_ticks,
        wall_s: started.elapsed().as_secs_f64(),
    })
}

/// A cell's JSON line: the spec echoed, the gains used, the start and the outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellLine {
    /// [`Controller::name`].
    pub controller: String,
    /// Control rate, Hz.
    pub rate_hz: f64,
    /// The design damping is 30 times this.
    pub damping_scale: f64,
    /// The start's seed.
    pub seed: u64,
    /// Length of the run, s.
    pub duration_s: f64,
    /// The push, if any.
    pub push: Option<Push>,
    /// [`CellSpec::gains_source`].
    pub gains_source: String,
    /// The gains used per role.
    pub gains: Roles<UsedPd>,
    /// The start.
    pub start: Start,
    /// See [`CellOutcome`].
    pub fell: bool,
    /// See [`CellOutcome`].
    pub fell_at_s: Option<f64>,
    /// See [`CellOutcome`].
    pub distance_m: f64,
    /// See [`CellOutcome`].
    pub mean_speed_mps: f64,
    /// See [`CellOutcome`].
    pub steps: u32,
    /// See [`CellOutcome`].
    pub limited_torques: u64,
    /// See [`CellOutcome`].
    pub refused_ticks: u64,
    /// See [`CellOutcome`].
    pub wall_s: f64,
}

impl CellLine {
    /// The line of `spec`, run with `gains`, ending in `outcome`.
    pub fn new(spec: &CellSpec, gains: Roles<UsedPd>, outcome: &CellOutcome) -> Self {
        Self {
            controller: spec.controller.name().into(),
            rate_hz: spec.rate_hz,
            damping_scale: spec.damping_scale,
            seed: spec.seed,
            duration_s: spec.duration_s,
            push: spec.push,
            gains_source: spec.gains_source().into(),
            gains,
            start: spec.start(),
            fell: outcome.fell,
            fell_at_s: outcome.fell_at_s,
            distance_m: outcome.distance_m,
            mean_speed_mps: outcome.mean_speed_mps,
            steps: outcome.steps,
            limited_torques: outcome.limited_torques,
            refused_ticks: outcome.refused_ticks,
            wall_s: outcome.wall_s,
        }
    }

    /// The outcome part.
    pub fn outcome(&self) -> CellOutcome {
        CellOutcome {
            fell: self.fell,
            fell_at_s: self.fell_at_s,
            distance_m: self.distance_m,
            mean_speed_mps: self.mean_speed_mps,
            steps: self.steps,
            limited_torques: self.limited_torques,
            refused_ticks: self.refused_ticks,
            wall_s: self.wall_s,
        }
    }
}

/// Arguments of `hil study cell`.
#[derive(Debug, Clone, clap::Args)]
pub struct CellArgs {
    /// simbicon (fixed kp 300, kd 30·S on every role) or simbicon_analytic (the pair
    /// (300, 30·S) through the period rule).
    #[arg(long)]
    pub controller: String,
    /// Control rate = physics rate, Hz, in [50, 20000].
    #[arg(long)]
    pub rate_hz: f64,
    /// Damping scale S, in (0, 100]: the design kd is 30·S.
    #[arg(long, default_value_t = 1.0)]
    pub damping_scale: f64,
    /// Per-role gains overriding the controller's: a JSON object with the keys torso,
    /// swing_hip, swing_knee, swing_ankle, stance_knee, stance_ankle, each {"kp": .., "kd": ..}.
    #[arg(long)]
    pub gains: Option<String>,
    /// Length of the run, s, in (0, 600].
    #[arg(long, default_value_t = 20.0)]
    pub duration_s: f64,
    /// A push on the torso along +x: its impulse, N·s (negative: backwards).
    #[arg(long, allow_negative_numbers = true)]
    pub push_ns: Option<f64>,
    /// When the push starts, s.
    #[arg(long, default_value_t = 5.0, requires = "push_ns")]
    pub push_at_s: f64,
    /// How long the push lasts, s, in (0, 10].
    #[arg(long, default_value_t = 0.2, requires = "push_ns")]
    pub push_duration_s: f64,
    /// 0: JSimbicon's start; N > 0: that start perturbed (forward velocity ±0.1 m/s, torso
    /// pitch ±0.02 rad, uniform, from splitmix64 seeded with N). The same seed gives the same
    /// walk.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl CellArgs {
    /// The cell these arguments describe, validated.
    pub fn spec(&self) -> Result<CellSpec, String> {
        let controller =
            Controller::parse(&self.controller).map_err(|e| format!("--controller: {e}"))?;
        let gains = self.gains.as_deref().map(parse_gains).transpose()?;
        let spec = CellSpec {
            controller,
            rate_hz: self.rate_hz,
            damping_scale: self.damping_scale,
            gains,
            duration_s: self.duration_s,
            push: self.push_ns.map(|impulse_ns| Push {
                impulse_ns,
                at_s: self.push_at_s,
                duration_s: self.push_duration_s,
            }),
            seed: self.seed,
        };
        spec.validate()?;
        Ok(spec)
    }
}

/// `hil study cell`: exit 2 on bad arguments, 1 when the walk could not run, 0 with the line
/// printed (a fall is an outcome, not a failure).
pub fn main(args: &CellArgs) -> std::process::ExitCode {
    use std::process::ExitCode;
    let spec = match args.spec() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hil: study cell: {e}");
            return ExitCode::from(2);
        }
    };
    let gains = match spec.resolved_gains() {
        Ok(g) => g,
        Err(e) => {
            eprintln!("hil: study cell: {e}");
            return ExitCode::from(2);
        }
    };
    match run_cell(&spec) {
        Ok(outcome) => match serde_json::to_string(&CellLine::new(&spec, gains, &outcome)) {
            Ok(line) => {
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("hil: study cell: cannot write the line: {e}");
                ExitCode::from(1)
            }
        },
        Err(e) => {
            eprintln!("hil: study cell: the walk could not run: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> CellSpec {
        CellSpec {
            controller: Controller::SimbiconAnalytic,
            rate_hz: 300.0,
            damping_scale: 1.0,
            gains: None,
            duration_s: 20.0,
            push: None,
            seed: 0,
        }
    }

    #[test]
    fn splitmix64_matches_the_reference_and_repeats() {
        // Reference values of splitmix64 seeded with 0 (Vigna's splitmix64.c).
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(perturbation(7), perturbation(7));
        assert_ne!(perturbation(7), perturbation(8));
        assert_eq!(perturbation(0), (0.0, 0.0));
        for seed in 1..2000 {
            let (dv, dp) = perturbation(seed);
            assert!(dv.abs() <= SEED_VELOCITY_SPREAD_M_S && dp.abs() <= SEED_PITCH_SPREAD_RAD);
        }
        // Roughly uniform: both signs, spread over the range.
        let (lo, hi) = (1..2000)
            .map(|s| perturbation(s).0)
            .fold((1.0f64, -1.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        assert!(lo < -0.09 && hi > 0.09, "{lo} {hi}");
        let s = CellSpec { seed: 3, ..spec() };
        assert_eq!(s.start(), CellSpec { seed: 3, ..spec() }.start());
        assert_ne!(s.start(), spec().start());
        assert_eq!(spec().start(), nominal_start());
    }

    #[test]
    fn arguments_out_of_range_are_refused_with_a_message() {
        let bad = [
            CellSpec {
                rate_hz: 49.0,
                ..spec()
            },
            CellSpec {
                rate_hz: 20_001.0,
                ..spec()
            },
            CellSpec {
                rate_hz: f64::NAN,
                ..spec()
            },
            CellSpec {
                damping_scale: 0.0,
                ..spec()
            },
            CellSpec {
                damping_scale: 100.5,
                ..spec()
            },
            CellSpec {
                damping_scale: f64::INFINITY,
                ..spec()
            },
            CellSpec {
                duration_s: 0.0,
                ..spec()
            },
            CellSpec {
                duration_s: 601.0,
                ..spec()
            },
            CellSpec {
                push: Some(Push {
                    impulse_ns: 50.0,
                    at_s: 30.0,
                    duration_s: 0.2,
                }),
                ..spec()
            },
            CellSpec {
                push: Some(Push {
                    impulse_ns: 50.0,
                    at_s: 5.0,
                    duration_s: 0.0,
                }),
                ..spec()
            },
            CellSpec {
                push: Some(Push {
                    impulse_ns: 1e9,
                    at_s: 5.0,
                    duration_s: 0.2,
                }),
                ..spec()
            },
            CellSpec {
                gains: Some(Roles {
                    swing_knee: Pd { kp: -1.0, kd: 1.0 },
                    ..Roles::all(Pd { kp: 1.0, kd: 1.0 })
                }),
                ..spec()
            },
        ];
        for s in bad {
            let e = s.validate().expect_err(&format!("{s:?}"));
            assert!(!e.is_empty());
        }
        for s in [
            CellSpec {
                rate_hz: 50.0,
                ..spec()
            },
            CellSpec {
                rate_hz: 20_000.0,
                damping_scale: 100.0,
                duration_s: 600.0,
                ..spec()
            },
            CellSpec {
                push: Some(Push {
                    impulse_ns: -70.0,
                    at_s: 5.0,
                    duration_s: 0.2,
                }),
                ..spec()
            },
        ] {
            assert_eq!(s.validate(), Ok(()), "{s:?}");
        }
        assert!(
            Controller::parse("pd")
                .unwrap_err()
                .contains("simbicon_analytic")
        );
        assert_eq!(
            Controller::parse("simbicon-analytic"),
            Ok(Controller::SimbiconAnalytic)
        );
    }

    #[test]
    fn gains_json_is_read_strictly_and_named_in_errors() {
        let ok = r#"{"torso":{"kp":300,"kd":30},"swing_hip":{"kp":200,"kd":20},
            "swing_knee":{"kp":100,"kd":10},"swing_ankle":{"kp":5,"kd":1},
            "stance_knee":{"kp":250,"kd":25},"stance_ankle":{"kp":6,"kd":0}}"#;
        let g = parse_gains(ok).unwrap();
        assert_eq!(g.swing_ankle, Pd { kp: 5.0, kd: 1.0 });
        assert_eq!(
            g.kp_plus_10_kd(),
            600.0 + 400.0 + 200.0 + 15.0 + 500.0 + 6.0
        );
        let missing = r#"{"torso":{"kp":300,"kd":30}}"#;
        assert!(parse_gains(missing).unwrap_err().contains("swing_hip"));
        let typo = ok.replace("swing_knee", "swing_kne");
        assert!(parse_gains(&typo).unwrap_err().contains("swing_kne"));
        let negative = ok.replace(r#""kp":5,"#, r#""kp":-5,"#);
        let e = parse_gains(&negative).unwrap_err();
        assert!(e.contains("swing_ankle.kp"), "{e}");
        // The spec's per-role gains are used as given, never clamped.
        let s = CellSpec {
            gains: Some(g),
            ..spec()
        };
        assert_eq!(s.gains_source(), "per_role");
        let used = s.resolved_gains().unwrap();
        assert_eq!(used.pairs(), g);
        assert!(used.to_array().iter().all(|u| !u.clamped));
        // The args round trip through the command line's parser.
        let back = CellSpec {
            gains: Some(parse_gains(&s.args()[11]).unwrap()),
            ..spec()
        };
        assert_eq!(back, s);
    }

    #[test]
    fn damping_scale_sets_the_fixed_and_the_design_pair() {
        let fixed = CellSpec {
            controller: Controller::Simbicon,
            damping_scale: 0.5,
            ..spec()
        };
        let g = fixed.resolved_gains().unwrap();
        assert_eq!(
            g.torso,
            UsedPd {
                kp: 300.0,
                kd: 15.0,
                clamped: false
            }
        );
        assert_eq!(g.stance_ankle, g.torso);
        // Analytic at 2 kHz with S = 1 is SIMBICON's pair on every role but the ankles (stable
        // only above 1255 Hz), so at 300 Hz the ankles are moved, the rest kept.
        let a = CellSpec {
            damping_scale: 1.0,
            ..spec()
        }
        .resolved_gains()
        .unwrap();
        assert_eq!(
            a.torso,
            UsedPd {
                kp: 300.0,
                kd: 30.0,
                clamped: false
            }
        );
        assert!(a.swing_ankle.clamped && a.stance_ankle.clamped);
        assert!(
            (a.swing_ankle.kp - 4.29).abs() < 0.01,
            "{:?}",
            a.swing_ankle
        );
        let soft = CellSpec {
            damping_scale: 0.25,
            ..spec()
        }
        .resolved_gains()
        .unwrap();
        assert_eq!(soft.torso.kd, 7.5);
    }

    #[test]
    fn a_line_round_trips_through_json() {
        let s = CellSpec {
            seed: 9,
            push: Some(Push {
                impulse_ns: 70.0,
                at_s: 5.0,
                duration_s: 0.2,
            }),
            ..spec()
        };
        let outcome = CellOutcome {
            fell: true,
            fell_at_s: Some(1.25),
            distance_m: 1.5,
            mean_speed_mps: 1.2,
            steps: 3,
            limited_torques: 4,
            refused_ticks: 0,
            wall_s: 0.01,
        };
        let line = CellLine::new(&s, s.resolved_gains().unwrap(), &outcome);
        let text = serde_json::to_string(&line).unwrap();
        assert!(!text.contains('\n'));
        let back: CellLine = serde_json::from_str(&text).unwrap();
        assert_eq!(back, line);
        assert_eq!(back.outcome(), outcome);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        for key in [
            "controller",
            "rate_hz",
            "damping_scale",
            "seed",
            "duration_s",
            "gains",
            "fell",
            "fell_at_s",
            "distance_m",
            "mean_speed_mps",
            "steps",
            "limited_torques",
            "refused_ticks",
            "wall_s",
        ] {
            assert!(v.get(key).is_some(), "{key}");
        }
        assert!(v["gains"]["swing_ankle"]["clamped"].as_bool().unwrap());
        let not_fallen = CellLine::new(
            &s,
            s.resolved_gains().unwrap(),
            &CellOutcome {
                fell: false,
                fell_at_s: None,
                ..outcome
            },
        );
        let v: serde_json::Value = serde_json::to_value(&not_fallen).unwrap();
        assert!(v["fell_at_s"].is_null());
    }
}
