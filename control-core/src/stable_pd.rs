//! Stable PD at the level of rigid bodies: a joint-torque controller made to act on the state
//! one control period ahead, so that its damping stays stable at low control rates.
//!
//! A PD torque computed from the state at the start of a control period and held through it
//! (the sampled loop) rings at the Nyquist rate and diverges once `k_d h / I > 2` for the
//! inertia `I` it meets (`h` the period). Tan, Liu and Turk ("Stable proportional-derivative
//! controllers", IEEE CG&A 2011) compute it instead from the state the period will end in:
//! `τ = −k_p (q + h q̇ − q̄) − k_d (q̇ + h q̈)`, with `q̈` the acceleration that `τ` itself
//! causes, which is stable for any gain. This module does that for any controller whose torques
//! act between rigid bodies (`+τ` on a joint's child, `−τ` on its parent, world vectors, as the
//! 3D walker's and the humanoid plant's joints do), without the controller's gains in closed
//! form:
//!
//! 1. every body's orientation and centre of mass are carried one period ahead at their present
//!    velocities (`q + h q̇`), and the controller is evaluated there: `τ₀`;
//! 2. its damping Jacobian `D = ∂τ/∂ω` (joint torques against every body's angular velocity) by
//!    forward differences, one evaluation per body and axis;
//! 3. the bodies' angular accelerations are modelled as `α = X τ + α_o`: `X` each body's own
//!    inverse inertia (world frame) on the joint torques it receives, `α_o` what the rest of the
//!    world does to them (joint reactions, contacts, gravity's moments, the other bodies), taken
//!    from the last period: the measured `(ω − ω_last)/Δt` less `X τ_last`;
//! 4. `τ = τ₀ + h D α`, that is `(I − h D X) τ = τ₀ + h D α_o`, solved by Gaussian elimination
//!    with partial pivoting.
//!
//! Each body's own inertia about its centre of mass is less than the inertia a joint torque
//! meets through the joints (the reactions add `m d²`). On one inertia with `k_p h = k_d / 10`
//! (the 3D walker's gains have `k_p h / k_d` = 0.03–0.05 at 200–300 Hz) the scheme settles for
//! `k_d h / I` from 3 to 100 with the inertia under-estimated up to about 7-fold, and diverges
//! with it over-estimated 2-fold or under-estimated 20-fold (the tests). So no body is treated
//! as fixed, a foot on the ground included: `α_o` carries the ground's reaction, one period
//! late.
//!
//! # What it must never do
//! Allocate, block or panic: the matrices are inside [`StablePd`] (about 55 KB, sized by
//! [`MAX_SPD_BODIES`] and [`MAX_SPD_JOINTS`]); a controller evaluation that fails, a non-finite
//! value or a singular system is an error and nothing is remembered from that tick.

use nalgebra::{Matrix3, Quaternion, UnitQuaternion, Vector3};

use crate::frames::BodyMotion;

/// Most bodies.
pub const MAX_SPD_BODIES: usize = 16;
/// Most joints.
pub const MAX_SPD_JOINTS: usize = 16;
const NT: usize = 3 * MAX_SPD_JOINTS;
const NW: usize = 3 * MAX_SPD_BODIES;

/// The angular velocity step of the forward differences, rad/s.
pub const DEFAULT_EPSILON_RAD_S: f64 = 1e-3;
/// The measured acceleration is used when the last tick lies between 0 and this many periods
/// back (a skipped tick in real time still gives a measurement; a gap does not).
pub const MAX_GAP_PERIODS: f64 = 4.0;
/// A pivot below this (relative to the system's largest entry) makes the system singular.
const PIVOT_TOLERANCE: f64 = 1e-12;

/// A joint between two bodies: its torque acts `+τ` on `child` and `−τ` on `parent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpdJoint {
    /// The parent body's index.
    pub parent: usize,
    /// The child body's index.
    pub child: usize,
}

/// Why a [`StablePd`] was not built or a tick not computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StablePdError {
    /// More bodies or joints than the capacity, or none.
    Capacity,
    /// A joint names a body that does not exist, or joins a body to itself.
    Joint(usize),
    /// A body's principal moment of inertia is not finite and positive.
    Inertia(usize),
    /// The period or the difference step is not finite and positive.
    Period,
    /// Fewer bodies in the state than the configuration has, or a non-finite or non-unit value.
    State,
    /// The controller refused one of its evaluations.
    Controller,
    /// The controller returned a non-finite torque.
    NonFinite,
    /// `I − h D X` is singular.
    Singular,
}

/// What one tick did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StablePdReport {
    /// Whether the last tick's measurement gave the rest of the world's accelerations (`α_o`);
    /// without it (the first tick, after a gap or an error) they were taken as zero.
    pub observed: bool,
    /// Controller evaluations made.
    pub evaluations: usize,
}

/// The last tick, for the observer.
#[derive(Debug, Clone, Copy)]
struct Last {
    time_s: f64,
    omega: [[f64; 3]; MAX_SPD_BODIES],
    torques: [[f64; 3]; MAX_SPD_JOINTS],
}

/// Stable PD for a controller of joint torques between rigid bodies (see the module docs).
#[derive(Debug, Clone)]
pub struct StablePd {
    period_s: f64,
    epsilon: f64,
    inertia: heapless::Vec<[f64; 3], MAX_SPD_BODIES>,
    joints: heapless::Vec<SpdJoint, MAX_SPD_JOINTS>,
    last: Option<Last>,
    /// D, row-major: joint torque component × body angular velocity component.
    d: [[f64; NW]; NT],
    /// X: body angular acceleration component × joint torque component.
    x: [[f64; NT]; NW],
    /// The system, augmented with its right-hand side.
    a: [[f64; NT + 1]; NT],
}

impl StablePd {
    /// For bodies with principal moments `inertia_kg_m2` (about each centre of mass, in the
    /// body's frame, the orientation of [`BodyMotion`]), joined by `joints`, controlled every
    /// `period_s`.
    pub fn new(
        inertia_kg_m2: &[[f64; 3]],
        joints: &[SpdJoint],
        period_s: f64,
    ) -> Result<Self, StablePdError> {
        let nb = inertia_kg_m2.len();
        if nb == 0 || nb > MAX_SPD_BODIES || joints.is_empty() || joints.len() > MAX_SPD_JOINTS {
            return Err(StablePdError::Capacity);
        }
        if !(period_s.is_finite() && period_s > 0.0) {
            return Err(StablePdError::Period);
        }
        let mut inertia = heapless::Vec::new();
        for (k, i) in inertia_kg_m2.iter().enumerate() {
            if !i.iter().all(|v| v.is_finite() && *v > 0.0) {
                return Err(StablePdError::Inertia(k));
            }
            inertia.push(*i).map_err(|_| StablePdError::Capacity)?;
        }
        let mut js = heapless::Vec::new();
        for (k, j) in joints.iter().enumerate() {
            if j.parent >= nb || j.child >= nb || j.parent == j.child {
                return Err(StablePdError::Joint(k));
            }
            js.push(*j).map_err(|_| StablePdError::Capacity)?;
        }
        Ok(Self {
            period_s,
            epsilon: DEFAULT_EPSILON_RAD_S,
            inertia,
            joints: js,
            last: None,
            d: [[0.0; NW]; NT],
            x: [[0.0; NT]; NW],
            a: [[0.0; NT + 1]; NT],
        })
    }

    /// The control period, s.
    pub fn period_s(&self) -> f64 {
        self.period_s
    }

    /// Forgets the last tick (the next one runs without the observer).
    pub fn reset(&mut self) {
        self.last = None;
    }

    /// Records the torques actually applied this tick when they differ from what
    /// [`StablePd::torques`] returned (cut to an effort, or with something added). Ignored
    /// before a tick or with fewer torques than joints.
    pub fn set_applied(&mut self, torques: &[[f64; 3]]) {
        let nj = self.joints.len();
        if let (Some(last), Some(t)) = (self.last.as_mut(), torques.get(..nj))
            && t.iter().flatten().all(|v| v.is_finite())
        {
            last.torques[..nj].copy_from_slice(t);
        }
    }

    /// The stable torques for `bodies` at `time_s` into `out` (one per joint). `eval` is the
    /// controller: it writes the joint torques it would give for the bodies it is passed into
    /// its second argument (as many as joints) and returns `false` if it refuses them. It must
    /// not change the controller's state (the walker's `plan`, not its `tick`).
    pub fn torques<F>(
        &mut self,
        time_s: f64,
        bodies: &[BodyMotion],
        mut eval: F,
        out: &mut [[f64; 3]],
    ) -> Result<StablePdReport, StablePdError>
    where
        F: FnMut(&[BodyMotion], &mut [[f64; 3]]) -> bool,
    {
        let (nb, nj) = (self.inertia.len(), self.joints.len());
        let h = self.period_s;
        let (Some(bodies), Some(out)) = (bodies.get(..nb), out.get_mut(..nj)) else {
            return Err(StablePdError::State);
        };
        self.last = self.last.filter(|_| time_s.is_finite());
        let mut now = [BodyMotion::default(); MAX_SPD_BODIES];
        let mut rot = [Matrix3::<f64>::identity(); MAX_SPD_BODIES];
        for (k, b) in bodies.iter().enumerate() {
            let ok = b.is_finite();
            let [w, x, y, z] = b.orientation;
            let q = Quaternion::new(w, x, y, z);
            let norm = libm::sqrt(q.norm_squared());
            if !(ok && norm > 0.5 && norm < 2.0 && time_s.is_finite()) {
                self.last = None;
                return Err(StablePdError::State);
            }
            let q = UnitQuaternion::new_unchecked(q / norm);
            rot[k] = *q.to_rotation_matrix().matrix();
            // One period ahead at the present velocities.
            let w = Vector3::from(b.angular_velocity_rad_s);
            let ahead = UnitQuaternion::from_scaled_axis(w * h) * q;
            let c = ahead.as_ref();
            now[k] = BodyMotion {
                com_m: [
                    b.com_m[0] + h * b.velocity_m_s[0],
                    b.com_m[1] + h * b.velocity_m_s[1],
                    b.com_m[2] + h * b.velocity_m_s[2],
                ],
                orientation: [c.w, c.i, c.j, c.k],
                velocity_m_s: b.velocity_m_s,
                angular_velocity_rad_s: b.angular_velocity_rad_s,
            };
        }
        let ahead = &mut now[..nb];

        // τ₀ and D.
        let mut t0 = [[0.0; 3]; MAX_SPD_JOINTS];
        let mut t = [[0.0; 3]; MAX_SPD_JOINTS];
        let fail = |s: &mut Self, e| {
            s.last = None;
            Err(e)
        };
        if !eval(ahead, &mut t0[..nj]) {
            return fail(self, StablePdError::Controller);
        }
        if !t0[..nj].iter().flatten().all(|v| v.is_finite()) {
            return fail(self, StablePdError::NonFinite);
        }
        let eps = self.epsilon;
        for b in 0..nb {
            for i in 0..3 {
                let saved = ahead[b].angular_velocity_rad_s[i];
                ahead[b].angular_velocity_rad_s[i] = saved + eps;
                let ok = eval(ahead, &mut t[..nj]);
                ahead[b].angular_velocity_rad_s[i] = saved;
                if !ok {
                    return fail(self, StablePdError::Controller);
                }
                for (r, (a, z)) in t[..nj]
                    .iter()
                    .flatten()
                    .zip(t0[..nj].iter().flatten())
                    .enumerate()
                {
                    let v = (a - z) / eps;
                    if !v.is_finite() {
                        return fail(self, StablePdError::NonFinite);
                    }
                    self.d[r][3 * b + i] = v;
                }
            }
        }

        // X: each body's inverse inertia, world frame, on the torques it receives.
        for row in self.x.iter_mut().take(3 * nb) {
            row[..3 * nj].fill(0.0);
        }
        let mut inv = [Matrix3::<f64>::zeros(); MAX_SPD_BODIES];
        for (k, (i, r)) in self.inertia.iter().zip(&rot).enumerate() {
            let diag = Matrix3::from_diagonal(&Vector3::new(1.0 / i[0], 1.0 / i[1], 1.0 / i[2]));
            inv[k] = r * diag * r.transpose();
        }
        for (j, jt) in self.joints.iter().enumerate() {
            for a in 0..3 {
                for c in 0..3 {
                    self.x[3 * jt.child + a][3 * j + c] += inv[jt.child][(a, c)];
                    self.x[3 * jt.parent + a][3 * j + c] -= inv[jt.parent][(a, c)];
                }
            }
        }

        // α_o from the last tick.
        let mut other = [0.0; NW];
        let dt = self.last.map(|l| time_s - l.time_s);
        let observed = match (self.last, dt) {
            (Some(last), Some(dt)) if dt > 0.0 && dt <= MAX_GAP_PERIODS * h => {
                for (k, o) in other.iter_mut().take(3 * nb).enumerate() {
                    let (b, i) = (k / 3, k % 3);
                    let mut pred = 0.0;
                    for (c, tl) in last.torques[..nj].iter().flatten().enumerate() {
                        pred += self.x[k][c] * tl;
                    }
                    *o = (bodies[b].angular_velocity_rad_s[i] - last.omega[b][i]) / dt - pred;
                }
                true
            }
            _ => false,
        };

        // (I − h D X) τ = τ₀ + h D α_o.
        let n = 3 * nj;
        let mut scale = 0.0f64;
        for r in 0..n {
            for c in 0..n {
                let mut s = 0.0;
                for k in 0..3 * nb {
                    s += self.d[r][k] * self.x[k][c];
                }
                let v = if r == c { 1.0 } else { 0.0 } - h * s;
                self.a[r][c] = v;
                scale = scale.max(v.abs());
            }
            let mut s = 0.0;
            for (k, o) in other.iter().take(3 * nb).enumerate() {
                s += self.d[r][k] * o;
            }
            self.a[r][n] = t0[r / 3][r % 3] + h * s;
        }
        if !scale.is_finite() || !solve_in_place(&mut self.a, n, scale * PIVOT_TOLERANCE) {
            return fail(self, StablePdError::Singular);
        }
        for (r, v) in out.iter_mut().flatten().enumerate() {
            *v = self.a[r][n];
        }
        if !out.iter().flatten().all(|v| v.is_finite()) {
            return fail(self, StablePdError::NonFinite);
        }
        let mut last = Last {
            time_s,
            omega: [[0.0; 3]; MAX_SPD_BODIES],
            torques: [[0.0; 3]; MAX_SPD_JOINTS],
        };
        for (o, b) in last.omega.iter_mut().zip(bodies) {
            *o = b.angular_velocity_rad_s;
        }
        last.torques[..nj].copy_from_slice(out);
        self.last = Some(last);
        Ok(StablePdReport {
            observed,
            evaluations: 1 + 3 * nb,
        })
    }
}

/// Gaussian elimination with partial pivoting on the first `n` rows of `a` (columns `0..n`, the
/// right-hand side in column `n`); the solution is left in column `n`. `false` if a pivot is
/// below `tiny`.
fn solve_in_place(a: &mut [[f64; NT + 1]; NT], n: usize, tiny: f64) -> bool {
    let n = n.min(NT);
    for col in 0..n {
        let mut piv = col;
        for r in col + 1..n {
            if a[r][col].abs() > a[piv][col].abs() {
                piv = r;
            }
        }
        let p = a[piv][col];
        if p.is_nan() || p.abs() <= tiny {
            return false;
        }
        a.swap(col, piv);
        let (top, rest) = a.split_at_mut(col + 1);
        let pivot_row = &top[col];
        for row in rest.iter_mut().take(n - col - 1) {
            let f = row[col] / p;
            if f != 0.0 {
                for (x, y) in row[col..=n].iter_mut().zip(&pivot_row[col..=n]) {
                    *x -= f * y;
                }
            }
        }
    }
    for col in (0..n).rev() {
        let s: f64 = a[col][col + 1..n]
            .iter()
            .zip(&a[col + 1..n])
            .map(|(x, row)| x * row[n])
            .sum();
        a[col][n] = (a[col][n] - s) / a[col][col];
    }
    true
}

#[cfg(test)]
mod tests;
