//! `control_core::qp` against Clarabel (an independent interior-point conic solver) on seeded
//! random problems of the balance QP's shape: equalities, inequalities and SOC(3) cones.
//!
//! Agreement required (both solvers at their default tolerances, 1e-8):
//! - objective: `|f − f_ref| ≤ 1e-6 · max(1, |f_ref|)`, on problems with a semidefinite `P`
//!   (optimum possibly not unique) and a definite one;
//! - solution: `‖x − x_ref‖∞ ≤ 1e-4 · max(1, ‖x_ref‖∞)`, with a positive definite `P` only (a
//!   unique optimum);
//! - constraint violation of the returned `x`: the ∞-norm distance of `b − A x` to `K` within
//!   the solver's primal tolerance `ε_abs + ε_rel · max(‖Ax‖, ‖s‖, ‖b‖)`;
//! - our optimality conditions, checked here from scratch on every problem, including those on
//!   which Clarabel stops with a numerical error (counted; at most 5 % of them);
//! - problems made primal or dual infeasible by construction: declared so by both, with
//!   certificates that check.

use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettings, DefaultSolver, IPSolver, SolverStatus, SupportedConeT,
    SupportedConeT::{NonnegativeConeT, SecondOrderConeT, ZeroConeT},
};
use control_core::qp::{Cones, Problem, Settings, Solver, Status, WarmStart};

#[path = "support/qp_testgen.rs"]
mod testgen;

use testgen::{Owned, Rng, distance_to_cone, dot, inf};

/// Capacity of the solver under test.
const N: usize = 48;
const M: usize = 112;

struct Reference {
    status: SolverStatus,
    x: Vec<f64>,
    objective: f64,
}

fn clarabel(prob: &Owned) -> Reference {
    let n = prob.n;
    let rows = |v: &[f64], r: usize| -> Vec<Vec<f64>> {
        (0..r).map(|i| v[i * n..(i + 1) * n].to_vec()).collect()
    };
    let p = CscMatrix::from(&rows(&prob.p, n)).to_triu();
    let a = CscMatrix::from(&rows(&prob.a, prob.m()));
    let mut cones: Vec<SupportedConeT<f64>> = vec![];
    if prob.cones.zero > 0 {
        cones.push(ZeroConeT(prob.cones.zero));
    }
    if prob.cones.nonneg > 0 {
        cones.push(NonnegativeConeT(prob.cones.nonneg));
    }
    cones.extend(std::iter::repeat_n(SecondOrderConeT(3), prob.cones.soc3));
    let settings = DefaultSettings {
        verbose: false,
        max_iter: 200,
        ..DefaultSettings::default()
    };
    let mut solver = DefaultSolver::new(&p, &prob.q, &a, &prob.b, &cones, settings).unwrap();
    solver.solve();
    Reference {
        status: solver.solution.status,
        x: solver.solution.x.clone(),
        objective: solver.solution.obj_val,
    }
}

/// A random cone layout within the capacity: `n` variables, equalities fewer than `n`.
fn random_shape(rng: &mut Rng) -> (usize, Cones) {
    let n = 3 + rng.below(N - 3);
    let zero = rng.below(n);
    let nonneg = rng.below(24);
    let soc3 = rng.below(9);
    let soc3 = soc3.min((M - zero - nonneg) / 3);
    (n, Cones { zero, nonneg, soc3 })
}

#[derive(Default, Debug)]
struct Worst {
    objective: f64,
    solution: f64,
    violation_ratio: f64,
    iterations_max: u32,
    iterations_sum: u64,
    count: u64,
    reference_failed: u64,
}

/// Our solution's optimality conditions, checked here from the caller's data (independent of
/// the solver's own check and of Clarabel): residuals within the reported tolerances, `s ∈ K`,
/// `y ∈ K*`, complementary slackness `sᵀy` within the gap tolerance's order.
fn kkt_from_scratch(prob: &Owned, x: &[f64], s: &[f64], y: &[f64], ptol: f64, dtol: f64) {
    let ax = prob.ax(x);
    let pres = ax
        .iter()
        .zip(s)
        .zip(&prob.b)
        .fold(0.0f64, |m, ((a, s), b)| m.max((a + s - b).abs()));
    assert!(pres <= ptol, "primal residual {pres:e} > {ptol:e}");
    let (px, aty) = (prob.px(x), prob.aty(y));
    let dres = (0..prob.n).fold(0.0f64, |m, j| m.max((px[j] + prob.q[j] + aty[j]).abs()));
    assert!(dres <= dtol, "dual residual {dres:e} > {dtol:e}");
    let z = prob.cones.zero;
    let k = Cones {
        zero: 0,
        ..prob.cones
    };
    assert!(s[..z].iter().all(|v| *v == 0.0));
    assert_eq!(distance_to_cone(&s[z..], k), 0.0);
    assert_eq!(distance_to_cone(&y[z..], k), 0.0);
    let sy = dot(&s[z..], &y[z..]);
    assert!(sy.abs() <= 1e-6 * (1.0 + inf(s) * inf(y)), "sᵀy = {sy:e}");
}

fn with_big_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

fn compare_feasible(seed: u64, cases: usize, definite: bool) {
    with_big_stack(move || {
        let mut rng = Rng(seed);
        let mut solver = Box::new(Solver::<N, M>::new(Settings::DEFAULT));
        let mut worst = Worst::default();
        for case in 0..cases {
            let (n, cones) = random_shape(&mut rng);
            let rank_p = if definite {
                n
            } else {
                n / 2 + rng.below(n / 2 + 1)
            };
            let prob =
                testgen::feasible(&mut rng, n, cones, rank_p, if definite { 0.1 } else { 0.0 });
            let reference = clarabel(&prob);
            let info = solver.solve(&prob.problem(), WarmStart::Cold).unwrap();
            assert_eq!(
                info.status,
                Status::Solved,
                "case {case} ({n} vars, {cones:?}): {info:?}"
            );
            kkt_from_scratch(
                &prob,
                solver.x(),
                solver.s(),
                solver.y(),
                info.primal_tolerance,
                info.dual_tolerance,
            );
            if !matches!(
                reference.status,
                SolverStatus::Solved | SolverStatus::AlmostSolved
            ) {
                eprintln!(
                    "case {case} ({n} vars, {cones:?}): clarabel {:?}, ours {info:?}",
                    reference.status
                );
                worst.reference_failed += 1;
                continue;
            }
            let x = solver.x().to_vec();
            let f = prob.objective(&x);
            let obj_err = (f - reference.objective).abs() / reference.objective.abs().max(1.0);
            assert!(
                obj_err <= 1e-6,
                "case {case}: objective {f} vs {} ({obj_err:e})",
                reference.objective
            );
            worst.objective = worst.objective.max(obj_err);
            if definite {
                let dx = x
                    .iter()
                    .zip(&reference.x)
                    .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                let sol_err = dx / inf(&reference.x).max(1.0);
                assert!(sol_err <= 1e-4, "case {case}: solution error {sol_err:e}");
                worst.solution = worst.solution.max(sol_err);
            }
            // b − A x must be in K within the primal tolerance.
            let ax = prob.ax(&x);
            let slack: Vec<f64> = prob.b.iter().zip(&ax).map(|(b, a)| b - a).collect();
            let violation = distance_to_cone(&slack, cones);
            let ratio = violation / info.primal_tolerance;
            assert!(
                ratio <= 1.0,
                "case {case}: violation {violation:e} vs {:e}",
                info.primal_tolerance
            );
            worst.violation_ratio = worst.violation_ratio.max(ratio);
            worst.iterations_max = worst.iterations_max.max(info.iterations);
            worst.iterations_sum += u64::from(info.iterations);
            worst.count += 1;
        }
        eprintln!(
            "qp vs clarabel ({} problems, P {}): worst objective error {:.2e}, worst solution error {}, \
             worst violation / tolerance {:.2e}, iterations mean {:.1} max {}; clarabel failed on {}",
            worst.count,
            if definite { "definite" } else { "semidefinite" },
            worst.objective,
            if definite {
                format!("{:.2e}", worst.solution)
            } else {
                "not compared".to_string()
            },
            worst.violation_ratio,
            worst.iterations_sum as f64 / worst.count as f64,
            worst.iterations_max,
            worst.reference_failed
        );
        assert!(
            worst.reference_failed * 20 <= worst.count,
            "the reference failed too often"
        );
    });
}

#[test]
fn agrees_with_clarabel_positive_definite() {
    compare_feasible(0x5eed_0001, 150, true);
}

#[test]
fn agrees_with_clarabel_positive_semidefinite() {
    compare_feasible(0x5eed_0002, 150, false);
}

#[test]
fn agrees_with_clarabel_on_a_balance_sized_problem() {
    with_big_stack(|| {
        let mut rng = Rng(0x5eed_0003);
        let mut solver = Box::new(Solver::<112, 160>::new(Settings::DEFAULT));
        for _ in 0..3 {
            let prob = testgen::feasible(
                &mut rng,
                100,
                Cones {
                    zero: 80,
                    nonneg: 40,
                    soc3: 8,
                },
                100,
                0.1,
            );
            let reference = clarabel(&prob);
            let info = solver.solve(&prob.problem(), WarmStart::Cold).unwrap();
            assert_eq!(info.status, Status::Solved, "{info:?}");
            let f = prob.objective(solver.x());
            let obj_err = (f - reference.objective).abs() / reference.objective.abs().max(1.0);
            let dx = solver
                .x()
                .iter()
                .zip(&reference.x)
                .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            let sol_err = dx / inf(&reference.x).max(1.0);
            eprintln!(
                "balance-sized: objective error {obj_err:.2e}, solution error {sol_err:.2e}, {} iterations",
                info.iterations
            );
            assert!(obj_err <= 1e-6 && sol_err <= 1e-4);
        }
    });
}

#[test]
fn infeasibility_detected_by_both() {
    with_big_stack(|| {
        let mut rng = Rng(0x5eed_0004);
        let mut solver = Box::new(Solver::<N, M>::new(Settings::DEFAULT));
        let (mut primal, mut dual, mut reference_failed) = (0, 0, 0);
        for case in 0..100 {
            let (n, mut cones) = random_shape(&mut rng);
            let make_dual = case % 2 == 1;
            if !make_dual && cones.nonneg == 0 && cones.zero == 0 {
                cones.nonneg = 1;
            }
            let rank_p = rng.below(n);
            let mut prob = testgen::feasible(&mut rng, n, cones, rank_p.max(1), 0.0);
            if make_dual {
                testgen::make_dual_infeasible(&mut rng, &mut prob, rank_p);
            } else {
                testgen::make_primal_infeasible(&mut rng, &mut prob);
            }
            let reference = clarabel(&prob);
            let info = solver.solve(&prob.problem(), WarmStart::Cold).unwrap();
            let (want_ours, want_ref) = if make_dual {
                (
                    Status::DualInfeasible,
                    [
                        SolverStatus::DualInfeasible,
                        SolverStatus::AlmostDualInfeasible,
                    ],
                )
            } else {
                (
                    Status::PrimalInfeasible,
                    [
                        SolverStatus::PrimalInfeasible,
                        SolverStatus::AlmostPrimalInfeasible,
                    ],
                )
            };
            if !want_ref.contains(&reference.status) {
                eprintln!(
                    "case {case} ({n} vars, {cones:?}): clarabel {:?}, ours {:?}",
                    reference.status, info.status
                );
                reference_failed += 1;
            }
            assert_eq!(
                info.status, want_ours,
                "case {case} ({n} vars, {cones:?}): {info:?}"
            );
            if make_dual {
                dual += 1;
                // The certificate: ‖x‖∞ = 1, qᵀx < 0, P x ≈ 0, A x ∈ −K.
                let x = solver.x();
                let qx = dot(&prob.q, x);
                assert!(qx < 0.0 && (inf(x) - 1.0).abs() < 1e-12);
                assert!(inf(&prob.px(x)) <= 1e-8 * qx.abs());
                let ax: Vec<f64> = prob.ax(x).iter().map(|v| -v).collect();
                assert!(distance_to_cone(&ax, cones) <= 1e-8 * qx.abs());
            } else {
                primal += 1;
                let y = solver.y();
                let by = dot(&prob.b, y);
                let aty: Vec<f64> = (0..n)
                    .map(|j| (0..prob.m()).map(|i| prob.a[i * n + j] * y[i]).sum())
                    .collect();
                assert!(by < 0.0 && inf(&aty) <= 1e-8 * by.abs());
            }
        }
        eprintln!(
            "infeasibility: {primal} primal and {dual} dual infeasible problems detected with checked certificates; \
             clarabel did not detect {reference_failed}"
        );
        assert!(
            reference_failed * 10 <= primal + dual,
            "the reference failed too often"
        );
    });
}
