//! `hil study cmaes`: Carensac et al. (2017)'s Algorithm 1 on this walker. For each control
//! rate, stepping down, CMA-ES (crate `cmaes`) searches the 12 per-role gains (the log of kp
//! and kd for each of the six roles) starting from the previous rate's result (the first rate:
//! SIMBICON's 300/30 everywhere), σ0 = 0.15 in log space, minimising [`objective`]. Every
//! evaluation is a separate `hil study cell --gains ...` process (a generation in parallel on a
//! pool of `--jobs`), streamed to cmaes.jsonl as it finishes.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use cmaes::{CMAESOptions, DVector};
use control_core::simbicon::Gains;
use serde::Serialize;

use super::cell::{
    CellOutcome, CellSpec, Controller, DESIGN_KD, DESIGN_KP, Pd, ROLE_NAMES, Roles, SplitMix64,
    check_duration, check_rate, from_role_gains,
};
use super::plot::{GainsBar, gains_by_rate};
use super::spawn::{Record, current_exe, run_cell_process};
use super::sweep::LineSink;
use super::{pool, prepare_out, resolve_jobs};

/// CMA-ES's initial step, in log-gain space (Carensac et al.: 0.15).
pub const SIGMA0: f64 = 0.15;
/// A rate's search stops when σ falls below this (log space: gains moving by < 0.1 %).
pub const SIGMA_COLLAPSED: f64 = 1e-3;
/// Objective added for a fall (and as much again scaled by how early it fell).
pub const FALL_PENALTY: f64 = 10.0;
/// Weight of the speed error beyond the tolerance.
pub const SPEED_WEIGHT: f64 = 10.0;
/// Relative speed error tolerated without cost (Carensac et al. discard runs > 5 % off).
pub const SPEED_TOLERANCE: f64 = 0.05;
/// The reference speed when the start gains fall at a rate, m/s.
pub const FALLBACK_SPEED_M_S: f64 = 1.0;
/// Objective added when an evaluation gave no outcome (the cell failed).
pub const FAILED_PENALTY: f64 = 100.0;

/// Arguments of `hil study cmaes`.
#[derive(Debug, Clone, clap::Args)]
pub struct CmaesArgs {
    /// Control rates, Hz, each in [50, 20000]; searched from the highest down.
    #[arg(long, value_delimiter = ',', default_value = "750,500,300,250,200")]
    pub rates: Vec<f64>,
    /// Generations per rate at most, 1..=10000.
    #[arg(long, default_value_t = 8)]
    pub generations: usize,
    /// Evaluations per generation, 2..=1000.
    #[arg(long, default_value_t = 8)]
    pub population: usize,
    /// Seeds CMA-ES (each rate's search from it): the same seed reproduces the search.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Length of every evaluation's walk, s, in (0, 600].
    #[arg(long, default_value_t = 20.0)]
    pub duration_s: f64,
    /// Evaluations run at once (default: the available cores), 1..=1024.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Output folder: cmaes.jsonl, cmaes.json, gains_by_rate.svg.
    #[arg(long, default_value = "out/study")]
    pub out: PathBuf,
}

impl CmaesArgs {
    /// The rates, highest first, or what is wrong with the arguments.
    pub fn checked_rates(&self) -> Result<Vec<f64>, String> {
        if self.rates.is_empty() {
            return Err("--rates: give at least one rate".into());
        }
        for &r in &self.rates {
            check_rate(r).map_err(|e| format!("--rates: {e}"))?;
        }
        let mut rates = self.rates.clone();
        rates.sort_by(|a, b| b.total_cmp(a));
        if rates.windows(2).any(|w| w[0] == w[1]) {
            return Err("--rates: a rate is given twice".into());
        }
        if !(1..=10_000).contains(&self.generations) {
            return Err(format!(
                "--generations {}: must be in 1..=10000",
                self.generations
            ));
        }
        if !(2..=1000).contains(&self.population) {
            return Err(format!(
                "--population {}: must be in 2..=1000",
                self.population
            ));
        }
        check_duration(self.duration_s).map_err(|e| format!("--duration-s: {e}"))?;
        Ok(rates)
    }
}

/// The parts of an evaluation's objective.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Objective {
    /// The sum.
    pub total: f64,
    /// Σ over the roles of (kp/kp0 + kd/kd0) / 12, the start gains kp0, kd0.
    pub gains: f64,
    /// 10 if it fell, + 10·(1 − fell_at/duration); 0 if not.
    pub fall: f64,
    /// 10 · max(0, |v − v_ref|/v_ref − 0.05).
    pub speed: f64,
}

/// The objective of `gains` (relative to this rate's start gains `start`) whose walk of
/// `duration_s` ended in `outcome` (`None`: the cell failed), for reference speed `v_ref`:
/// the normalised gains, a fall penalty growing the earlier the fall, and the speed error
/// beyond 5 %.
pub fn objective(
    gains: &Roles<Pd>,
    start: &Roles<Pd>,
    outcome: Option<&CellOutcome>,
    duration_s: f64,
    v_ref: f64,
) -> Objective {
    let g: f64 = gains
        .to_array()
        .iter()
        .zip(start.to_array())
        .map(|(p, p0)| p.kp / p0.kp + p.kd / p0.kd)
        .sum::<f64>()
        / 12.0;
    let Some(o) = outcome else {
        return Objective {
            total: g + FAILED_PENALTY,
            gains: g,
            fall: FAILED_PENALTY,
            speed: 0.0,
        };
    };
    let fall = match (o.fell, o.fell_at_s) {
        (false, _) => 0.0,
        (true, at) => {
            let at = at.unwrap_or(0.0).clamp(0.0, duration_s);
            FALL_PENALTY + FALL_PENALTY * (1.0 - at / duration_s)
        }
    };
    let rel = (o.mean_speed_mps - v_ref).abs() / v_ref;
    let speed = SPEED_WEIGHT * (rel - SPEED_TOLERANCE).max(0.0);
    let total = g + fall + speed;
    Objective {
        total: if total.is_nan() { f64::MAX } else { total },
        gains: g,
        fall,
        speed,
    }
}

/// The search point of `gains`: (ln kp, ln kd) per role, in role order (kd floored at 1e-9 so
/// the log is finite).
pub fn to_point(gains: &Roles<Pd>) -> Vec<f64> {
    gains
        .to_array()
        .iter()
        .flat_map(|p| [p.kp.ln(), p.kd.max(1e-9).ln()])
        .collect()
}

/// The gains of search point `x` (the inverse of [`to_point`]).
pub fn from_point(x: &[f64]) -> Roles<Pd> {
    let pd = |k: usize| Pd {
        kp: x.get(2 * k).copied().unwrap_or(0.0).exp(),
        kd: x.get(2 * k + 1).copied().unwrap_or(0.0).exp(),
    };
    Roles::from_array([pd(0), pd(1), pd(2), pd(3), pd(4), pd(5)])
}

/// SIMBICON's gains on every role.
pub fn simbicon_gains() -> Roles<Pd> {
    Roles::all(Pd {
        kp: DESIGN_KP,
        kd: DESIGN_KD,
    })
}

/// The analytic gains at `rate_hz` (`Gains::analytic(1/R)` resolved).
pub fn analytic_gains(rate_hz: f64) -> Option<Roles<Pd>> {
    let g = Gains::analytic(1.0 / rate_hz).resolve().ok()?;
    Some(from_role_gains(&g).pairs())
}

/// One evaluation, as cmaes.jsonl streams it.
#[derive(Debug, Clone, Serialize)]
pub struct Evaluation {
    /// Control rate, Hz.
    pub rate_hz: f64,
    /// 0: the rate's start gains; 1..: CMA-ES's generation.
    pub generation: usize,
    /// The order evaluations finished in (within the rate; not reproducible in parallel).
    pub finished: usize,
    /// The gains evaluated.
    pub gains: Roles<Pd>,
    /// Its objective.
    pub objective: Objective,
    /// The cell's line or failed-cell record.
    pub cell: serde_json::Value,
    #[serde(skip)]
    outcome: Option<CellOutcome>,
}

/// A walk's summary in cmaes.json.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Walk {
    /// Whether it fell.
    pub fell: bool,
    /// When, s.
    pub fell_at_s: Option<f64>,
    /// Distance, m.
    pub distance_m: f64,
    /// Mean speed, m/s.
    pub mean_speed_mps: f64,
}

impl Walk {
    fn of(o: &CellOutcome) -> Self {
        Self {
            fell: o.fell,
            fell_at_s: o.fell_at_s,
            distance_m: o.distance_m,
            mean_speed_mps: o.mean_speed_mps,
        }
    }
}

/// One rate's search in cmaes.json.
#[derive(Debug, Clone, Serialize)]
pub struct RateResult {
    /// Control rate, Hz.
    pub rate_hz: f64,
    /// CMA-ES's seed at this rate (from `--seed` and the rate's place).
    pub cmaes_seed: u64,
    /// The start gains (the previous rate's result; SIMBICON's at the first rate).
    pub start_gains: Roles<Pd>,
    /// The start gains' walk at this rate (`None`: the cell failed).
    pub start_walk: Option<Walk>,
    /// The reference speed, m/s.
    pub v_ref: f64,
    /// The best gains found (the start gains if nothing beat them).
    pub best_gains: Roles<Pd>,
    /// Their objective.
    pub best_objective: Objective,
    /// Their walk.
    pub best_walk: Option<Walk>,
    /// Whether the best is the start.
    pub best_is_start: bool,
    /// Evaluations used, the start's included.
    pub evaluations: usize,
    /// Of which failed (no line; penalised and recorded).
    pub failed_evaluations: usize,
    /// Generations run.
    pub generations: usize,
    /// Why the search stopped.
    pub stopped: Vec<String>,
    /// σ at the end.
    pub sigma_final: f64,
    /// Σ(kp + 10·kd) of the best, of the analytic gains and of SIMBICON's at this rate.
    pub kp_plus_10_kd: Sums,
    /// The analytic gains' walk at this rate (S = 1), for comparison.
    pub analytic_walk: Option<Walk>,
    /// SIMBICON's fixed gains' walk at this rate, for comparison.
    pub simbicon_walk: Option<Walk>,
    /// Wall time of this rate's search, s.
    pub wall_s: f64,
}

/// Σ(kp + 10·kd) of three gain sets.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Sums {
    /// The CMA-ES result.
    pub cmaes: f64,
    /// `Gains::analytic(1/R)`.
    pub analytic: f64,
    /// SIMBICON's 300/30.
    pub simbicon: f64,
}

#[derive(Serialize)]
struct CmaesJson<'a> {
    what: &'static str,
    seed: u64,
    generations: usize,
    population: usize,
    duration_s: f64,
    sigma0: f64,
    rates: &'a [RateResult],
    wall_s: f64,
}

fn spec(rate_hz: f64, duration_s: f64, gains: Option<Roles<Pd>>, c: Controller) -> CellSpec {
    CellSpec {
        controller: c,
        rate_hz,
        damping_scale: 1.0,
        gains,
        duration_s,
        push: None,
        seed: 0,
    }
}

fn outcome_of(r: &Record) -> Option<CellOutcome> {
    match r {
        Record::Done(l) => Some(l.outcome()),
        Record::Failed(_) => None,
    }
}

/// The best evaluation: lowest objective, then earliest generation, then the gains in role
/// order (so the choice does not depend on the order evaluations finished in).
pub fn best(evals: &[Evaluation]) -> Option<&Evaluation> {
    evals.iter().min_by(|a, b| {
        a.objective
            .total
            .total_cmp(&b.objective.total)
            .then(a.generation.cmp(&b.generation))
            .then_with(|| {
                let (x, y) = (to_point(&a.gains), to_point(&b.gains));
                x.iter()
                    .zip(&y)
                    .map(|(p, q)| p.total_cmp(q))
                    .find(|o| o.is_ne())
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
    })
}

/// `hil study cmaes`.
pub fn main(args: &CmaesArgs) -> ExitCode {
    let started = Instant::now();
    let rates = match args.checked_rates() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("hil: study cmaes: {e}");
            return ExitCode::from(2);
        }
    };
    let jobs = match resolve_jobs(args.jobs) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("hil: study cmaes: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err((code, e)) = prepare_out(&args.out) {
        eprintln!("hil: study cmaes: {e}");
        return ExitCode::from(code);
    }
    let total = rates.len() * (1 + args.generations * args.population);
    let setup = current_exe().and_then(|exe| {
        let sink = LineSink::create(&args.out.join("cmaes.jsonl"), total)?;
        Ok((exe, sink, pool(jobs)?))
    });
    let (exe, sink, pool) = match setup {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hil: study cmaes: {e}");
            return ExitCode::from(1);
        }
    };
    eprintln!(
        "study cmaes: rates {rates:?} Hz, up to {} generations of {} per rate, seed {}, {jobs} \
         at a time; streaming to {}",
        args.generations,
        args.population,
        args.seed,
        args.out.join("cmaes.jsonl").display()
    );
    let mut results: Vec<RateResult> = Vec::new();
    let mut start_gains = simbicon_gains();
    for (k, &rate) in rates.iter().enumerate() {
        match search_rate(args, &exe, &sink, &pool, k, rate, start_gains) {
            Ok(r) => {
                start_gains = r.best_gains;
                results.push(r);
            }
            Err(e) => {
                eprintln!("hil: study cmaes: {rate} Hz: {e}");
                return ExitCode::from(1);
            }
        }
    }
    let wall_s = started.elapsed().as_secs_f64();
    let mut failures = Vec::new();
    if let Some(e) = sink.error() {
        failures.push(format!("cmaes.jsonl: {e}"));
    }
    let failed: usize = results.iter().map(|r| r.failed_evaluations).sum();
    if failed > 0 {
        failures.push(format!(
            "{failed} evaluations failed (penalised by {FAILED_PENALTY} and recorded in \
             cmaes.jsonl with their stderr)"
        ));
    }
    let json = CmaesJson {
        what: "Carensac et al. 2017 Algorithm 1 on the SIMBICON biped (hil study cmaes): per \
               rate, stepping down, CMA-ES over ln kp, ln kd of the six roles from the previous \
               rate's best; objective = sum(kp/kp0 + kd/kd0)/12 + fall 10 + 10(1 - t_fall/T) + \
               speed 10 max(0, |v - v_ref|/v_ref - 0.05)",
        seed: args.seed,
        generations: args.generations,
        population: args.population,
        duration_s: args.duration_s,
        sigma0: SIGMA0,
        rates: &results,
        wall_s,
    };
    let path = args.out.join("cmaes.json");
    match serde_json::to_string_pretty(&json) {
        Ok(text) => {
            if let Err(e) = std::fs::write(&path, text + "\n") {
                failures.push(format!("cannot write {}: {e}", path.display()));
            }
        }
        Err(e) => failures.push(format!("cmaes.json: {e}")),
    }
    let fell = |w: &Option<Walk>| w.as_ref().map(|w| w.fell);
    let bars: Vec<GainsBar> = results
        .iter()
        .map(|r| GainsBar {
            rate_hz: r.rate_hz,
            cmaes: Some((r.kp_plus_10_kd.cmaes, fell(&r.best_walk))),
            analytic: (r.kp_plus_10_kd.analytic, fell(&r.analytic_walk)),
            simbicon: (r.kp_plus_10_kd.simbicon, fell(&r.simbicon_walk)),
        })
        .collect();
    let svg = args.out.join("gains_by_rate.svg");
    if let Err(e) = gains_by_rate(&svg, &bars) {
        failures.push(format!("cannot write {}: {e}", svg.display()));
    }
    print!("{}", table(&results));
    eprintln!(
        "study cmaes: {} rates in {wall_s:.1} s wall ({jobs} jobs); wrote {}",
        results.len(),
        args.out.display()
    );
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        for f in failures {
            eprintln!("hil: study cmaes: {f}");
        }
        ExitCode::from(1)
    }
}

fn walk_text(w: Option<&Walk>) -> String {
    match w {
        None => "failed".into(),
        Some(w) => match w.fell_at_s {
            Some(t) => format!("fell at {t:.2} s ({:.2} m)", w.distance_m),
            None if w.fell => format!("fell ({:.2} m)", w.distance_m),
            None => format!("{:.2} m, {:.3} m/s", w.distance_m, w.mean_speed_mps),
        },
    }
}

/// The printed comparison: per rate, Σ(kp + 10·kd) and the walk of the CMA-ES result, the
/// analytic gains and SIMBICON's; then the CMA-ES gains per role.
pub fn table(results: &[RateResult]) -> String {
    let mut out = String::from(
        "\n| rate Hz | Σ(kp+10kd) CMA-ES | analytic | SIMBICON | CMA-ES walk | analytic walk | \
         SIMBICON walk | v_ref m/s | objective | evals | wall s |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in results {
        out.push_str(&format!(
            "| {} | {:.0} | {:.0} | {:.0} | {} | {} | {} | {:.3} | {:.3} | {} | {:.1} |\n",
            r.rate_hz,
            r.kp_plus_10_kd.cmaes,
            r.kp_plus_10_kd.analytic,
            r.kp_plus_10_kd.simbicon,
            walk_text(r.best_walk.as_ref()),
            walk_text(r.analytic_walk.as_ref()),
            walk_text(r.simbicon_walk.as_ref()),
            r.v_ref,
            r.best_objective.total,
            r.evaluations,
            r.wall_s,
        ));
    }
    out.push_str("\nCMA-ES gains per role, kp/kd:\n\n| rate Hz | ");
    out.push_str(&ROLE_NAMES.join(" | "));
    out.push_str(" |\n|---|");
    out.push_str(&"---|".repeat(ROLE_NAMES.len()));
    out.push('\n');
    for r in results {
        let cells: Vec<String> = r
            .best_gains
            .to_array()
            .iter()
            .map(|p| format!("{:.1}/{:.2}", p.kp, p.kd))
            .collect();
        out.push_str(&format!("| {} | {} |\n", r.rate_hz, cells.join(" | ")));
    }
    out
}

/// One rate's search, from `start_gains`.
fn search_rate(
    args: &CmaesArgs,
    exe: &std::path::Path,
    sink: &LineSink,
    pool: &rayon::ThreadPool,
    index: usize,
    rate: f64,
    start_gains: Roles<Pd>,
) -> Result<RateResult, String> {
    let started = Instant::now();
    let duration = args.duration_s;
    // The start gains at this rate (the reference speed) and, for the table, the analytic
    // and SIMBICON's gains: three cells at once.
    let specs = [
        spec(rate, duration, Some(start_gains), Controller::Simbicon),
        spec(rate, duration, None, Controller::SimbiconAnalytic),
        spec(rate, duration, None, Controller::Simbicon),
    ];
    let first: Vec<Record> = pool.install(|| {
        use rayon::prelude::*;
        specs.par_iter().map(|s| run_cell_process(exe, s)).collect()
    });
    let [start_rec, analytic_rec, simbicon_rec] = first.as_slice() else {
        return Err("the reference cells did not all come back".into());
    };
    let start_outcome = outcome_of(start_rec);
    let v_ref = match start_outcome {
        Some(o) if !o.fell && o.mean_speed_mps > 0.1 => o.mean_speed_mps,
        _ => FALLBACK_SPEED_M_S,
    };
    let evals: Mutex<Vec<Evaluation>> = Mutex::new(Vec::new());
    let finished = AtomicUsize::new(0);
    let generation = AtomicUsize::new(0);
    let failed = AtomicUsize::new(0);
    let record = |gains: Roles<Pd>, rec: &Record| -> f64 {
        let outcome = outcome_of(rec);
        if outcome.is_none() {
            failed.fetch_add(1, Ordering::Relaxed);
        }
        let obj = objective(&gains, &start_gains, outcome.as_ref(), duration, v_ref);
        let e = Evaluation {
            rate_hz: rate,
            generation: generation.load(Ordering::Relaxed),
            finished: finished.fetch_add(1, Ordering::Relaxed),
            gains,
            objective: obj,
            cell: rec.to_value(),
            outcome,
        };
        sink.push(&serde_json::to_string(&e).unwrap_or_default());
        match evals.lock() {
            Ok(mut v) => v.push(e),
            Err(p) => p.into_inner().push(e),
        }
        obj.total
    };
    record(start_gains, start_rec);
    let cmaes_seed = SplitMix64::new(args.seed.wrapping_add(index as u64)).next_u64();
    let objective_fn = |x: &DVector<f64>| -> f64 {
        let gains = from_point(x.as_slice());
        let rec = run_cell_process(
            exe,
            &spec(rate, duration, Some(gains), Controller::Simbicon),
        );
        record(gains, &rec)
    };
    let mut cm = CMAESOptions::new(to_point(&start_gains), SIGMA0)
        .population_size(args.population)
        .max_generations(args.generations)
        .seed(cmaes_seed)
        .build(objective_fn)
        .map_err(|e| format!("CMA-ES cannot start: {e:?}"))?;
    let mut stopped = Vec::new();
    let mut generations = 0;
    for g in 1..=args.generations {
        generation.store(g, Ordering::Relaxed);
        let term = pool.install(|| cm.next_parallel());
        generations = g;
        let best_so_far = {
            let v = match evals.lock() {
                Ok(v) => v,
                Err(p) => p.into_inner(),
            };
            best(&v).map_or(f64::NAN, |e| e.objective.total)
        };
        eprintln!(
            "study cmaes {rate} Hz: generation {g}/{}: best objective {best_so_far:.4}, σ {:.4}",
            args.generations,
            cm.sigma()
        );
        if let Some(t) = term {
            stopped = t.reasons.iter().map(|r| format!("{r:?}")).collect();
            break;
        }
        if cm.sigma() < SIGMA_COLLAPSED {
            stopped.push(format!("sigma below {SIGMA_COLLAPSED}"));
            break;
        }
    }
    let sigma_final = cm.sigma();
    drop(cm);
    let evals = evals.into_inner().unwrap_or_else(|p| p.into_inner());
    let b = best(&evals).ok_or("no evaluation")?;
    let analytic = analytic_gains(rate).ok_or("the analytic gains cannot be resolved")?;
    Ok(RateResult {
        rate_hz: rate,
        cmaes_seed,
        start_gains,
        start_walk: start_outcome.as_ref().map(Walk::of),
        v_ref,
        best_gains: b.gains,
        best_objective: b.objective,
        best_walk: b.outcome.as_ref().map(Walk::of),
        best_is_start: b.generation == 0,
        evaluations: evals.len(),
        failed_evaluations: failed.load(Ordering::Relaxed),
        generations,
        stopped,
        sigma_final,
        kp_plus_10_kd: Sums {
            cmaes: b.gains.kp_plus_10_kd(),
            analytic: analytic.kp_plus_10_kd(),
            simbicon: simbicon_gains().kp_plus_10_kd(),
        },
        analytic_walk: outcome_of(analytic_rec).as_ref().map(Walk::of),
        simbicon_walk: outcome_of(simbicon_rec).as_ref().map(Walk::of),
        wall_s: started.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walked(v: f64) -> CellOutcome {
        CellOutcome {
            fell: false,
            fell_at_s: None,
            distance_m: 20.0 * v,
            mean_speed_mps: v,
            steps: 50,
            limited_torques: 0,
            refused_ticks: 0,
            wall_s: 0.2,
        }
    }

    #[test]
    fn the_objective_normalises_gains_and_penalises_falls_and_speed() {
        let s = simbicon_gains();
        let o = objective(&s, &s, Some(&walked(1.1)), 20.0, 1.1);
        assert_eq!((o.total, o.gains, o.fall, o.speed), (1.0, 1.0, 0.0, 0.0));
        let half = s.map(|p| Pd {
            kp: p.kp / 2.0,
            kd: p.kd / 2.0,
        });
        assert!((objective(&half, &s, Some(&walked(1.1)), 20.0, 1.1).total - 0.5).abs() < 1e-12);
        // Within 5 % of v_ref: free; 15 % off: 10·0.10.
        assert_eq!(objective(&s, &s, Some(&walked(1.04)), 20.0, 1.0).speed, 0.0);
        let o = objective(&s, &s, Some(&walked(0.85)), 20.0, 1.0);
        assert!((o.speed - 1.0).abs() < 1e-9, "{o:?}");
        // A fall at t = 0 costs 20, at the end 10, halfway 15 (plus its speed error).
        let fell = |at: f64| CellOutcome {
            fell: true,
            fell_at_s: Some(at),
            ..walked(1.0)
        };
        assert_eq!(objective(&s, &s, Some(&fell(0.0)), 20.0, 1.0).fall, 20.0);
        assert_eq!(objective(&s, &s, Some(&fell(20.0)), 20.0, 1.0).fall, 10.0);
        assert_eq!(objective(&s, &s, Some(&fell(10.0)), 20.0, 1.0).fall, 15.0);
        // A failed cell is worse than any fall.
        let failed = objective(&s, &s, None, 20.0, 1.0);
        assert!(failed.total > objective(&s, &s, Some(&fell(0.0)), 20.0, 1.0).total + 50.0);
    }

    #[test]
    fn points_and_gains_convert_both_ways() {
        let g = Roles {
            swing_ankle: Pd { kp: 4.29, kd: 3.59 },
            ..simbicon_gains()
        };
        let x = to_point(&g);
        assert_eq!(x.len(), 12);
        assert!((x[0] - 300f64.ln()).abs() < 1e-12 && (x[7] - 3.59f64.ln()).abs() < 1e-12);
        let back = from_point(&x);
        for (a, b) in back.to_array().iter().zip(g.to_array()) {
            assert!((a.kp - b.kp).abs() < 1e-9 && (a.kd - b.kd).abs() < 1e-9);
        }
        let a = analytic_gains(300.0).unwrap();
        assert!((a.swing_ankle.kp - 4.29).abs() < 0.01);
        assert_eq!(
            a.torso,
            Pd {
                kp: 300.0,
                kd: 30.0
            }
        );
        assert_eq!(simbicon_gains().kp_plus_10_kd(), 3600.0);
    }

    #[test]
    fn the_arguments_are_checked_and_the_rates_step_down() {
        let args = CmaesArgs {
            rates: vec![200.0, 750.0, 300.0],
            generations: 2,
            population: 4,
            seed: 1,
            duration_s: 2.0,
            jobs: None,
            out: "out".into(),
        };
        assert_eq!(args.checked_rates().unwrap(), vec![750.0, 300.0, 200.0]);
        for (bad, needle) in [
            (
                CmaesArgs {
                    rates: vec![10.0],
                    ..args.clone()
                },
                "--rates",
            ),
            (
                CmaesArgs {
                    rates: vec![300.0, 300.0],
                    ..args.clone()
                },
                "twice",
            ),
            (
                CmaesArgs {
                    generations: 0,
                    ..args.clone()
                },
                "--generations",
            ),
            (
                CmaesArgs {
                    population: 1,
                    ..args.clone()
                },
                "--population",
            ),
            (
                CmaesArgs {
                    duration_s: f64::NAN,
                    ..args.clone()
                },
                "--duration-s",
            ),
        ] {
            let e = bad.checked_rates().unwrap_err();
            assert!(e.contains(needle), "{e}");
        }
    }

    #[test]
    fn the_best_does_not_depend_on_the_finishing_order() {
        let s = simbicon_gains();
        let eval = |generation: usize, kp: f64, total: f64, finished: usize| Evaluation {
            rate_hz: 300.0,
            generation,
            finished,
            gains: Roles {
                torso: Pd { kp, kd: 30.0 },
                ..s
            },
            objective: Objective {
                total,
                gains: total,
                fall: 0.0,
                speed: 0.0,
            },
            cell: serde_json::Value::Null,
            outcome: None,
        };
        let a = vec![
            eval(1, 200.0, 0.9, 0),
            eval(1, 100.0, 0.9, 1),
            eval(0, 300.0, 1.0, 2),
        ];
        let b = vec![
            eval(1, 100.0, 0.9, 0),
            eval(0, 300.0, 1.0, 1),
            eval(1, 200.0, 0.9, 2),
        ];
        assert_eq!(best(&a).unwrap().gains.torso.kp, 100.0);
        assert_eq!(best(&b).unwrap().gains.torso.kp, 100.0);
    }
}
