//! The balance controller's own QPs, recorded from real runs, against Clarabel (an independent
//! interior-point conic solver). `hil run --record-qp` writes every 10th `qp_balance` tick's
//! problem and the answer `control_core::qp` gave on the control path; here Clarabel solves
//! each problem again from the recorded data.
//!
//! The runs: `balance_push` cut to `qp_balance`, unpushed, at 20 N·s (it stands, its capture
//! point 2.3 cm inside the feet's footprint at its closest) and at 24 N·s (it stands by one
//! recovery step: the ticks of its swing, one foot in the air and its sole's corners as point
//! tasks, are among those recorded); and the
//! same with the solver's null-space setup, unpushed, at 10 and at 20 N·s. (At 22 N·s
//! Clarabel stops on one recorded tick with insufficient progress.) Required, per problem:
//! - solved by our solver: Clarabel solves it too (or, on at most 1 % of them, reaches only its
//!   reduced accuracy, `AlmostSolved`: counted and printed, every check below still applied;
//!   seen on a falling body's ill-conditioned tick); objectives within 1e-6 relative; the two
//!   answers within 1e-6 of the objective in its own metric, ½ΔxᵀPΔx (the accelerations and
//!   forces are unique, but weakly weighted directions, how the tangential forces spread over
//!   the soles' corners, let their ∞-norm difference reach a few 1e-3 of the largest force:
//!   0.5 N of 130 N, printed); our
//!   answer's distance to the cone within 1e-6 relative to the data;
//! - declared infeasible by our solver: Clarabel declares the same.
//!
//! Ticks our solver ended otherwise (stalled, out of iterations) are counted, with what Clarabel
//! made of them.

use std::path::Path;

use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettings, DefaultSolver, IPSolver, SolverStatus, SupportedConeT,
    SupportedConeT::{NonnegativeConeT, SecondOrderConeT, ZeroConeT},
};
use e2e::{hil_run, out_dir, report, scenario_copy};
use serde_json::Value;

const BALANCE: &str = include_str!("../scenarios/balance_push.toml");

/// One recorded problem.
struct Recorded {
    run: String,
    n: usize,
    m: usize,
    cones: [usize; 3],
    compared: usize,
    p: Vec<(usize, usize, f64)>,
    q: Vec<f64>,
    a: Vec<(usize, usize, f64)>,
    b: Vec<f64>,
    status: String,
    iterations: u64,
    x: Vec<f64>,
    objective: f64,
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn count(v: &Value) -> usize {
    v.as_u64().map_or(usize::MAX, |n| n as usize)
}

fn numbers(v: &Value) -> Vec<f64> {
    v.as_array()
        .map(|a| a.iter().map(num).collect())
        .unwrap_or_default()
}

fn triplets(v: &Value) -> Vec<(usize, usize, f64)> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|t| (count(&t[0]), count(&t[1]), num(&t[2])))
                .collect()
        })
        .unwrap_or_default()
}

fn parse(line: &str) -> Recorded {
    let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:.200}"));
    let rec = Recorded {
        run: v["run"].as_str().unwrap_or_default().to_owned(),
        n: count(&v["n"]),
        m: count(&v["m"]),
        cones: [
            count(&v["cones"][0]),
            count(&v["cones"][1]),
            count(&v["cones"][2]),
        ],
        compared: count(&v["accelerations"]) + count(&v["forces"]),
        p: triplets(&v["p"]),
        q: numbers(&v["q"]),
        a: triplets(&v["a"]),
        b: numbers(&v["b"]),
        status: v["status"].as_str().unwrap_or_default().to_owned(),
        iterations: v["iterations"].as_u64().unwrap_or(0),
        x: numbers(&v["x"]),
        objective: num(&v["objective"]),
    };
    let [z, l, c] = rec.cones;
    assert_eq!(z + l + 3 * c, rec.m, "{}", rec.run);
    assert_eq!(
        (rec.q.len(), rec.x.len(), rec.b.len()),
        (rec.n, rec.n, rec.m)
    );
    assert!(rec.compared <= rec.n);
    rec
}

/// Clarabel on the recorded data: status, x, objective, iterations.
fn clarabel(r: &Recorded) -> (SolverStatus, Vec<f64>, f64, u32) {
    let dense = |t: &[(usize, usize, f64)], rows: usize| {
        let mut m = vec![vec![0.0; r.n]; rows];
        for &(i, j, v) in t {
            m[i][j] = v;
        }
        m
    };
    let p = CscMatrix::from(&dense(&r.p, r.n)).to_triu();
    let a = CscMatrix::from(&dense(&r.a, r.m));
    let [z, l, c] = r.cones;
    let mut cones: Vec<SupportedConeT<f64>> = vec![];
    if z > 0 {
        cones.push(ZeroConeT(z));
    }
    if l > 0 {
        cones.push(NonnegativeConeT(l));
    }
    cones.extend(std::iter::repeat_n(SecondOrderConeT(3), c));
    let settings = DefaultSettings {
        verbose: false,
        max_iter: 200,
        ..DefaultSettings::default()
    };
    let mut solver = DefaultSolver::new(&p, &r.q, &a, &r.b, &cones, settings)
        .unwrap_or_else(|e| panic!("{}: Clarabel refuses the data: {e:?}", r.run));
    solver.solve();
    let s = &solver.solution;
    (s.status, s.x.clone(), s.obj_val, s.iterations)
}

/// The ∞-norm distance of `b − A x` to the cone, and the data's scale.
fn violation(r: &Recorded) -> (f64, f64) {
    let mut slack = r.b.clone();
    let mut ax = vec![0.0f64; r.m];
    for &(i, j, v) in &r.a {
        ax[i] += v * r.x[j];
    }
    for (s, a) in slack.iter_mut().zip(&ax) {
        *s -= a;
    }
    let inf = |v: &[f64]| v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let [z, l, c] = r.cones;
    let mut d = 0.0f64;
    for s in &slack[..z] {
        d = d.max(s.abs());
    }
    for s in &slack[z..z + l] {
        d = d.max(-s);
    }
    for k in 0..c {
        let o = z + l + 3 * k;
        let (t, u) = (slack[o], slack[o + 1].hypot(slack[o + 2]));
        d = d.max(u - t);
    }
    (d, 1.0f64.max(inf(&r.b)).max(inf(&ax)))
}

/// `balance_push` cut to `qp_balance`, with the given impulses and gain sweep, beside `out`.
fn qp_balance_copy(
    out: &Path,
    name: &str,
    impulses: &str,
    gain_scales: &str,
    gain_scopes: &str,
) -> std::path::PathBuf {
    let impulses = format!("{impulses}\n# ");
    scenario_copy(
        out.parent().unwrap_or(out),
        name,
        BALANCE,
        &[
            (
                "controllers = [\"parent_space\", \"world_space\", \"world_space_root_spring\", \"qp_balance\"]",
                "controllers = [\"qp_balance\"]",
            ),
            ("impulses_ns = [0.0, 4.0,", &impulses),
            ("gain_scales = [0.25, 0.5, 1.0, 2.0, 4.0]", gain_scales),
            (
                "gain_scopes = [\"upper_body\", \"all_joints\"]",
                gain_scopes,
            ),
        ],
    )
}

#[test]
fn the_balance_qps_of_real_runs_agree_with_clarabel() {
    let out = out_dir("qp_recorded");
    let file = qp_balance_copy(
        &out,
        "qp_recorded.toml",
        "impulses_ns = [0.0, 20.0, 24.0]",
        "gain_scales = [1.0]",
        "gain_scopes = [\"all_joints\"]",
    );
    let log = out.parent().unwrap_or(&out).join("qp_recorded.jsonl");
    let (_, stood) = recorded_run(&out, &file, &log);
    assert_eq!(stood, [true, true, true], "the runs are the ones described");
    check(&log);
}

/// Runs `file` recording its QPs into `log`; its report and whether each push stood.
fn recorded_run(out: &Path, file: &Path, log: &Path) -> (Value, Vec<Value>) {
    let run = hil_run(
        &[
            file.to_str().unwrap_or_default(),
            "--record-qp",
            log.to_str().unwrap_or_default(),
        ],
        out,
    );
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let r = report(out);
    let stood: Vec<Value> = r["controllers"][0]["pushes"]
        .as_array()
        .map(|p| p.iter().map(|x| x["stood"].clone()).collect())
        .unwrap_or_default();
    (r, stood)
}

/// The same with the solver's null-space setup (`[qp_balance] range_space = false`: a QR of
/// the equalities over every variable instead of the accelerations eliminated by their own
/// factorisations): the answers the control path got agree with Clarabel's as closely, and
/// the report says which way it solved.
#[test]
fn the_null_space_answers_agree_with_clarabel() {
    let out = out_dir("qp_recorded_null");
    let file = qp_balance_copy(
        &out,
        "qp_recorded_null.toml",
        "impulses_ns = [0.0, 10.0, 20.0]",
        "gain_scales = [1.0]",
        "gain_scopes = [\"all_joints\"]",
    );
    let mut text = std::fs::read_to_string(&file).unwrap_or_default();
    text.push_str("\n[qp_balance]\nrange_space = false\n");
    std::fs::write(&file, text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let log = out.parent().unwrap_or(&out).join("qp_recorded_null.jsonl");
    let (r, stood) = recorded_run(&out, &file, &log);
    assert_eq!(
        r["qp_balance"]["range_space"], false,
        "{:#}",
        r["qp_balance"]
    );
    assert_eq!(stood, [true, true, true], "the runs are the ones described");
    check(&log);
}

fn check(log: &Path) {
    let text = std::fs::read_to_string(log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
    let (mut solved, mut infeasible, mut other) = (0u32, 0u32, Vec::new());
    let (mut worst_objective, mut worst_x, mut worst_violation) = (0.0f64, 0.0f64, 0.0f64);
    let mut worst_metric = 0.0f64;
    let (mut ours_iterations, mut clarabel_iterations) = (0u64, 0u64);
    let mut clarabel_reduced = 0u32;
    for line in text.lines() {
        let rec = parse(line);
        let (status, x, objective, iterations) = clarabel(&rec);
        match rec.status.as_str() {
            "Solved" => {
                if status == SolverStatus::AlmostSolved {
                    clarabel_reduced += 1;
                } else {
                    assert_eq!(status, SolverStatus::Solved, "{}", rec.run);
                }
                let objective_error =
                    (rec.objective - objective).abs() / 1.0f64.max(objective.abs());
                assert!(objective_error <= 1e-6, "{}: {objective_error:e}", rec.run);
                let scale = x[..rec.compared].iter().fold(1.0f64, |m, v| m.max(v.abs()));
                let x_error = rec.x[..rec.compared]
                    .iter()
                    .zip(&x)
                    .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()))
                    / scale;
                // The distance in the objective's metric: at the optimum x*, every feasible x
                // has f(x) − f(x*) ≥ ½ (x − x*)ᵀ P (x − x*), so two answers within the
                // objective's tolerance are within it in this metric too, whatever the weakly
                // weighted directions (how the weight spreads over the soles' corners).
                let dx: Vec<f64> = rec.x.iter().zip(&x).map(|(a, b)| a - b).collect();
                let mut pdx = vec![0.0f64; rec.n];
                for &(i, j, v) in &rec.p {
                    pdx[i] += v * dx[j];
                    if i != j {
                        pdx[j] += v * dx[i];
                    }
                }
                let metric = 0.5 * dx.iter().zip(&pdx).map(|(a, b)| a * b).sum::<f64>()
                    / 1.0f64.max(objective.abs());
                assert!(metric <= 1e-6, "{}: {metric:e}", rec.run);
                worst_metric = worst_metric.max(metric);
                let (d, data) = violation(&rec);
                assert!(d <= 1e-6 * data, "{}: {d:e} of {data:e}", rec.run);
                worst_objective = worst_objective.max(objective_error);
                worst_x = worst_x.max(x_error);
                worst_violation = worst_violation.max(d / data);
                clarabel_iterations += u64::from(iterations);
                ours_iterations += rec.iterations;
                solved += 1;
            }
            s if s.contains("Infeasible") => {
                let want = if s.contains("Primal") {
                    SolverStatus::PrimalInfeasible
                } else {
                    SolverStatus::DualInfeasible
                };
                assert_eq!(status, want, "{}: ours {s}", rec.run);
                infeasible += 1;
            }
            s => other.push(format!("{}: ours {s}, Clarabel {status:?}", rec.run)),
        }
    }
    let per = |total: u64| total as f64 / f64::from(solved.max(1));
    eprintln!(
        "qp_recorded: {solved} solved problems agree (objective within {worst_objective:.1e}, ½ΔxᵀPΔx within {worst_metric:.1e} of it, accelerations and forces within {worst_x:.1e} of their largest, cone distance {worst_violation:.1e} of the data; iterations a problem: ours {:.1} warm-started, Clarabel {:.1} cold; Clarabel at its reduced accuracy on {clarabel_reduced}), {infeasible} infeasible by both, {} ended otherwise: {other:?}",
        per(ours_iterations),
        per(clarabel_iterations),
        other.len(),
    );
    assert!(solved >= 200, "{solved} solved problems recorded");
    assert!(
        clarabel_reduced * 100 <= solved,
        "Clarabel at its reduced accuracy on {clarabel_reduced} of {solved}"
    );
}

/// `--record-qp-every 1` records every tick, and solving the recorded QPs again offline, in
/// order and warm-started as the controller does (what the example `qp_replay` does), gives the
/// answers the control path got bit for bit: the controller's QPs are reproducible outside it.
/// A bad `--record-qp-every` is exit 2.
#[test]
fn every_tick_recorded_is_replayed_bit_for_bit() {
    use control_core::balance::BalanceSettings;
    use control_core::qp::{Cones, Problem, Solver, WarmStart};

    let out = out_dir("qp_recorded_every");
    let file = qp_balance_copy(
        &out,
        "qp_recorded_every.toml",
        "impulses_ns = [0.0]",
        "gain_scales = []",
        "gain_scopes = []",
    );
    let log = out.parent().unwrap_or(&out).join("qp_recorded_every.jsonl");
    let path = |p: &Path| p.to_str().unwrap_or_default().to_owned();
    for bad in ["0", "-1", "x"] {
        let run = hil_run(
            &[
                &path(&file),
                "--record-qp",
                &path(&log),
                "--record-qp-every",
                bad,
            ],
            &out,
        );
        assert_eq!(run.status.code(), Some(2), "--record-qp-every {bad}");
    }
    let run = hil_run(&[&path(&file), "--record-qp-every", "1"], &out);
    assert_eq!(
        run.status.code(),
        Some(2),
        "--record-qp-every without --record-qp"
    );
    let run = hil_run(
        &[
            &path(&file),
            "--record-qp",
            &path(&log),
            "--record-qp-every",
            "1",
        ],
        &out,
    );
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 700, "one line a tick of the 3.5 s run");
    let mut solver = Box::new(Solver::<128, 200>::new(BalanceSettings::DEFAULT.qp));
    let mut last = None;
    for (k, line) in lines.iter().enumerate() {
        let rec = parse(line);
        let dense = |t: &[(usize, usize, f64)], rows: usize, symmetric: bool| {
            let mut m = vec![0.0; rows * rec.n];
            for &(i, j, v) in t {
                m[i * rec.n + j] = v;
                if symmetric {
                    m[j * rec.n + i] = v;
                }
            }
            m
        };
        let (p, a) = (dense(&rec.p, rec.n, true), dense(&rec.a, rec.m, false));
        let [zero, nonneg, soc3] = rec.cones;
        let cones = Cones { zero, nonneg, soc3 };
        let problem = Problem {
            p: &p,
            q: &rec.q,
            a: &a,
            b: &rec.b,
            cones,
        };
        let key = (rec.n, rec.m, rec.cones);
        let warm = if last == Some(key) {
            WarmStart::Previous
        } else {
            WarmStart::Cold
        };
        let info = solver
            .solve(&problem, warm)
            .unwrap_or_else(|e| panic!("tick {k}: refused: {e}"));
        assert_eq!(format!("{:?}", info.status), rec.status, "tick {k}");
        assert_eq!(u64::from(info.iterations), rec.iterations, "tick {k}");
        assert_eq!(solver.x(), &rec.x[..], "tick {k}: the answer differs");
        last = (rec.status == "Solved").then_some(key);
    }
}
