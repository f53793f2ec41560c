//! Solve times of `control_core::qp` on problems the size of the balance QP, cold and
//! warm-started, and their iteration counts.
//!
//! - `random`: 100 variables, 80 equalities, 40 inequalities, 8 friction cones (P definite).
//! - `balance`: the balance QP's structure with physical scales (38 degrees of freedom, 8
//!   contacts: 94 variables, 62 equalities, 72 inequalities, 8 cones; `testgen::Balance`).
//!
//! Warm: the solver alternates between two instances 1e-3 apart (relative, in the bias forces,
//! the desired accelerations and the contact-acceleration term), each warm-started from the
//! other's solution, as consecutive ticks would be.
//!
//! `QP_BENCH_ONCE=1 cargo bench --bench qp` solves each case once, cold then warm, prints the
//! iterations and exits without Criterion (`QP_BENCH_ONCE=balance/warm`: that solve only): the
//! mode to run the bench binary in under
//! `valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*qp*measured*'`, which
//! counts the instructions of the measured solve alone (a warm solve's cold predecessor is not
//! counted).

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::hint::black_box;

use control_core::qp::{Cones, Problem, Settings, Solver, Status, WarmStart};
use criterion::{Criterion, criterion_group};

#[path = "../tests/support/qp_testgen.rs"]
mod testgen;

use testgen::{Balance, Owned, Rng};

type Qp = Solver<112, 176>;

/// The two instances of a case: `(a, b)`, `b` one tick after `a`.
fn cases() -> Vec<(&'static str, Owned, Owned)> {
    let mut rng = Rng(0xbe4c);
    let random = testgen::feasible(
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
    let mut random_next = random.clone();
    for v in random_next.b[..80]
        .iter_mut()
        .chain(random_next.q.iter_mut())
    {
        *v += 1e-3 * (1.0 + v.abs()) * rng.uniform();
    }
    let mut bal = Balance::new(&mut rng, 38, 8);
    let first = bal.prob.clone();
    bal.perturb(&mut rng, 1e-3);
    vec![
        ("random", random, random_next),
        ("balance", first, bal.prob),
    ]
}

fn solve(solver: &mut Qp, problem: &Problem<'_>, warm: WarmStart<'_>) -> u32 {
    let info = solver.solve(problem, warm).expect("a valid problem");
    assert_eq!(info.status, Status::Solved, "{info:?}");
    info.iterations
}

fn bench(c: &mut Criterion) {
    let mut solver: Box<Qp> = Box::new(Solver::new(Settings::DEFAULT));
    for (name, a, b) in cases() {
        let (pa, pb) = (a.problem(), b.problem());
        let cold = solve(&mut solver, &pa, WarmStart::Cold);
        let warm = solve(&mut solver, &pb, WarmStart::Previous);
        eprintln!(
            "qp/{name}: {} variables, {:?}: {cold} iterations cold, {warm} warm",
            a.n, a.cones
        );
        c.bench_function(&format!("qp/{name}/cold"), |bench| {
            bench.iter(|| solve(&mut solver, black_box(&pa), WarmStart::Cold))
        });
        let mut flip = false;
        c.bench_function(&format!("qp/{name}/warm"), |bench| {
            bench.iter(|| {
                flip = !flip;
                let p = if flip { &pb } else { &pa };
                solve(&mut solver, black_box(p), WarmStart::Previous)
            })
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(50).measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}

/// One solve, not inlined: the function callgrind's `--toggle-collect` names.
#[inline(never)]
fn measured(solver: &mut Qp, problem: &Problem<'_>, warm: WarmStart<'_>) -> u32 {
    solve(solver, problem, warm)
}

fn main() {
    if let Some(which) = std::env::var_os("QP_BENCH_ONCE") {
        // `QP_BENCH_ONCE=1`: every case cold then warm; `QP_BENCH_ONCE=balance/warm`: that one.
        let which = which.to_string_lossy().into_owned();
        let mut solver: Box<Qp> = Box::new(Solver::new(Settings::DEFAULT));
        for (name, a, b) in cases() {
            for mode in ["cold", "warm"] {
                let label = format!("{name}/{mode}");
                if which != "1" && which != label {
                    continue;
                }
                let iterations = if mode == "cold" {
                    measured(&mut solver, &a.problem(), WarmStart::Cold)
                } else {
                    solve(&mut solver, &a.problem(), WarmStart::Cold);
                    measured(&mut solver, &b.problem(), WarmStart::Previous)
                };
                println!("qp/{label}: {iterations} iterations");
            }
        }
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
