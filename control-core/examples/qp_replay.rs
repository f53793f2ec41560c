//! Replays QPs recorded by `hil run --record-qp FILE` through [`control_core::qp`], in order,
//! each warm-started from the one before when their sizes agree (as the balance controller
//! does tick to tick), with the balance controller's default solver settings; prints the
//! iterations, how the solves ended, and how far the answers are from the recorded ones.
//!
//! ```sh
//! cargo run --release -p hil -- run scenarios/balance_push.toml --record-qp qp.jsonl --record-qp-every 1
//! cargo run --release -p control-core --example qp_replay -- qp.jsonl [COUNT]
//! ```
//!
//! Under `valgrind --tool=callgrind`, the inclusive count of `Solver::solve` divided by the
//! solves printed is the instructions a solve (the JSON parsing is counted apart).
//!
//! `QP_REPLAY_PASSES=K` (K ≥ 1) then replays the same solves K more times, each pass with a
//! fresh solver (so every pass repeats the first's warm starts exactly), and prints the median
//! over the passes of the wall time a solve: a comparison of two builds on the same recorded
//! problems, run side by side.
//!
//! `QP_REPLAY_NULL_SPACE=1` solves them with [`control_core::qp::Settings::range_space`] off
//! (the null-space setup) instead of the balance controller's range-space one, and
//! `QP_REPLAY_WARM_START_WEIGHT=λ` with [`control_core::qp::Settings::warm_start_weight`] `λ`
//! instead of the balance controller's (a weight the solver refuses is reported as the
//! solves' error).

use std::io::Write;
use std::process::ExitCode;

use control_core::balance::BalanceSettings;
use control_core::qp::{Cones, Problem, Solver, Status, WarmStart};
use serde_json::Value;

/// Enough for the humanoid's and Talos's QPs.
type Qp = Solver<128, 200>;

struct Recorded {
    n: usize,
    cones: Cones,
    p: Vec<f64>,
    q: Vec<f64>,
    a: Vec<f64>,
    b: Vec<f64>,
    x: Vec<f64>,
    objective: f64,
}

/// What tells consecutive ticks' QPs apart for a warm start: their sizes and cones.
type Key = (usize, usize, Cones);

impl Recorded {
    fn problem(&self) -> Problem<'_> {
        Problem {
            p: &self.p,
            q: &self.q,
            a: &self.a,
            b: &self.b,
            cones: self.cones,
        }
    }

    fn key(&self) -> Key {
        (self.n, self.b.len(), self.cones)
    }

    /// Warm from the last solve when it was solved and of the same shape, as the controller.
    fn warm(&self, last: Option<Key>) -> WarmStart<'static> {
        if last == Some(self.key()) {
            WarmStart::Previous
        } else {
            WarmStart::Cold
        }
    }
}

fn parse(line: &str) -> Result<Recorded, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let count = |v: &Value| v.as_u64().map(|u| u as usize).ok_or("not a count");
    let numbers = |v: &Value| -> Result<Vec<f64>, String> {
        v.as_array()
            .ok_or("not an array")?
            .iter()
            .map(|x| x.as_f64().ok_or_else(|| "not a number".to_owned()))
            .collect()
    };
    let n = count(&v["n"])?;
    let m = count(&v["m"])?;
    if n > 128 || m > 200 {
        return Err(format!(
            "{n} variables and {m} rows: more than this replay holds"
        ));
    }
    let c = &v["cones"];
    let cones = Cones {
        zero: count(&c[0])?,
        nonneg: count(&c[1])?,
        soc3: count(&c[2])?,
    };
    let fill = |key: &str, rows: usize, symmetric: bool| -> Result<Vec<f64>, String> {
        let mut out = vec![0.0; rows * n];
        for t in v[key].as_array().ok_or("not an array")? {
            let (i, j) = (count(&t[0])?, count(&t[1])?);
            let x = t[2].as_f64().ok_or("not a number")?;
            if i >= rows || j >= n {
                return Err(format!("{key}: entry ({i}, {j}) outside {rows} × {n}"));
            }
            out[i * n + j] = x;
            if symmetric {
                out[j * n + i] = x;
            }
        }
        Ok(out)
    };
    Ok(Recorded {
        n,
        cones,
        p: fill("p", n, true)?,
        a: fill("a", m, false)?,
        q: numbers(&v["q"])?,
        b: numbers(&v["b"])?,
        x: numbers(&v["x"])?,
        objective: v["objective"].as_f64().ok_or("objective: not a number")?,
    })
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: qp_replay FILE [COUNT]  (FILE from `hil run --record-qp`)");
        return ExitCode::from(2);
    };
    let limit = match args.next().map(|s| s.parse::<usize>()) {
        None => usize::MAX,
        Some(Ok(k)) => k,
        Some(Err(e)) => {
            eprintln!("qp_replay: COUNT: {e}");
            return ExitCode::from(2);
        }
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("qp_replay: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let settings = match settings() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("qp_replay: {e}");
            return ExitCode::from(2);
        }
    };
    let mut problems = Vec::new();
    for (k, line) in text.lines().take(limit).enumerate() {
        match parse(line) {
            Ok(p) => problems.push(p),
            Err(e) => {
                eprintln!("qp_replay: {path}: line {}: {e}", k + 1);
                return ExitCode::from(2);
            }
        }
    }
    let mut solver: Box<Qp> = Box::new(Solver::new(settings));
    let (mut iterations, mut solved, mut other) = (0u64, 0usize, Vec::new());
    let mut condensed = 0usize;
    let mut worst = 0.0f64;
    let mut worst_objective = 0.0f64;
    let mut last = None;
    for (k, r) in problems.iter().enumerate() {
        let info = match solver.solve(&r.problem(), r.warm(last)) {
            Ok(info) => info,
            Err(e) => {
                eprintln!("qp_replay: {path}: line {}: refused: {e}", k + 1);
                return ExitCode::from(1);
            }
        };
        iterations += u64::from(info.iterations);
        condensed += info.condensed;
        if info.status == Status::Solved {
            solved += 1;
            last = Some(r.key());
            let scale = r.x.iter().fold(1.0f64, |m, v| m.max(v.abs()));
            for (a, b) in solver.x().iter().zip(&r.x) {
                worst = worst.max((a - b).abs() / scale);
            }
            let objective = info.primal_objective;
            worst_objective =
                worst_objective.max((objective - r.objective).abs() / r.objective.abs().max(1.0));
        } else {
            last = None;
            other.push((k + 1, info.status));
        }
    }
    let count = problems.len().max(1);
    let passes = match std::env::var("QP_REPLAY_PASSES").map(|s| s.parse::<usize>()) {
        Err(_) => 0,
        Ok(Ok(k)) if k >= 1 => k,
        Ok(_) => {
            eprintln!("qp_replay: QP_REPLAY_PASSES: a count of at least 1");
            return ExitCode::from(2);
        }
    };
    let mut pass_us = Vec::with_capacity(passes);
    for _ in 0..passes {
        let mut solver: Box<Qp> = Box::new(Solver::new(settings));
        let mut last = None;
        let start = std::time::Instant::now();
        for r in &problems {
            last = match solver.solve(&r.problem(), r.warm(last)) {
                Ok(info) if info.status == Status::Solved => Some(r.key()),
                _ => None,
            };
        }
        pass_us.push(start.elapsed().as_secs_f64() * 1e6 / count as f64);
    }
    if !pass_us.is_empty() {
        pass_us.sort_by(f64::total_cmp);
        let median = pass_us.get(pass_us.len() / 2).copied().unwrap_or(0.0);
        // Written, not printed: a closed pipe (`| head -1`) ends the output, not the program.
        let _ = writeln!(
            std::io::stdout(),
            "wall time a solve, median of {passes} passes: {median:.1} µs (fastest {:.1}, slowest {:.1})",
            pass_us.first().copied().unwrap_or(0.0),
            pass_us.last().copied().unwrap_or(0.0),
        );
    }
    let _ = writeln!(
        std::io::stdout(),
        "{} solves: {solved} solved, {:.2} iterations and {:.1} coordinates minimised in closed form a solve, answers within {worst:.1e} of the recorded ones (∞-norm, relative to the largest), objectives within {worst_objective:.1e} (relative, at least 1); not solved (line, status): {other:?}",
        problems.len(),
        iterations as f64 / count as f64,
        condensed as f64 / count as f64,
    );
    ExitCode::SUCCESS
}

/// The balance controller's solver settings, with the null-space setup or another warm-start
/// weight if asked for.
fn settings() -> Result<control_core::qp::Settings, String> {
    let mut settings = BalanceSettings::DEFAULT.qp;
    if std::env::var("QP_REPLAY_NULL_SPACE").is_ok_and(|v| v == "1") {
        settings.range_space = false;
    }
    if let Ok(text) = std::env::var("QP_REPLAY_WARM_START_WEIGHT") {
        settings.warm_start_weight = text
            .parse()
            .map_err(|e| format!("QP_REPLAY_WARM_START_WEIGHT: {text:?}: {e}"))?;
    }
    Ok(settings)
}
