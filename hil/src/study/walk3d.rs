//! Carensac et al. (2017)'s Algorithm 1 on the 3D humanoid walker (`walk3d`): for each control
//! rate, stepping down from one where the start gains walk, CMA-ES first searches the smallest
//! gains that still walk like the original (S_min), then from there the largest (S_max), over
//! the nine joint groups' (kp, kd) in log space; the next rate starts from S_min. Every
//! evaluation is one `hil study walk3d-cell` process (a whole walk, in that process, the plant
//! in process), so a batch scheduler can spread them as it spreads `hil study cell`. The walks
//! are `simbicon3d`'s, or with `--controller simbicon3d_stabilised` (`_m3`, `_m0`) the same
//! with the ground-contact stabiliser in the loop, or with `simbicon3d_stable_pd` (and its
//! stabilised variants) through stable PD; `--start-gains` starts the step-down from a lower
//! rate's gains.
//!
//! - `hil study walk3d-cell`: ONE walk of a `walk3d` scenario's humanoid at one rate with one set
//!   of group gains; prints one JSON line (the spec, the outcome, the objective's measures).
//!   The walk is judged by the same recorder as `hil run` ([`crate::run::walk3d`]).
//! - `hil study walk3d-cmaes`: Algorithm 1; `OUT/walk3d_cmaes.jsonl` (every evaluation,
//!   streamed), `OUT/walk3d_cmaes.json` (per rate: S_min, S_max, their walks) and a table.
//!
//! The objective (the paper's eq. 4), for gains S against the reference walk (the original
//! gains at the original rate, measured first): f = f_gains + f_head + f_hands + f_speed +
//! f_balance, with
//! - f_gains = the mean over the 18 gains of S_i / S0_i (S0 the original gains): the "min"
//!   search minimises it, the "max" search maximises it (its objective uses −f_gains);
//! - f_head = |mean head height − the reference's| / 1 cm;
//! - f_hands = mean over both hands of |mean hand position relative to the pelvis, in the
//!   character frame − the reference's| / 5 cm (the paper holds the hands at a fixed target
//!   relative to the pelvis; here the target is where the original walk carries them);
//! - f_speed = 100 when the mean forward speed is more than 5 % off the reference's (the paper
//!   discards such solutions), else 0;
//! - f_balance = 100 + 100·(1 − t_fall / T) for a fall, else 0.
//!
//! A result is valid when it walks the whole evaluation within the speed tolerance.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use cmaes::{CMAESOptions, DVector};
use control_core::articulated::nalgebra::{UnitQuaternion, Vector3};
use control_core::simbicon3d::heading_of;
use serde::{Deserialize, Serialize};
use sim_host::humanoid::HumanoidPlant;

use crate::run::recorder::Recorder;
use crate::run::session::LoopCommand;
use crate::run::walk3d::{
    CARTWHEEL_GAINS, GROUPS, GroupGains, StabiliserGains, Walk3dController, Walk3dRecorder,
    Walk3dScenario, WalkLaw,
};

use super::cma::{SIGMA0, SPEED_TOLERANCE};
use super::sweep::LineSink;
use super::{pool, prepare_out, resolve_jobs};

/// Penalty for a fall (and as much again scaled by how early).
pub const FALL_PENALTY: f64 = 100.0;
/// Penalty for a walk more than [`SPEED_TOLERANCE`] off the reference speed.
pub const SPEED_PENALTY: f64 = 100.0;
/// Objective of an evaluation that gave no outcome.
pub const FAILED_PENALTY: f64 = 1000.0;
/// Head height deviation per unit of objective, m.
pub const HEAD_UNIT_M: f64 = 0.01;
/// Hand position deviation per unit of objective, m.
pub const HANDS_UNIT_M: f64 = 0.05;

/// Arguments of `hil study walk3d-cell`.
#[derive(Debug, Clone, clap::Args)]
pub struct CellArgs {
    /// The `walk3d` scenario whose humanoid, roles, start and coronal speeds the walk uses.
    #[arg(long, default_value = "scenarios/walk3d.toml")]
    pub scenario: PathBuf,
    /// Control rate = plant rate, Hz, in [50, 5000].
    #[arg(long)]
    pub rate_hz: f64,
    /// Length of the walk, s, in (0, 600].
    #[arg(long, default_value_t = 10.0)]
    pub duration_s: f64,
    /// The gains per group: a JSON array of 9 [kp, kd] pairs in the order root, waist, neck,
    /// hip, knee, ankle, toe, shoulder, elbow (default: Cartwheel's).
    #[arg(long)]
    pub gains: Option<String>,
    /// The controller on those gains: `simbicon3d`, one with the ground-contact stabiliser
    /// (`simbicon3d_stabilised`, `_m3`, `_m0`; its baseline the scenario's
    /// `stabiliser_baseline`), or one through stable PD (`simbicon3d_stable_pd`,
    /// `simbicon3d_stable_pd_stabilised`, `_m3`, `_m0`).
    #[arg(long, default_value = "simbicon3d")]
    pub controller: String,
}

/// What a walk measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CellOutcome {
    /// Whether it fell.
    pub fell: bool,
    /// When, s.
    pub fell_at_s: Option<f64>,
    /// Steps taken.
    pub steps: usize,
    /// Mean forward speed of the centre of mass over the walk after the first step, m/s.
    pub mean_speed_m_s: f64,
    /// Mean height of the head's centre of mass, m.
    pub head_height_m: f64,
    /// Mean position of each hand (lower arm's centre of mass) relative to the pelvis, in the
    /// character frame, m: [left, right].
    pub hands_m: [[f64; 3]; 2],
    /// Joint-ticks whose torque the effort cut.
    pub limited_joint_ticks: u64,
    /// Wall time, s.
    pub wall_s: f64,
}

/// One cell's line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellLine {
    /// The controller.
    pub controller: String,
    /// Rate, Hz.
    pub rate_hz: f64,
    /// Length, s.
    pub duration_s: f64,
    /// The gains used.
    pub gains: GroupGains,
    /// The outcome.
    pub outcome: CellOutcome,
}

fn check_rate(r: f64) -> Result<(), String> {
    if r.is_finite() && (50.0..=5000.0).contains(&r) {
        Ok(())
    } else {
        Err(format!("{r}: must be in [50, 5000] Hz"))
    }
}

/// The controller `name` if a study can set its gains: `simbicon3d`, a stabilised one, or one
/// through stable PD (`simbicon3d_analytic` and `simbicon3d_tuned` choose their own gains).
pub fn study_law(name: &str) -> Result<WalkLaw, String> {
    match WalkLaw::from_name(name) {
        Some(
            l @ (WalkLaw::Simbicon3d
            | WalkLaw::Simbicon3dStabilised(_)
            | WalkLaw::Simbicon3dStablePd
            | WalkLaw::Simbicon3dStablePdStabilised(_)),
        ) => Ok(l),
        _ => Err(format!(
            "`{name}`: a study walks `simbicon3d`, `simbicon3d_stabilised`, \
             `simbicon3d_stabilised_m3`, `simbicon3d_stabilised_m0`, `simbicon3d_stable_pd`, \
             `simbicon3d_stable_pd_stabilised`, `simbicon3d_stable_pd_stabilised_m3` or \
             `simbicon3d_stable_pd_stabilised_m0` on the gains it is given"
        )),
    }
}

fn check_duration(d: f64) -> Result<(), String> {
    if d > 0.0 && d <= 600.0 {
        Ok(())
    } else {
        Err(format!("{d}: must be in (0, 600] s"))
    }
}

/// Parses `--gains`: 9 pairs, each finite and > 0 (kd ≥ 0).
pub fn parse_gains(text: &str) -> Result<GroupGains, String> {
    let g: GroupGains =
        serde_json::from_str(text).map_err(|e| format!("--gains: not 9 [kp, kd] pairs: {e}"))?;
    for (k, [kp, kd]) in g.iter().enumerate() {
        if !(kp.is_finite()
            && *kp > 0.0
            && *kp <= 1e6
            && kd.is_finite()
            && *kd >= 0.0
            && *kd <= 1e6)
        {
            return Err(format!(
                "--gains: {}: kp {kp}, kd {kd}: kp must be in (0, 1e6], kd in [0, 1e6]",
                GROUPS[k]
            ));
        }
    }
    Ok(g)
}

/// Runs one walk of `law` in this process.
pub fn run_cell(
    scenario: &Path,
    law: WalkLaw,
    rate_hz: f64,
    duration_s: f64,
    gains: &GroupGains,
) -> Result<CellOutcome, String> {
    check_rate(rate_hz).map_err(|e| format!("--rate-hz: {e}"))?;
    check_duration(duration_s).map_err(|e| format!("--duration-s: {e}"))?;
    let text = crate::run::scenario::read_scenario_file(scenario).map_err(|e| e.to_string())?;
    let mut s = Walk3dScenario::parse(&text, scenario).map_err(|e| e.to_string())?;
    s.control_rates_hz = vec![rate_hz];
    s.duration_s = duration_s;
    s.controllers = vec![law.name().into()];
    // The stabilised controllers walk on the gains given here, not the scenario's.
    s.stabiliser_gains = StabiliserGains::Cartwheel;
    let file = scenario.display().to_string();
    let p = s.prepare(&file).map_err(|e| e.to_string())?;
    let model = &p.model;
    let mut controller = Walk3dController::new(law, model, p.roles, &s, rate_hz, Some(gains))?;
    let pelvis = p.roles.root_body;
    let body = |name: &str| model.body_index(name).ok_or(format!("no link {name}"));
    let head = body("head")?;
    let hands = [body("left_lower_arm")?, body("right_lower_arm")?];
    let mut recorder = Recorder::new(Walk3dRecorder::new(model, pelvis, s.fall_height_m, 0.0));
    let scene = s.scene(rate_hz);
    let mut plant = HumanoidPlant::new(&scene).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut frame = plant.state_frame();
    let end = scene.total_steps();
    let (mut head_sum, mut hand_sum, mut n) = (0.0, [Vector3::zeros(); 2], 0u64);
    let (mut v_sum, mut v_n, mut first_step_s) = (0.0, 0u64, None);
    let mut fell_at = None;
    loop {
        let Some(state) = recorder.state(&frame) else {
            return Err("a state frame the controller cannot use".into());
        };
        let cmd = controller.tick(state);
        recorder.tick(&cmd, None);
        let b = &state.bodies;
        let q = b[pelvis].orientation;
        let h = heading_of(&UnitQuaternion::from_quaternion(
            control_core::articulated::nalgebra::Quaternion::new(q[0], q[1], q[2], q[3]),
        ));
        head_sum += b[head].com_m[1];
        for (sum, &k) in hand_sum.iter_mut().zip(&hands) {
            *sum += h.inverse() * (Vector3::from(b[k].com_m) - Vector3::from(b[pelvis].com_m));
        }
        n += 1;
        if cmd.walk.steps >= 1 {
            first_step_s.get_or_insert(state.sim_time_s);
            v_sum += cmd.walk.v_m_s[0];
            v_n += 1;
        }
        if let Some(t) = recorder.kind().fell_at_s() {
            fell_at = Some(t);
            break;
        }
        if frame.step >= end {
            break;
        }
        frame = plant
            .step(cmd.torques())
            .map_err(|e| format!("the plant refused a torque frame: {e}"))?;
    }
    let run = recorder.finish(Default::default(), Default::default(), started.elapsed());
    let n = n.max(1) as f64;
    Ok(CellOutcome {
        fell: fell_at.is_some(),
        fell_at_s: fell_at,
        steps: run.kind.steps.len(),
        mean_speed_m_s: if v_n > 0 { v_sum / v_n as f64 } else { 0.0 },
        head_height_m: head_sum / n,
        hands_m: hand_sum.map(|v| [v.x / n, v.y / n, v.z / n]),
        limited_joint_ticks: run.kind.limited,
        wall_s: started.elapsed().as_secs_f64(),
    })
}

/// `hil study walk3d-cell`.
pub fn cell_main(args: &CellArgs) -> ExitCode {
    let gains = match args.gains.as_deref().map(parse_gains).transpose() {
        Ok(g) => g.unwrap_or(CARTWHEEL_GAINS),
        Err(e) => {
            eprintln!("hil: study walk3d-cell: {e}");
            return ExitCode::from(2);
        }
    };
    let law = match study_law(&args.controller) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("hil: study walk3d-cell: --controller: {e}");
            return ExitCode::from(2);
        }
    };
    match run_cell(&args.scenario, law, args.rate_hz, args.duration_s, &gains) {
        Ok(outcome) => {
            let line = CellLine {
                controller: law.name().into(),
                rate_hz: args.rate_hz,
                duration_s: args.duration_s,
                gains,
                outcome,
            };
            match serde_json::to_string(&line) {
                Ok(l) => {
                    println!("{l}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("hil: study walk3d-cell: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Err(e) => {
            eprintln!("hil: study walk3d-cell: {e}");
            ExitCode::from(2)
        }
    }
}

/// Arguments of `hil study walk3d-cmaes`.
#[derive(Debug, Clone, clap::Args)]
pub struct CmaesArgs {
    /// The `walk3d` scenario (humanoid, roles, start, coronal speeds).
    #[arg(long, default_value = "scenarios/walk3d.toml")]
    pub scenario: PathBuf,
    /// Control rates, Hz, searched from the highest down (stopping at the first rate with no
    /// valid result); the first should be one where the start gains walk.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1500,1000,750,600,500,400,300,250,200"
    )]
    pub rates: Vec<f64>,
    /// The rate of the reference walk (the original gains), Hz.
    #[arg(long, default_value_t = 2000.0)]
    pub reference_rate_hz: f64,
    /// Generations of each of the two searches per rate (the paper: 15 + 15), 1..=1000.
    #[arg(long, default_value_t = 15)]
    pub generations: usize,
    /// Evaluations per generation, 2..=1000.
    #[arg(long, default_value_t = 8)]
    pub population: usize,
    /// Seeds CMA-ES.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Length of every evaluation's walk, s, in (0, 600] (10 s finds gains that fall in a
    /// longer walk; 30 s is the measured setting).
    #[arg(long, default_value_t = 30.0)]
    pub duration_s: f64,
    /// Evaluations at once (default: the available cores), 1..=1024.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Output folder.
    #[arg(long, default_value = "out/study_walk3d")]
    pub out: PathBuf,
    /// The controller the searches walk (`simbicon3d`, or `simbicon3d_stabilised`, `_m3`,
    /// `_m0` to search with the ground-contact stabiliser in the loop, or
    /// `simbicon3d_stable_pd` and its stabilised variants through stable PD); the reference
    /// walk is always `simbicon3d` on the original gains.
    #[arg(long, default_value = "simbicon3d")]
    pub controller: String,
    /// The relative distance from the reference speed beyond which a walk is invalid (the
    /// paper's 5 %: 0.05), in [0, 10].
    #[arg(long, default_value_t = SPEED_TOLERANCE)]
    pub speed_tolerance: f64,
    /// The first rate's start gains, as `--gains` of `walk3d-cell` (default: Cartwheel's, the
    /// original gains); give a lower rate's S_min to start the step-down there.
    #[arg(long)]
    pub start_gains: Option<String>,
}

/// The reference an objective compares with.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Reference {
    /// The original gains.
    pub gains: GroupGains,
    /// Their walk at the reference rate.
    pub outcome: CellOutcome,
}

/// The parts of an objective.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Objective {
    /// The sum (the max search's uses −gains).
    pub total: f64,
    /// Mean S_i / S0_i.
    pub gains: f64,
    /// Head term.
    pub head: f64,
    /// Hands term.
    pub hands: f64,
    /// Speed term.
    pub speed: f64,
    /// Fall term.
    pub balance: f64,
    /// Walked the whole evaluation within the speed tolerance.
    pub valid: bool,
}

/// The paper's eq. 4 (module docs) for `gains` whose walk of `duration_s` gave `outcome`; a
/// walk further off the reference speed than `speed_tolerance` (relative; the paper's is
/// [`SPEED_TOLERANCE`], 5 %) takes [`SPEED_PENALTY`] and is invalid.
pub fn objective(
    gains: &GroupGains,
    reference: &Reference,
    outcome: Option<&CellOutcome>,
    duration_s: f64,
    maximise: bool,
    speed_tolerance: f64,
) -> Objective {
    let mut g = 0.0;
    for (s, s0) in gains.iter().zip(&reference.gains) {
        g += s[0] / s0[0] + if s0[1] > 0.0 { s[1] / s0[1] } else { 0.0 };
    }
    let g = g / (2 * GROUPS.len()) as f64;
    let sign = if maximise { -1.0 } else { 1.0 };
    let Some(o) = outcome else {
        return Objective {
            total: sign * g + FAILED_PENALTY,
            gains: g,
            head: 0.0,
            hands: 0.0,
            speed: 0.0,
            balance: FAILED_PENALTY,
            valid: false,
        };
    };
    let r = &reference.outcome;
    let head = (o.head_height_m - r.head_height_m).abs() / HEAD_UNIT_M;
    let hands = o
        .hands_m
        .iter()
        .zip(&r.hands_m)
        .map(|(a, b)| (Vector3::from(*a) - Vector3::from(*b)).norm())
        .sum::<f64>()
        / 2.0
        / HANDS_UNIT_M;
    let off = (o.mean_speed_m_s - r.mean_speed_m_s).abs() / r.mean_speed_m_s.abs().max(1e-9);
    let speed = if off > speed_tolerance {
        SPEED_PENALTY
    } else {
        0.0
    };
    let balance = match o.fell_at_s {
        Some(t) if o.fell => FALL_PENALTY + FALL_PENALTY * (1.0 - (t / duration_s).clamp(0.0, 1.0)),
        _ if o.fell => 2.0 * FALL_PENALTY,
        _ => 0.0,
    };
    let total = sign * g + head + hands + speed + balance;
    Objective {
        total: if total.is_nan() { f64::MAX } else { total },
        gains: g,
        head,
        hands,
        speed,
        balance,
        valid: !o.fell && speed == 0.0,
    }
}

/// The search point of `gains`: ln kp, ln kd per group (kd floored at 1e-6).
pub fn to_point(gains: &GroupGains) -> Vec<f64> {
    gains
        .iter()
        .flat_map(|[kp, kd]| [kp.ln(), kd.max(1e-6).ln()])
        .collect()
}

/// The gains of a search point.
pub fn from_point(x: &[f64]) -> GroupGains {
    let mut g = [[0.0; 2]; 9];
    for (k, pair) in g.iter_mut().enumerate() {
        *pair = [
            x.get(2 * k).copied().unwrap_or(0.0).exp(),
            x.get(2 * k + 1).copied().unwrap_or(0.0).exp(),
        ];
    }
    g
}

/// One evaluation, as walk3d_cmaes.jsonl streams it.
#[derive(Debug, Clone, Serialize)]
pub struct Evaluation {
    /// Rate, Hz.
    pub rate_hz: f64,
    /// `"min"` or `"max"`.
    pub search: &'static str,
    /// 0: the search's start; 1..: CMA-ES's generation.
    pub generation: usize,
    /// The gains.
    pub gains: GroupGains,
    /// Their objective.
    pub objective: Objective,
    /// The walk (`None`: the cell failed; its stderr is in `error`).
    pub outcome: Option<CellOutcome>,
    /// Why the cell failed.
    pub error: Option<String>,
}

/// One rate's result.
#[derive(Debug, Clone, Serialize)]
pub struct RateResult {
    /// Rate, Hz.
    pub rate_hz: f64,
    /// The start gains (the previous rate's S_min; the original gains at the first rate).
    pub start: GroupGains,
    /// The start's walk at this rate.
    pub start_outcome: Option<CellOutcome>,
    /// The smallest valid gains found (the best of the min search).
    pub s_min: GroupGains,
    /// Their objective.
    pub s_min_objective: Objective,
    /// The largest valid gains found (the best of the max search from S_min).
    pub s_max: GroupGains,
    /// Their objective.
    pub s_max_objective: Objective,
    /// Whether S_min is valid (the search goes on to the next rate only then).
    pub valid: bool,
    /// Evaluations.
    pub evaluations: usize,
    /// Wall time, s.
    pub wall_s: f64,
}

/// Runs `hil study walk3d-cell` as a process; the outcome or why not.
fn run_cell_process(
    exe: &Path,
    scenario: &Path,
    law: WalkLaw,
    rate: f64,
    duration: f64,
    gains: &GroupGains,
) -> Result<CellOutcome, String> {
    let out = Command::new(exe)
        .args(["study", "walk3d-cell", "--scenario"])
        .arg(scenario)
        .args([
            "--controller",
            law.name(),
            "--rate-hz",
            &rate.to_string(),
            "--duration-s",
            &duration.to_string(),
            "--gains",
            &serde_json::to_string(gains).map_err(|e| e.to_string())?,
        ])
        .output()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    if !out.status.success() {
        return Err(format!(
            "exit {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line: CellLine = serde_json::from_str(text.trim())
        .map_err(|e| format!("not a cell line ({e}): {}", text.trim()))?;
    Ok(line.outcome)
}

/// The best evaluation of `search`: the lowest objective, then the earliest generation.
fn best<'a>(evals: &'a [Evaluation], search: &str) -> Option<&'a Evaluation> {
    evals.iter().filter(|e| e.search == search).min_by(|a, b| {
        a.objective
            .total
            .total_cmp(&b.objective.total)
            .then(a.generation.cmp(&b.generation))
    })
}

#[derive(Serialize)]
struct CmaesJson<'a> {
    what: &'static str,
    controller: &'static str,
    speed_tolerance: f64,
    groups: [&'static str; 9],
    reference_rate_hz: f64,
    reference: Reference,
    generations: usize,
    population: usize,
    duration_s: f64,
    seed: u64,
    rates: &'a [RateResult],
    wall_s: f64,
}

/// `hil study walk3d-cmaes`.
pub fn cmaes_main(args: &CmaesArgs) -> ExitCode {
    let started = Instant::now();
    let fail = |code: u8, e: String| {
        eprintln!("hil: study walk3d-cmaes: {e}");
        ExitCode::from(code)
    };
    if args.rates.is_empty() {
        return fail(2, "--rates: give at least one rate".into());
    }
    for &r in args.rates.iter().chain([&args.reference_rate_hz]) {
        if let Err(e) = check_rate(r) {
            return fail(2, format!("--rates: {e}"));
        }
    }
    if let Err(e) = check_duration(args.duration_s) {
        return fail(2, format!("--duration-s: {e}"));
    }
    let law = match study_law(&args.controller) {
        Ok(l) => l,
        Err(e) => return fail(2, format!("--controller: {e}")),
    };
    if !(0.0..=10.0).contains(&args.speed_tolerance) {
        return fail(
            2,
            format!(
                "--speed-tolerance: {}: must be in [0, 10]",
                args.speed_tolerance
            ),
        );
    }
    let first_start = match args.start_gains.as_deref().map(parse_gains).transpose() {
        Ok(g) => g.unwrap_or(CARTWHEEL_GAINS),
        Err(e) => return fail(2, e.replacen("--gains", "--start-gains", 1)),
    };
    if !(1..=1000).contains(&args.generations) || !(2..=1000).contains(&args.population) {
        return fail(
            2,
            "--generations must be in 1..=1000 and --population in 2..=1000".into(),
        );
    }
    let jobs = match resolve_jobs(args.jobs) {
        Ok(j) => j,
        Err(e) => return fail(2, e),
    };
    if let Err((code, e)) = prepare_out(&args.out) {
        return fail(code, e);
    }
    let mut rates = args.rates.clone();
    rates.sort_by(|a, b| b.total_cmp(a));
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return fail(1, format!("cannot find this executable: {e}")),
    };
    let total = 1 + rates.len() * (2 + 2 * args.generations * args.population);
    let (sink, pool) = match LineSink::create(&args.out.join("walk3d_cmaes.jsonl"), total)
        .and_then(|s| Ok((s, pool(jobs)?)))
    {
        Ok(x) => x,
        Err(e) => return fail(1, e),
    };
    let duration = args.duration_s;
    let reference = match run_cell_process(
        &exe,
        &args.scenario,
        WalkLaw::Simbicon3d,
        args.reference_rate_hz,
        duration,
        &CARTWHEEL_GAINS,
    ) {
        Ok(o) if !o.fell && o.mean_speed_m_s > 0.1 => Reference {
            gains: CARTWHEEL_GAINS,
            outcome: o,
        },
        Ok(o) => {
            return fail(
                1,
                format!(
                    "the original gains do not walk at the reference rate {} Hz: {o:?}",
                    args.reference_rate_hz
                ),
            );
        }
        Err(e) => return fail(2, format!("the reference walk: {e}")),
    };
    eprintln!(
        "study walk3d-cmaes: reference at {} Hz: {:.3} m/s, head {:.3} m; rates {rates:?}",
        args.reference_rate_hz, reference.outcome.mean_speed_m_s, reference.outcome.head_height_m
    );
    let mut results: Vec<RateResult> = Vec::new();
    let mut start = first_start;
    for (index, &rate) in rates.iter().enumerate() {
        let r = search_rate(
            args, law, &exe, &sink, &pool, &reference, index, rate, start,
        );
        let valid = r.valid;
        start = r.s_min;
        results.push(r);
        if !valid {
            eprintln!("study walk3d-cmaes: no valid gains at {rate} Hz: stopping");
            break;
        }
    }
    let wall_s = started.elapsed().as_secs_f64();
    let json = CmaesJson {
        what: "Carensac et al. 2017 Algorithm 1 on the 3D humanoid walker (hil study \
               walk3d-cmaes): per rate, stepping down, CMA-ES over ln kp, ln kd of nine joint \
               groups, first minimising the normalised gains (S_min), then maximising them \
               from S_min (S_max), under head, hands, speed and balance terms",
        controller: law.name(),
        speed_tolerance: args.speed_tolerance,
        groups: GROUPS,
        reference_rate_hz: args.reference_rate_hz,
        reference,
        generations: args.generations,
        population: args.population,
        duration_s: duration,
        seed: args.seed,
        rates: &results,
        wall_s,
    };
    // S_min of every valid rate, as a walk3d scenario's `tuned_gains`.
    let mut toml = String::from(
        "# S_min per rate from hil study walk3d-cmaes (paste into a walk3d scenario; groups: \
         root, waist, neck, hip, knee, ankle, toe, shoulder, elbow; [kp, kd] each)\n",
    );
    for r in results.iter().filter(|r| r.valid) {
        let pairs: Vec<String> = r
            .s_min
            .iter()
            .map(|[kp, kd]| format!("[{kp:?}, {kd:?}]"))
            .collect();
        toml.push_str(&format!(
            "\n[[tuned_gains]]\nrate_hz = {:.1}\ngains = [{}]\n",
            r.rate_hz,
            pairs.join(", ")
        ));
    }
    let tuned = args.out.join("tuned_gains.toml");
    if let Err(e) = std::fs::write(&tuned, toml) {
        return fail(1, format!("cannot write {}: {e}", tuned.display()));
    }
    let path = args.out.join("walk3d_cmaes.json");
    let written = serde_json::to_string_pretty(&json)
        .map_err(|e| e.to_string())
        .and_then(|t| std::fs::write(&path, t + "\n").map_err(|e| e.to_string()));
    print!("{}", table(&results));
    eprintln!(
        "study walk3d-cmaes: {} rates in {wall_s:.1} s wall ({jobs} jobs); wrote {}",
        results.len(),
        args.out.display()
    );
    if let Err(e) = written {
        return fail(1, format!("cannot write {}: {e}", path.display()));
    }
    if let Some(e) = sink.error() {
        return fail(1, format!("walk3d_cmaes.jsonl: {e}"));
    }
    ExitCode::SUCCESS
}

/// The printed table: per rate, S_min and S_max per group (kp/kd).
pub fn table(results: &[RateResult]) -> String {
    let mut out = String::from("\n| rate Hz | search | valid | ");
    out.push_str(&GROUPS.join(" | "));
    out.push_str(" |\n|---|---|---|");
    out.push_str(&"---|".repeat(GROUPS.len()));
    out.push('\n');
    for r in results {
        for (name, g, o) in [
            ("S_min", &r.s_min, &r.s_min_objective),
            ("S_max", &r.s_max, &r.s_max_objective),
        ] {
            let cells: Vec<String> = g
                .iter()
                .map(|p| format!("{:.1}/{:.2}", p[0], p[1]))
                .collect();
            out.push_str(&format!(
                "| {} | {name} | {} | {} |\n",
                r.rate_hz,
                o.valid,
                cells.join(" | ")
            ));
        }
    }
    out
}

/// One rate: the min search from `start`, then the max search from its best.
#[allow(clippy::too_many_arguments)]
fn search_rate(
    args: &CmaesArgs,
    law: WalkLaw,
    exe: &Path,
    sink: &LineSink,
    pool: &rayon::ThreadPool,
    reference: &Reference,
    index: usize,
    rate: f64,
    start: GroupGains,
) -> RateResult {
    let started = Instant::now();
    let duration = args.duration_s;
    let evals: Mutex<Vec<Evaluation>> = Mutex::new(Vec::new());
    let generation = AtomicUsize::new(0);
    let evaluate = |gains: GroupGains, search: &'static str| -> f64 {
        let r = run_cell_process(exe, &args.scenario, law, rate, duration, &gains);
        let (outcome, error) = match r {
            Ok(o) => (Some(o), None),
            Err(e) => (None, Some(e)),
        };
        let objective = objective(
            &gains,
            reference,
            outcome.as_ref(),
            duration,
            search == "max",
            args.speed_tolerance,
        );
        let e = Evaluation {
            rate_hz: rate,
            search,
            generation: generation.load(Ordering::Relaxed),
            gains,
            objective,
            outcome,
            error,
        };
        sink.push(&serde_json::to_string(&e).unwrap_or_default());
        match evals.lock() {
            Ok(mut v) => v.push(e),
            Err(p) => p.into_inner().push(e),
        }
        objective.total
    };
    let mut searched_from = start;
    for (k, search) in ["min", "max"].into_iter().enumerate() {
        generation.store(0, Ordering::Relaxed);
        evaluate(searched_from, search);
        let seed = args
            .seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add((2 * index + k) as u64);
        let f = |x: &DVector<f64>| evaluate(from_point(x.as_slice()), search);
        match CMAESOptions::new(to_point(&searched_from), SIGMA0)
            .population_size(args.population)
            .max_generations(args.generations)
            .seed(seed)
            .build(f)
        {
            Ok(mut cm) => {
                for g in 1..=args.generations {
                    generation.store(g, Ordering::Relaxed);
                    let term = pool.install(|| cm.next_parallel());
                    eprintln!(
                        "study walk3d-cmaes {rate} Hz {search}: generation {g}/{}, σ {:.4}",
                        args.generations,
                        cm.sigma()
                    );
                    if term.is_some() {
                        break;
                    }
                }
            }
            Err(e) => {
                eprintln!("study walk3d-cmaes {rate} Hz {search}: CMA-ES cannot start: {e:?}")
            }
        }
        let v = match evals.lock() {
            Ok(v) => v,
            Err(p) => p.into_inner(),
        };
        if let Some(b) = best(&v, search) {
            searched_from = b.gains;
        }
    }
    let evals = evals.into_inner().unwrap_or_else(|p| p.into_inner());
    let pick = |search: &str| {
        best(&evals, search).map_or(
            (
                start,
                objective(
                    &start,
                    reference,
                    None,
                    duration,
                    search == "max",
                    args.speed_tolerance,
                ),
            ),
            |e| (e.gains, e.objective),
        )
    };
    let (s_min, s_min_objective) = pick("min");
    let (s_max, s_max_objective) = pick("max");
    RateResult {
        rate_hz: rate,
        start,
        start_outcome: evals.first().and_then(|e| e.outcome),
        s_min,
        s_min_objective,
        s_max,
        s_max_objective,
        valid: s_min_objective.valid,
        evaluations: evals.len(),
        wall_s: started.elapsed().as_secs_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walked(v: f64) -> CellOutcome {
        CellOutcome {
            fell: false,
            fell_at_s: None,
            steps: 17,
            mean_speed_m_s: v,
            head_height_m: 1.6,
            hands_m: [[0.0, 0.4, -0.4], [0.0, 0.4, 0.4]],
            limited_joint_ticks: 0,
            wall_s: 0.1,
        }
    }

    #[test]
    fn the_objective_is_the_papers_eq_4() {
        let r = Reference {
            gains: CARTWHEEL_GAINS,
            outcome: walked(1.0),
        };
        let o = objective(
            &CARTWHEEL_GAINS,
            &r,
            Some(&walked(1.0)),
            10.0,
            false,
            SPEED_TOLERANCE,
        );
        assert_eq!((o.total, o.gains, o.valid), (1.0, 1.0, true));
        // Half the gains: half the gain term; the max search sees its negative.
        let half = CARTWHEEL_GAINS.map(|[kp, kd]| [kp / 2.0, kd / 2.0]);
        assert!(
            (objective(&half, &r, Some(&walked(1.0)), 10.0, false, SPEED_TOLERANCE).total - 0.5)
                .abs()
                < 1e-12
        );
        assert!(
            (objective(&half, &r, Some(&walked(1.0)), 10.0, true, SPEED_TOLERANCE).total + 0.5)
                .abs()
                < 1e-12
        );
        // 4 % slow is free, 6 % is discarded.
        assert_eq!(
            objective(&half, &r, Some(&walked(0.96)), 10.0, false, SPEED_TOLERANCE).speed,
            0.0
        );
        let slow = objective(&half, &r, Some(&walked(0.94)), 10.0, false, SPEED_TOLERANCE);
        // A wider tolerance takes the slower walk.
        let wide = objective(&half, &r, Some(&walked(0.5)), 10.0, false, 0.6);
        assert!(wide.valid && wide.speed == 0.0, "{wide:?}");
        assert!(!objective(&half, &r, Some(&walked(0.3)), 10.0, false, 0.6).valid);
        assert_eq!((slow.speed, slow.valid), (SPEED_PENALTY, false));
        // 2 cm lower head: 2; hands 5 cm off on one side: 0.5.
        let mut o = walked(1.0);
        o.head_height_m -= 0.02;
        o.hands_m[0][0] += 0.05;
        let t = objective(&CARTWHEEL_GAINS, &r, Some(&o), 10.0, false, SPEED_TOLERANCE);
        assert!(
            (t.head - 2.0).abs() < 1e-9 && (t.hands - 0.5).abs() < 1e-9,
            "{t:?}"
        );
        // A fall at the start costs 200, at the end 100; a failed cell more than any fall.
        let fell = |at: f64| CellOutcome {
            fell: true,
            fell_at_s: Some(at),
            ..walked(1.0)
        };
        assert_eq!(
            objective(&half, &r, Some(&fell(0.0)), 10.0, false, SPEED_TOLERANCE).balance,
            200.0
        );
        assert_eq!(
            objective(&half, &r, Some(&fell(10.0)), 10.0, false, SPEED_TOLERANCE).balance,
            100.0
        );
        assert!(objective(&half, &r, None, 10.0, false, SPEED_TOLERANCE).total > 500.0);
    }

    #[test]
    fn points_and_gains_convert_both_ways_and_bad_gains_are_refused() {
        let x = to_point(&CARTWHEEL_GAINS);
        assert_eq!(x.len(), 18);
        let back = from_point(&x);
        for (a, b) in back.iter().zip(&CARTWHEEL_GAINS) {
            assert!((a[0] - b[0]).abs() < 1e-9 && (a[1] - b[1]).abs() < 1e-9);
        }
        let text = serde_json::to_string(&CARTWHEEL_GAINS).unwrap();
        assert_eq!(parse_gains(&text), Ok(CARTWHEEL_GAINS));
        assert!(
            parse_gains("[[1, 2]]")
                .unwrap_err()
                .contains("9 [kp, kd] pairs")
        );
        let mut bad = CARTWHEEL_GAINS;
        bad[4][0] = -1.0;
        let e = parse_gains(&serde_json::to_string(&bad).unwrap()).unwrap_err();
        assert!(e.contains("knee"), "{e}");
    }
}
