//! The arrival-gain solver in f32 (feature `micromath`): the same problem, answers and refusals as
//! [`crate::gains`], computed in f32 throughout with [`crate::lambert_w::compact_f32`] (Lambert W
//! within 1.6 f32 ulp, and its `exp`/`ln` within 1 ulp), for microcontrollers with a
//! single-precision FPU.
//!
//! Must never allocate, block or panic: every input, NaN and infinities included, gives finite
//! positive gains or a typed [`GainError`] (the f64 solver's error type; its positions are the f32
//! values widened). [`GainError::OutOfRange`] here means "beyond the f32 range" (about 3.4e38, and
//! gains below 1.2e−38).
//!
//! # How it follows the f64 solver
//! The normalisation, the branch table and the choice of the softer stable branch are those of
//! [`crate::gains`] (see its docs). The arguments differ where f32 calls for it:
//! - the Lambert-W argument z = −r·e^(−(1+c)) is never formed from `exp` away from the branch
//!   point (it would over- or underflow f32): the log-form entry points take
//!   ln|z| = ln|r| − (1 + c) directly;
//! - near the branch point (q = z + 1/e < 0.125) q is formed as e^(−1)·[(1 − r) − r·expm1(−c)] for
//!   |c| ≤ 0.25 (expm1 a series there: no cancellation, no `exp`), else as −e^(−1)·expm1(ln r − c);
//! - u is recovered as −(1 + c) − W or ln|W| − ln|r| by the same rule as the f64 solver.
//!
//! The gains then differ from the f64 solver's by the f32 rounding of the inputs and of each step:
//! over 8,748 arm problems the servos' damping differs by median 1.1e−7 and at most 1.4e−6
//! relative (`servo_f32`'s tests). With micromath's `ln` (absolute error ~6e−5, the solver's
//! Lambert W before `compact_f32`) it was median 9.7e−6 and max 1.5e−3.

use crate::gains::{Branch, Field, GainError, Integrator};
use crate::lambert_w::compact_f32::{
    self as lw, exp, expm1, ln, w0_from_branch_distance, w0_of_exp, w0_of_neg_exp,
    wm1_from_branch_distance, wm1_of_neg_exp,
};

/// Below this distance to the branch point the solver uses the entry points that take q.
const Q_ENTRY_LIMIT: f32 = 0.125;
/// Up to this |c| the branch distance is formed with the expm1 series.
const EXPM1_SERIES_LIMIT: f32 = 0.25;
/// Below this |1 + c| u is recovered as −(1 + c) − W; above it, as ln(−W/r) when the sum cancels.
const SUM_FORM_LIMIT: f32 = 2.0;
/// Below this ln z the positive argument z of W₀ is below 2e−35: W₀(z) = z is negligible beside
/// 1 + c.
const LN_Z_DIRECT_LIMIT: f32 = 80.0;
/// The softest gain of the fallback, as a fraction of the stability limit (as in f64).
pub const MIN_FALLBACK_FRACTION: f32 = 1e-6;
/// Bisection steps of the fallback (2^20 range × 2^24 f32 steps < 2^50).
const BISECTION_STEPS: u32 = 50;

/// One arrival problem for one degree of freedom, in f32. Angles in rad, velocities in rad/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArrivalProblemF32 {
    /// Moment of inertia about the joint axis, kg·m² (must be > 0).
    pub inertia_kgm2: f32,
    /// Current joint position, rad.
    pub position_rad: f32,
    /// Current joint velocity, rad/s.
    pub velocity_rad_s: f32,
    /// The PD setpoint the joint is pulled towards, rad.
    pub setpoint_rad: f32,
    /// The position the joint must have when the time to go has elapsed, rad.
    pub arrival_rad: f32,
    /// Time left until the arrival, s (must be > 0).
    pub time_to_go_s: f32,
}

/// Critically damped PD gains in f32 (γ² = 4km, γ > 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CriticalGainsF32 {
    /// Stiffness k, N·m/rad.
    pub stiffness_nm_per_rad: f32,
    /// Damping γ, N·m·s/rad.
    pub damping_nms_per_rad: f32,
    /// The branch the gains came from.
    pub branch: Branch,
}

/// The largest critically damped gains a control period can integrate stably, in f32.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GainLimitF32 {
    /// γ_max, N·m·s/rad.
    pub max_damping_nms_per_rad: f32,
    /// k_max = γ_max²/(4m), N·m/rad.
    pub max_stiffness_nm_per_rad: f32,
}

impl CriticalGainsF32 {
    /// k = γ²/(4m) for γ > 0 and m > 0; `None` unless both are finite and positive and k is finite.
    pub fn from_damping(
        inertia_kgm2: f32,
        damping_nms_per_rad: f32,
        branch: Branch,
    ) -> Option<Self> {
        let positive_finite = |v: f32| v.is_finite() && v > 0.0;
        if !(positive_finite(inertia_kgm2) && positive_finite(damping_nms_per_rad)) {
            return None;
        }
        let half_rate = damping_nms_per_rad / (2.0 * inertia_kgm2);
        let stiffness = inertia_kgm2 * half_rate * half_rate;
        stiffness.is_finite().then_some(Self {
            stiffness_nm_per_rad: stiffness,
            damping_nms_per_rad,
            branch,
        })
    }

    /// Clamp the damping to `limit` keeping critical damping; also says whether the clamp acted.
    pub fn clamp_to(self, limit: &GainLimitF32) -> (Self, bool) {
        if self.damping_nms_per_rad <= limit.max_damping_nms_per_rad {
            return (self, false);
        }
        (
            Self {
                stiffness_nm_per_rad: limit.max_stiffness_nm_per_rad,
                damping_nms_per_rad: limit.max_damping_nms_per_rad,
                branch: self.branch,
            },
            true,
        )
    }
}

impl GainLimitF32 {
    /// The stable limit for inertia m, period h and `integrator`, times `margin` in (0, 1]: the
    /// f32 counterpart of [`crate::gains::GainLimit::new`], with the same refusals.
    pub fn new(
        inertia_kgm2: f32,
        period_s: f32,
        integrator: Integrator,
        margin: f32,
    ) -> Result<Self, GainError> {
        check_finite(inertia_kgm2, Field::Inertia)?;
        check_finite(period_s, Field::Period)?;
        check_finite(margin, Field::Margin)?;
        if inertia_kgm2 <= 0.0 {
            return Err(GainError::NonPositiveInertia);
        }
        if period_s <= 0.0 {
            return Err(GainError::NonPositiveTime);
        }
        if !(margin > 0.0 && margin <= 1.0) {
            return Err(GainError::NonFinite(Field::Margin));
        }
        #[allow(clippy::cast_possible_truncation)] // a constant below 4, rounded to f32
        let beta = integrator.max_beta() as f32;
        let damping = margin * beta * (inertia_kgm2 / period_s);
        let gains = CriticalGainsF32::from_damping(inertia_kgm2, damping, Branch::Principal)
            .ok_or(GainError::OutOfRange)?;
        Ok(Self {
            max_damping_nms_per_rad: gains.damping_nms_per_rad,
            max_stiffness_nm_per_rad: gains.stiffness_nm_per_rad,
        })
    }
}

fn check_finite(value: f32, field: Field) -> Result<(), GainError> {
    if value.is_finite() {
        Ok(())
    } else {
        Err(GainError::NonFinite(field))
    }
}

/// The problem in normalised form: setpoint at 0, θ₀ ≥ 0 (`sign` undoes the flip).
#[derive(Debug, Clone, Copy)]
struct Normalised {
    sign: f32,
    theta0: f32,
    theta_d: f32,
    /// t_d·ω₀ (flipped).
    travel: f32,
}

impl ArrivalProblemF32 {
    fn validate(&self) -> Result<(), GainError> {
        check_finite(self.inertia_kgm2, Field::Inertia)?;
        check_finite(self.position_rad, Field::Position)?;
        check_finite(self.velocity_rad_s, Field::Velocity)?;
        check_finite(self.setpoint_rad, Field::Setpoint)?;
        check_finite(self.arrival_rad, Field::Arrival)?;
        check_finite(self.time_to_go_s, Field::TimeToGo)?;
        if self.inertia_kgm2 <= 0.0 {
            return Err(GainError::NonPositiveInertia);
        }
        if self.time_to_go_s <= 0.0 {
            return Err(GainError::NonPositiveTime);
        }
        Ok(())
    }

    fn normalise(&self) -> Result<Normalised, GainError> {
        let theta0 = self.position_rad - self.setpoint_rad;
        let theta_d = self.arrival_rad - self.setpoint_rad;
        let travel = self.time_to_go_s * self.velocity_rad_s;
        if !(theta0.is_finite() && theta_d.is_finite() && travel.is_finite()) {
            return Err(GainError::OutOfRange);
        }
        let sign = if theta0 > 0.0 || (theta0 == 0.0 && travel >= 0.0) {
            1.0
        } else {
            -1.0
        };
        Ok(Normalised {
            sign,
            theta0: sign * theta0,
            theta_d: sign * theta_d,
            travel: sign * travel,
        })
    }

    /// `offset` (normalised frame) in the caller's coordinates, if that is a finite f32.
    fn reported(&self, n: &Normalised, offset: f32) -> Option<f64> {
        let position = self.setpoint_rad + n.sign * offset;
        position.is_finite().then_some(f64::from(position))
    }
}

/// The critically damped gains that bring the joint of `problem` to its arrival position when
/// its time to go has elapsed, computed in f32: the f32 counterpart of
/// [`crate::gains::solve_arrival_gains`], with the same branch choice and refusals.
pub fn solve_arrival_gains_f32(problem: &ArrivalProblemF32) -> Result<CriticalGainsF32, GainError> {
    problem.validate()?;
    let n = problem.normalise()?;
    let (u, branch) = solve_normalised(problem, &n)?;
    let m = problem.inertia_kgm2;
    let rate = u / problem.time_to_go_s;
    let damping = 2.0 * m * rate;
    let stiffness = m * rate * rate;
    if !(damping.is_finite() && stiffness.is_finite() && damping > 0.0 && stiffness > 0.0) {
        return Err(GainError::OutOfRange);
    }
    Ok(CriticalGainsF32 {
        stiffness_nm_per_rad: stiffness,
        damping_nms_per_rad: damping,
        branch,
    })
}

/// Solve (θ₀ + travel + uθ₀)e^(−u) = θ_d for the softest u > 0.
fn solve_normalised(
    problem: &ArrivalProblemF32,
    n: &Normalised,
) -> Result<(f32, Branch), GainError> {
    if n.theta0 == 0.0 {
        return solve_at_setpoint(problem, n);
    }
    let r = n.theta_d / n.theta0;
    let c = n.travel / n.theta0;
    if !(r.is_finite() && c.is_finite()) {
        return Err(GainError::OutOfRange);
    }
    let coast = n.theta0 + n.travel;
    let one_plus_c = if coast.is_finite() {
        coast / n.theta0
    } else {
        1.0 + c
    };
    // ln|r|, also where r is subnormal or underflows (θ_d ≠ 0): −∞ only for θ_d = 0.
    let ln_abs_r = if r.is_normal() {
        ln(r.abs()).unwrap_or(f32::NEG_INFINITY)
    } else if n.theta_d != 0.0 {
        match (ln(n.theta_d.abs()), ln(n.theta0)) {
            (Some(a), Some(b)) => a - b,
            _ => return Err(GainError::OutOfRange),
        }
    } else {
        f32::NEG_INFINITY
    };
    if n.theta_d <= 0.0 {
        // Crossing: z ≥ 0, only W₀ is real.
        let w = if ln_abs_r == f32::NEG_INFINITY {
            0.0
        } else {
            let ln_z = ln_abs_r - one_plus_c;
            let w = if ln_z >= -LN_Z_DIRECT_LIMIT {
                w0_of_exp(ln_z)
            } else {
                Some(0.0) // W₀(z) ≈ z < 1e−34: u = −(1 + c) to f32 precision
            };
            w.filter(|w| w.is_finite()).ok_or(GainError::OutOfRange)?
        };
        return match positive_u(r, ln_abs_r, one_plus_c, w) {
            Some(u) => Ok((u, Branch::Principal)),
            None => Err(no_stable_gain(problem, n)),
        };
    }
    let ln_r = ln_abs_r;
    if ln_r > c {
        return Err(unreachable(problem, n, c));
    }
    // q = z + 1/e = e^(−1)·(1 − r·e^(−c)).
    let x = if c.abs() <= EXPM1_SERIES_LIMIT && r.is_normal() {
        (1.0 - r) - r * expm1(-c)
    } else {
        -expm1(ln_r - c)
    };
    let q = x * lw::INV_E;
    let ln_neg_z = ln_r - one_plus_c;
    let near_branch = q < Q_ENTRY_LIMIT;
    let q = q.max(0.0);
    let principal = if near_branch {
        w0_from_branch_distance(q)
    } else {
        w0_of_neg_exp(ln_neg_z)
    };
    if let Some(u) = principal.and_then(|w| positive_u(r, ln_r, one_plus_c, w)) {
        return Ok((u, Branch::Principal));
    }
    let lower = if near_branch {
        wm1_from_branch_distance(q)
    } else {
        wm1_of_neg_exp(ln_neg_z)
    };
    if let Some(u) = lower.and_then(|w| positive_u(r, ln_r, one_plus_c, w)) {
        return Ok((u, Branch::Lower));
    }
    Err(no_stable_gain(problem, n))
}

/// u = −(1 + c) − W, recovered without cancellation (the f64 solver's rule), if finite and > 0.
fn positive_u(r: f32, ln_abs_r: f32, one_plus_c: f32, w: f32) -> Option<f32> {
    if !w.is_finite() {
        return None;
    }
    let sum = -one_plus_c - w;
    let larger = one_plus_c.abs().max(w.abs());
    let u = if ln_abs_r == f32::NEG_INFINITY
        || one_plus_c.abs() <= SUM_FORM_LIMIT
        || sum.abs() >= 0.5 * larger
    {
        sum
    } else if w != 0.0 {
        ln(w.abs())? - ln_abs_r
    } else {
        let _ = r;
        sum
    };
    (u > 0.0 && u.is_finite()).then_some(u)
}

/// The joint starts exactly at the setpoint: θ(t) = t ω₀ e^(−at), so u = ln(t_d ω₀ / θ_d).
fn solve_at_setpoint(
    problem: &ArrivalProblemF32,
    n: &Normalised,
) -> Result<(f32, Branch), GainError> {
    let at_setpoint = GainError::Unreachable {
        limit_rad: f64::from(problem.setpoint_rad),
    };
    if n.travel == 0.0 {
        return if n.theta_d == 0.0 {
            Err(GainError::Indeterminate)
        } else {
            Err(at_setpoint)
        };
    }
    if n.theta_d <= 0.0 {
        return Err(at_setpoint);
    }
    if n.theta_d >= n.travel {
        return Err(no_stable_gain(problem, n));
    }
    let u = match (ln(n.travel), ln(n.theta_d)) {
        (Some(a), Some(b)) => a - b,
        _ => return Err(no_stable_gain(problem, n)),
    };
    if u > 0.0 && u.is_finite() {
        Ok((u, Branch::AtSetpoint))
    } else {
        Err(no_stable_gain(problem, n))
    }
}

fn no_stable_gain(problem: &ArrivalProblemF32, n: &Normalised) -> GainError {
    match problem.reported(n, n.theta0 + n.travel) {
        Some(coasting_rad) => GainError::NoStableGain { coasting_rad },
        None => GainError::OutOfRange,
    }
}

fn unreachable(problem: &ArrivalProblemF32, n: &Normalised, c: f32) -> GainError {
    let limit = if c > 0.0 {
        n.theta0 + n.travel
    } else {
        n.theta0 * exp(c)
    };
    match problem.reported(n, limit) {
        Some(limit_rad) => GainError::Unreachable { limit_rad },
        None => GainError::OutOfRange,
    }
}

/// θ(t_d) in the normalised frame for u ≥ 0: θ₀·(1 + u)e^(−u) + travel·e^(−u); never NaN.
fn offset_at(n: &Normalised, u: f32) -> f32 {
    let decay = exp(-u);
    if decay == 0.0 {
        return 0.0;
    }
    n.theta0 * ((1.0 + u) * decay) + n.travel * decay
}

#[derive(Debug, Clone, Copy)]
struct Candidate {
    gain: f32,
    u: f32,
    offset: f32,
}

impl Candidate {
    fn new(n: &Normalised, gain: f32, u: f32) -> Self {
        Self {
            gain,
            u,
            offset: offset_at(n, u),
        }
    }

    fn error(&self, target: f32) -> f32 {
        (self.offset - target).abs()
    }
}

/// `gain` inside (`lo`, `hi`), else the nearer end; NaN gives `lo`.
fn into_range(gain: f32, lo: f32, hi: f32) -> f32 {
    if gain > lo && gain < hi {
        gain
    } else if gain >= hi {
        hi
    } else {
        lo
    }
}

fn bisect(
    n: &Normalised,
    mut a: Candidate,
    mut b: Candidate,
    target: f32,
    u_per_gain: f32,
) -> Candidate {
    let (lo_gain, hi_gain) = (a.gain, b.gain);
    let a_below = a.offset < target;
    for _ in 0..BISECTION_STEPS {
        let mid = a.u + 0.5 * (b.u - a.u);
        if !(mid > a.u && mid < b.u) {
            break;
        }
        let c = Candidate {
            gain: into_range(mid / u_per_gain, lo_gain, hi_gain),
            u: mid,
            offset: offset_at(n, mid),
        };
        if (c.offset < target) == a_below {
            a = c;
        } else {
            b = c;
        }
    }
    if b.error(target) < a.error(target) {
        b
    } else {
        a
    }
}

/// The gain in [γ_min, γ_max] whose predicted arrival comes closest to the requested one: the
/// f32 counterpart of [`crate::gains::closest_arrival_gains`] (same method; at most 50 bisection
/// steps; `compact_f32`'s `exp` in the predicted arrival). `None` for an invalid problem or limit, or
/// when no predicted arrival is a finite f32.
pub fn closest_arrival_gains_f32(
    problem: &ArrivalProblemF32,
    limit: &GainLimitF32,
) -> Option<CriticalGainsF32> {
    problem.validate().ok()?;
    let n = problem.normalise().ok()?;
    let m = problem.inertia_kgm2;
    let g_max = limit.max_damping_nms_per_rad;
    let k_max = limit.max_stiffness_nm_per_rad;
    if !(g_max.is_finite() && g_max > 0.0 && k_max.is_finite() && k_max >= 0.0) {
        return None;
    }
    let g_min = MIN_FALLBACK_FRACTION * g_max;
    let g_min = if g_min > 0.0 { g_min } else { g_max };
    let u_per_gain = problem.time_to_go_s / (2.0 * m);
    let lo = Candidate::new(&n, g_min, g_min * u_per_gain);
    let hi = Candidate::new(&n, g_max, g_max * u_per_gain);
    let peak = if n.theta0 > 0.0 {
        let u_star = -(n.travel / n.theta0);
        if u_star <= lo.u {
            lo
        } else if u_star >= hi.u {
            hi
        } else {
            Candidate::new(&n, into_range(u_star / u_per_gain, g_min, g_max), u_star)
        }
    } else {
        lo
    };
    let target = n.theta_d;
    let (rising, falling) = if target >= peak.offset {
        (peak, peak)
    } else {
        let rising = if target <= lo.offset {
            lo
        } else {
            bisect(&n, lo, peak, target, u_per_gain)
        };
        let falling = if target <= hi.offset {
            hi
        } else {
            bisect(&n, peak, hi, target, u_per_gain)
        };
        (rising, falling)
    };
    let (best, branch) = if falling.error(target) < rising.error(target) {
        (falling, Branch::Lower)
    } else {
        (rising, Branch::Principal)
    };
    let (best, branch) = if lo.error(target) <= best.error(target) {
        (lo, Branch::Principal)
    } else {
        (best, branch)
    };
    if !best.offset.is_finite() {
        return None;
    }
    let branch = if n.theta0 == 0.0 {
        Branch::AtSetpoint
    } else {
        branch
    };
    if best.gain >= g_max {
        return Some(CriticalGainsF32 {
            stiffness_nm_per_rad: k_max,
            damping_nms_per_rad: g_max,
            branch,
        });
    }
    CriticalGainsF32::from_damping(m, best.gain, branch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gains::{ArrivalProblem, solve_arrival_gains};

    fn both(
        theta0: f32,
        omega0: f32,
        theta_d: f32,
        td: f32,
    ) -> (ArrivalProblemF32, ArrivalProblem) {
        let p32 = ArrivalProblemF32 {
            inertia_kgm2: 0.67,
            position_rad: theta0,
            velocity_rad_s: omega0,
            setpoint_rad: 0.0,
            arrival_rad: theta_d,
            time_to_go_s: td,
        };
        let p64 = ArrivalProblem {
            inertia_kgm2: f64::from(p32.inertia_kgm2),
            position_rad: f64::from(theta0),
            velocity_rad_s: f64::from(omega0),
            setpoint_rad: 0.0,
            arrival_rad: f64::from(theta_d),
            time_to_go_s: f64::from(td),
        };
        (p32, p64)
    }

    #[test]
    fn same_branch_and_gain_as_f64_on_the_table_cases() {
        for (t0, w0, td_pos, td) in [
            (1.0, 0.0, 0.05, 1.0),   // W₋₁
            (1.0, -0.5, 0.55, 1.0),  // two stable: W₀
            (1.0, -2.0, -0.5, 1.0),  // crossing
            (0.0, 1.0, 0.2, 1.0),    // at the setpoint
            (1.0, 0.0, 0.999, 0.01), // near the branch point
        ] {
            let (p32, p64) = both(t0, w0, td_pos, td);
            let g32 = solve_arrival_gains_f32(&p32).unwrap();
            let g64 = solve_arrival_gains(&p64).unwrap();
            assert_eq!(g32.branch, g64.branch, "{p64:?}");
            let rel = (f64::from(g32.damping_nms_per_rad) / g64.damping_nms_per_rad - 1.0).abs();
            assert!(rel < 1e-2, "{p64:?}: {g32:?} vs {g64:?}");
        }
    }

    #[test]
    fn same_refusals_as_f64() {
        let cases = [
            (1.0, 0.0, 2.0, 1.0),   // unreachable
            (1.0, -0.5, -0.5, 1.0), // no stable gain
            (0.0, 0.0, 0.0, 1.0),   // indeterminate
            (f32::NAN, 0.0, 0.0, 1.0),
            (1.0, 0.0, 0.5, 0.0),
        ];
        for (t0, w0, td_pos, td) in cases {
            let (p32, p64) = both(t0, w0, td_pos, td);
            let e32 = solve_arrival_gains_f32(&p32).unwrap_err();
            let e64 = solve_arrival_gains(&p64).unwrap_err();
            assert_eq!(
                core::mem::discriminant(&e32),
                core::mem::discriminant(&e64),
                "{p64:?}"
            );
        }
    }

    #[test]
    fn never_nan_on_arbitrary_bits() {
        let limit = GainLimitF32::new(0.67, 0.005, Integrator::SemiImplicitEuler, 0.5).unwrap();
        let mut state = 0x9e37_79b9_u32;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            f32::from_bits(state)
        };
        for _ in 0..200_000 {
            let p = ArrivalProblemF32 {
                inertia_kgm2: next().abs(),
                position_rad: next(),
                velocity_rad_s: next(),
                setpoint_rad: next(),
                arrival_rad: next(),
                time_to_go_s: next().abs(),
            };
            if let Ok(g) = solve_arrival_gains_f32(&p) {
                assert!(g.damping_nms_per_rad > 0.0 && g.stiffness_nm_per_rad.is_finite());
            }
            if let Some(g) = closest_arrival_gains_f32(&p, &limit) {
                assert!(g.damping_nms_per_rad > 0.0 && g.stiffness_nm_per_rad.is_finite());
            }
        }
    }
}
