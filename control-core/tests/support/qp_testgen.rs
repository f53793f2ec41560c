//! Seeded test problems for `control_core::qp`, shared by its unit tests (`src/qp.rs`, under
//! `cfg(test)`), the Clarabel comparison (`tests/qp_clarabel.rs`) and the bench
//! (`benches/qp.rs`), which include this file by path. Test and bench code only (it allocates):
//! it lives outside `src/` so that nothing of it can reach the no_std library.
#![allow(
    dead_code,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::needless_range_loop
)]

use super::{Cones, Problem};

/// SplitMix64.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }

    /// About standard normal (Irwin–Hall, 12 terms).
    pub fn normal(&mut self) -> f64 {
        (0..12).map(|_| 0.5 * (self.uniform() + 1.0)).sum::<f64>() - 6.0
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// An owned problem.
#[derive(Debug, Clone)]
pub struct Owned {
    pub n: usize,
    pub p: Vec<f64>,
    pub q: Vec<f64>,
    pub a: Vec<f64>,
    pub b: Vec<f64>,
    pub cones: Cones,
}

pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

pub fn inf(v: &[f64]) -> f64 {
    v.iter().fold(0.0f64, |m, x| m.max(x.abs()))
}

impl Owned {
    pub fn m(&self) -> usize {
        self.cones.rows().unwrap()
    }

    pub fn problem(&self) -> Problem<'_> {
        Problem {
            p: &self.p,
            q: &self.q,
            a: &self.a,
            b: &self.b,
            cones: self.cones,
        }
    }

    pub fn ax(&self, x: &[f64]) -> Vec<f64> {
        (0..self.m())
            .map(|i| dot(&self.a[i * self.n..(i + 1) * self.n], x))
            .collect()
    }

    pub fn aty(&self, y: &[f64]) -> Vec<f64> {
        (0..self.n)
            .map(|j| (0..self.m()).map(|i| self.a[i * self.n + j] * y[i]).sum())
            .collect()
    }

    pub fn px(&self, x: &[f64]) -> Vec<f64> {
        (0..self.n)
            .map(|i| dot(&self.p[i * self.n..(i + 1) * self.n], x))
            .collect()
    }

    pub fn objective(&self, x: &[f64]) -> f64 {
        0.5 * dot(x, &self.px(x)) + dot(&self.q, x)
    }

    /// The block sizes of the cone rows after the equalities (1 or 3).
    pub fn blocks(&self) -> impl Iterator<Item = usize> {
        std::iter::repeat_n(1, self.cones.nonneg).chain(std::iter::repeat_n(3, self.cones.soc3))
    }
}

/// A point of the interior of a cone block (`dim` 1 or 3).
pub fn interior(rng: &mut Rng, dim: usize) -> Vec<f64> {
    if dim == 1 {
        return vec![0.1 + rng.uniform().abs()];
    }
    let (u1, u2) = (rng.normal(), rng.normal());
    vec![
        (u1 * u1 + u2 * u2).sqrt() + 0.1 + rng.uniform().abs(),
        u1,
        u2,
    ]
}

fn random_p(rng: &mut Rng, n: usize, rank: usize, ridge: f64) -> Vec<f64> {
    let bm: Vec<f64> = (0..rank * n).map(|_| rng.normal()).collect();
    let mut p = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            p[i * n + j] = (0..rank)
                .map(|k| bm[k * n + i] * bm[k * n + j])
                .sum::<f64>()
                / n as f64;
        }
        p[i * n + i] += ridge;
    }
    p
}

/// `q = −P x₁ − Aᵀ y₀` for a random `x₁`: with `y₀` interior the dual is strictly feasible and
/// the primal bounded.
pub fn dual_feasible_q(rng: &mut Rng, prob: &mut Owned, y0: &[f64]) {
    let x1: Vec<f64> = (0..prob.n).map(|_| rng.normal()).collect();
    let px = prob.px(&x1);
    let aty = prob.aty(y0);
    prob.q = px.iter().zip(&aty).map(|(a, b)| -a - b).collect();
}

fn interior_y(rng: &mut Rng, prob: &Owned) -> Vec<f64> {
    let mut y = vec![0.0; prob.m()];
    for v in y.iter_mut().take(prob.cones.zero) {
        *v = rng.normal();
    }
    let mut o = prob.cones.zero;
    for dim in prob.blocks() {
        y[o..o + dim].copy_from_slice(&interior(rng, dim));
        o += dim;
    }
    y
}

/// A random strictly feasible and strictly dual-feasible problem: `P = BᵀB/n + ridge·I` (`rank`
/// rows of `B`), `b = A x₀ + s₀` with `s₀` interior, `q = −P x₁ − Aᵀ y₀` with `y₀` interior.
pub fn feasible(rng: &mut Rng, n: usize, cones: Cones, rank: usize, ridge: f64) -> Owned {
    feasible_masked(rng, n, cones, rank, ridge, 0)
}

/// [`feasible`], with the inequality and cone rows zero on the first `untouched` variables
/// (the same draws: `untouched = 0` is [`feasible`]).
pub fn feasible_masked(
    rng: &mut Rng,
    n: usize,
    cones: Cones,
    rank: usize,
    ridge: f64,
    untouched: usize,
) -> Owned {
    feasible_blocks(rng, n, cones, rank, ridge, untouched, false)
}

/// [`feasible_masked`] with `P` block diagonal too: no coupling between the first `untouched`
/// variables and the others (the balance QP's accelerations and forces).
pub fn feasible_split(
    rng: &mut Rng,
    n: usize,
    cones: Cones,
    rank: usize,
    ridge: f64,
    untouched: usize,
) -> Owned {
    feasible_blocks(rng, n, cones, rank, ridge, untouched, true)
}

fn feasible_blocks(
    rng: &mut Rng,
    n: usize,
    cones: Cones,
    rank: usize,
    ridge: f64,
    untouched: usize,
    split: bool,
) -> Owned {
    let m = cones.rows().unwrap();
    let mut p = random_p(rng, n, rank, ridge);
    if split {
        for i in 0..n {
            for j in 0..n {
                if (i < untouched) != (j < untouched) {
                    p[i * n + j] = 0.0;
                }
            }
        }
    }
    let mut a: Vec<f64> = (0..m * n).map(|_| rng.normal()).collect();
    for row in a.chunks_exact_mut(n).skip(cones.zero) {
        row[..untouched.min(n)].fill(0.0);
    }
    let mut prob = Owned {
        n,
        p,
        q: vec![0.0; n],
        a,
        b: vec![0.0; m],
        cones,
    };
    let x0: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
    let mut s0 = vec![0.0; m];
    let mut o = cones.zero;
    for dim in prob.blocks() {
        s0[o..o + dim].copy_from_slice(&interior(rng, dim));
        o += dim;
    }
    prob.b = prob.ax(&x0).iter().zip(&s0).map(|(a, s)| a + s).collect();
    let y0 = interior_y(rng, &prob);
    dual_feasible_q(rng, &mut prob, &y0);
    prob
}

/// A problem with a planted optimum `(x*, s*, y*)`: complementary pairs (inactive rows, active
/// rows, and second-order cones active on their boundary or at their apex), `b = A x* + s*`,
/// `q = −P x* − Aᵀ y*`. Returns the problem and `x*`.
pub fn planted(
    rng: &mut Rng,
    n: usize,
    cones: Cones,
    rank: usize,
    ridge: f64,
) -> (Owned, Vec<f64>) {
    let m = cones.rows().unwrap();
    let p = random_p(rng, n, rank, ridge);
    let a: Vec<f64> = (0..m * n).map(|_| rng.normal()).collect();
    let mut prob = Owned {
        n,
        p,
        q: vec![0.0; n],
        a,
        b: vec![0.0; m],
        cones,
    };
    let x: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
    let (mut s, mut y) = (vec![0.0; m], vec![0.0; m]);
    for v in y.iter_mut().take(cones.zero) {
        *v = rng.normal();
    }
    let mut o = cones.zero;
    for dim in prob.blocks() {
        let kind = rng.below(3);
        if dim == 1 {
            let v = 0.2 + rng.uniform().abs();
            if kind == 0 { s[o] = v } else { y[o] = v }
        } else {
            match kind {
                0 => s[o..o + 3].copy_from_slice(&interior(rng, 3)),
                1 => y[o..o + 3].copy_from_slice(&interior(rng, 3)),
                _ => {
                    // Both on the boundary, complementary: s = (t, u), y = β (t, −u).
                    let (u1, u2) = (rng.normal(), rng.normal());
                    let t = (u1 * u1 + u2 * u2).sqrt();
                    let beta = 0.3 + rng.uniform().abs();
                    s[o..o + 3].copy_from_slice(&[t, u1, u2]);
                    y[o..o + 3].copy_from_slice(&[beta * t, -beta * u1, -beta * u2]);
                }
            }
        }
        o += dim;
    }
    prob.b = prob.ax(&x).iter().zip(&s).map(|(a, s)| a + s).collect();
    let px = prob.px(&x);
    let aty = prob.aty(&y);
    prob.q = px.iter().zip(&aty).map(|(a, b)| -a - b).collect();
    (prob, x)
}

/// Makes a feasible problem primal infeasible only: the row `i` is replaced so that a `y` in
/// `K*` has `Aᵀy = 0` and `bᵀy = −1`, and `q` is redrawn to keep the dual strictly feasible.
pub fn make_primal_infeasible(rng: &mut Rng, prob: &mut Owned) {
    let (n, m) = (prob.n, prob.m());
    let cones = prob.cones;
    let y = interior_y(rng, prob);
    let i = if cones.nonneg > 0 {
        cones.zero + rng.below(cones.nonneg)
    } else {
        rng.below(cones.zero)
    };
    for j in 0..n {
        let others: f64 = (0..m)
            .filter(|&k| k != i)
            .map(|k| y[k] * prob.a[k * n + j])
            .sum();
        prob.a[i * n + j] = -others / y[i];
    }
    let others: f64 = (0..m).filter(|&k| k != i).map(|k| y[k] * prob.b[k]).sum();
    prob.b[i] = (-1.0 - others) / y[i];
    let y0 = interior_y(rng, prob);
    dual_feasible_q(rng, prob, &y0);
}

/// Makes a feasible problem dual infeasible (unbounded) and keeps it primal feasible: a
/// direction `d` with `P d = 0`, `A_E d = 0`, `A_K d ∈ −K` and `qᵀd = −1`.
pub fn make_dual_infeasible(rng: &mut Rng, prob: &mut Owned, rank: usize) {
    let (n, m) = (prob.n, prob.m());
    let cones = prob.cones;
    let d: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
    let dd = dot(&d, &d);
    let mut bm: Vec<f64> = (0..rank * n).map(|_| rng.normal()).collect();
    for k in 0..rank {
        let row = &mut bm[k * n..(k + 1) * n];
        let c = dot(row, &d) / dd;
        row.iter_mut().zip(&d).for_each(|(r, di)| *r -= c * di);
    }
    for i in 0..n {
        for j in 0..n {
            prob.p[i * n + j] = (0..rank)
                .map(|k| bm[k * n + i] * bm[k * n + j])
                .sum::<f64>()
                / n as f64;
        }
    }
    let mut target = vec![0.0; m];
    let mut o = cones.zero;
    for dim in prob.blocks().collect::<Vec<_>>() {
        let k = interior(rng, dim);
        for (t, v) in target[o..o + dim].iter_mut().zip(&k) {
            *t = -v;
        }
        o += dim;
    }
    for i in 0..m {
        let row = &mut prob.a[i * n..(i + 1) * n];
        let c = (dot(row, &d) - target[i]) / dd;
        row.iter_mut().zip(&d).for_each(|(r, di)| *r -= c * di);
    }
    let c = (dot(&prob.q, &d) + 1.0) / dd;
    prob.q.iter_mut().zip(&d).for_each(|(q, di)| *q -= c * di);
    let x0: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
    let ax = prob.ax(&x0);
    prob.b[..cones.zero].copy_from_slice(&ax[..cones.zero]);
    let mut o = cones.zero;
    for dim in prob.blocks().collect::<Vec<_>>() {
        let s = interior(rng, dim);
        for k in 0..dim {
            prob.b[o + k] = ax[o + k] + s[k];
        }
        o += dim;
    }
}

/// The ∞-norm distance of `v` (laid out like `b`) to `K`.
pub fn distance_to_cone(v: &[f64], cones: Cones) -> f64 {
    let mut d = 0.0f64;
    for x in &v[..cones.zero] {
        d = d.max(x.abs());
    }
    for x in &v[cones.zero..cones.zero + cones.nonneg] {
        d = d.max((-x).max(0.0));
    }
    for c in 0..cones.soc3 {
        let o = cones.zero + cones.nonneg + 3 * c;
        let (t, u1, u2) = (v[o], v[o + 1], v[o + 2]);
        let r = (u1 * u1 + u2 * u2).sqrt();
        let proj = if r <= t {
            [t, u1, u2]
        } else if r <= -t {
            [0.0; 3]
        } else {
            let k = 0.5 * (t + r);
            [k, u1 * k / r, u2 * k / r]
        };
        d = d
            .max((proj[0] - t).abs())
            .max((proj[1] - u1).abs())
            .max((proj[2] - u2).abs());
    }
    d
}

/// The balance QP's structure, with physical scales: a floating-base robot with `dof` degrees of
/// freedom (6 unactuated), `contacts` point contacts (friction μ = 0.8, minimum normal force
/// 5 N), torque limits ±150 N·m. Variables `x = (a [rad/s²], f [N], u [N·m])`; equalities
/// `M a − Gᵀ f − Sᵀ u = −h` and `G a = −Ġq̇`; rows: torque limits, minimum normal forces, one
/// friction cone per contact `(μ f_n, f_t)`. Objective: `‖a − a_des‖²` (weight 1) plus
/// `1e-4 ‖f‖² + 1e-3 ‖u‖²`. Strictly feasible by construction (`h` and `Ġq̇` from a feasible
/// `(a₀, f₀, u₀)`).
pub struct Balance {
    pub prob: Owned,
    dof: usize,
    contacts: usize,
}

impl Balance {
    pub fn new(rng: &mut Rng, dof: usize, contacts: usize) -> Self {
        let nu = dof - 6;
        let nf = 3 * contacts;
        let n = dof + nf + nu;
        let cones = Cones {
            zero: dof + nf,
            nonneg: 2 * nu + contacts,
            soc3: contacts,
        };
        let m = cones.rows().unwrap();
        let mut a = vec![0.0; m * n];
        let mut b = vec![0.0; m];
        // Mass matrix: SPD, entries of 0.01–10 kg·m², heavier at the base.
        let l: Vec<f64> = (0..dof * dof).map(|_| rng.normal()).collect();
        let mut mass = vec![0.0; dof * dof];
        for i in 0..dof {
            for j in 0..dof {
                mass[i * dof + j] = (0..dof)
                    .map(|k| l[i * dof + k] * l[j * dof + k])
                    .sum::<f64>()
                    * 0.02;
            }
            mass[i * dof + i] += if i < 6 {
                20.0
            } else {
                0.05 + 0.5 * rng.uniform().abs()
            };
        }
        // Contact Jacobian: base rows of order 1, joint rows of order 0.3 m.
        let jac: Vec<f64> = (0..nf * dof)
            .map(|k| {
                if k % dof < 6 {
                    rng.normal()
                } else {
                    0.3 * rng.normal()
                }
            })
            .collect();
        // A feasible (a₀, f₀, u₀): forces inside the cones carrying ~700 N.
        let a0: Vec<f64> = (0..dof).map(|_| 2.0 * rng.normal()).collect();
        let mut f0 = vec![0.0; nf];
        for c in 0..contacts {
            let fnorm = 700.0 / contacts as f64 * (0.5 + rng.uniform().abs());
            f0[3 * c] = fnorm;
            f0[3 * c + 1] = 0.3 * fnorm * rng.uniform();
            f0[3 * c + 2] = 0.3 * fnorm * rng.uniform();
        }
        let u0: Vec<f64> = (0..nu).map(|_| 60.0 * rng.uniform()).collect();
        // Equations of motion: M a − Jᵀ f − Sᵀ u = −h.
        for i in 0..dof {
            let row = &mut a[i * n..(i + 1) * n];
            row[..dof].copy_from_slice(&mass[i * dof..(i + 1) * dof]);
            for k in 0..nf {
                row[dof + k] = -jac[k * dof + i];
            }
            if i >= 6 {
                row[dof + nf + (i - 6)] = -1.0;
            }
            b[i] = dot(row, &[a0.as_slice(), &f0, &u0].concat());
        }
        // No slip: J a = −J̇q̇.
        for k in 0..nf {
            let i = dof + k;
            a[i * n..i * n + dof].copy_from_slice(&jac[k * dof..(k + 1) * dof]);
            b[i] = dot(&jac[k * dof..(k + 1) * dof], &a0);
        }
        // Torque limits: u ≤ 150, −u ≤ 150.
        let mut i = dof + nf;
        for j in 0..nu {
            a[i * n + dof + nf + j] = 1.0;
            b[i] = 150.0;
            a[(i + 1) * n + dof + nf + j] = -1.0;
            b[i + 1] = 150.0;
            i += 2;
        }
        // Minimum normal force: −f_n ≤ −5.
        for c in 0..contacts {
            a[i * n + dof + 3 * c] = -1.0;
            b[i] = -5.0;
            i += 1;
        }
        // Friction cones: s = (μ f_n, f_t1, f_t2) = −A f.
        for c in 0..contacts {
            a[i * n + dof + 3 * c] = -0.8;
            a[(i + 1) * n + dof + 3 * c + 1] = -1.0;
            a[(i + 2) * n + dof + 3 * c + 2] = -1.0;
            i += 3;
        }
        let mut p = vec![0.0; n * n];
        for j in 0..n {
            p[j * n + j] = if j < dof {
                1.0
            } else if j < dof + nf {
                1e-4
            } else {
                1e-3
            };
        }
        let a_des: Vec<f64> = a0.iter().map(|v| v + 3.0 * rng.normal()).collect();
        let mut q = vec![0.0; n];
        for j in 0..dof {
            q[j] = -a_des[j];
        }
        Self {
            prob: Owned {
                n,
                p,
                q,
                a,
                b,
                cones,
            },
            dof,
            contacts,
        }
    }

    /// The next tick: the bias forces, the desired accelerations and the contact-acceleration
    /// term change by a relative `amount`.
    pub fn perturb(&mut self, rng: &mut Rng, amount: f64) {
        let nf = 3 * self.contacts;
        for v in self.prob.b[..self.dof + nf].iter_mut() {
            *v += amount * (1.0 + v.abs()) * rng.uniform();
        }
        for v in self.prob.q[..self.dof].iter_mut() {
            *v += amount * (1.0 + v.abs()) * rng.uniform();
        }
    }
}
