//! The analytic arrival-gain solver: critically damped PD gains that bring a joint from its
//! current position and velocity to a required position at a required time (Allen, Neff and
//! Faloutsos, "Pose Control in Dynamic Conditions", eq. 6), the largest gains a control period can
//! integrate stably, and a clamp that says when it acted.
//!
//! Must never allocate, block or panic: every input, NaN and infinities included, gives either
//! finite positive gains or a typed [`GainError`].
//!
//! # The solution
//! Shift the setpoint `s` to 0 and flip signs so that the joint starts on the positive side
//! (θ₀ > 0). Under PD control τ = k(s − θ) − γω with critical damping γ² = 4km the joint moves as
//! θ(t) = (θ₀ + t(ω₀ + aθ₀))e^(−at), a = γ/(2m). With u = a·t_d, r = θ_d/θ₀ and c = t_d ω₀/θ₀ the
//! arrival condition θ(t_d) = θ_d reads (1 + c + u)e^(−u) = r, whose solutions are
//! u = −(1 + c + W(z)), z = −r e^(−1−c), for either real branch W of Lambert W. Only u > 0 is a
//! stable controller. The branch follows the table of docs/ARCHITECTURE.md ("The gain solver"):
//!
//! | case | W₀ | W₋₁ |
//! |---|---|---|
//! | ω₀ = 0, 0 < r < 1 | γ < 0 | γ > 0 |
//! | moving towards, 0 < r ≤ 1 + c | γ ≤ 0 | γ > 0 |
//! | moving towards, max(1 + c, 0) < r ≤ e^c | γ > 0 (soft) | γ > 0 (stiff) |
//! | moving away, 0 < r < 1 + c | γ < 0 | γ > 0 |
//! | crossing, r ≤ 0 | γ > 0 iff c < −1 and r > 1 + c | not real |
//! | r > e^c | unreachable | unreachable |
//!
//! Where both branches give γ > 0 the solver takes the softer (W₀): the softest controller that
//! still arrives on time, so the limb yields naturally to knocks.
//!
//! # Numerics
//! - Near the branch point z = −1/e the solver never forms z and shifts it by 1/e (that loses up to
//!   1e−3 relative in γ); it forms q = z + 1/e = e^(−1)·[(1 − r) − r·expm1(−c)] directly and calls
//!   the Lambert-W entry points that take q.
//! - When |z| over- or underflows, it works with ln|z| = ln|r| − 1 − c.
//! - It recovers u either as −(1 + c) − W (when |1 + c| is small) or as u = ln(−W/r), which follows
//!   from W e^W = z and has no cancellation when |c| is large.
//! - k is formed as m·(u/t_d)² so that it does not overflow through γ².
//!
//! # Stability of the sampled loop
//! A PD law sampled every h seconds and held in between is only stable up to a gain that depends
//! on how the plant integrates. With α = h²k/m and β = hγ/m, critical damping gives α = β²/4 and
//! the closed loop x_{n+1} = Φ x_n has characteristic polynomial P(λ) = λ² − tr Φ·λ + det Φ. The
//! Jury conditions P(1) > 0, P(−1) > 0 and |det Φ| < 1 give:
//!
//! | integrator of the plant | tr Φ | det Φ | stable for |
//! |---|---|---|---|
//! | semi-implicit (symplectic) Euler, `v += h·a; x += h·v` (Rapier) | 2 − α − β | 1 − β | β < 4(√2 − 1) ≈ 1.657 |
//! | explicit Euler, `x += h·v; v += h·a` | 2 − β | 1 − β + α | β < 4 |
//! | exact integration with the torque held (zero-order hold) | 2 − α/2 − β | 1 − β + α/2 | β < 2 |
//!
//! For semi-implicit Euler, P(−1) = 4 − α − 2β = 4 − β²/4 − 2β > 0 is the binding condition; for
//! explicit Euler the double root 1 − β/2 must lie inside the unit circle; for the exact
//! zero-order-hold loop P(−1) = 4 − 2β. So γ_max = β_max·m/h and k_max = γ_max²/(4m).
//!
//! [`GainLimit`] describes only that critically damped family. For any pair (k, γ) the same
//! trace and determinant hold with α and β independent ([`Integrator::loop_trace_det`]);
//! [`Integrator::is_stable`] applies Jury's conditions to them (for semi-implicit Euler the
//! stable region is the triangle α > 0, β > 0, α + 2β < 4), and
//! [`Integrator::max_normalized_frequency`] gives, for a damping ratio ζ, the largest stable
//! s = h√(k/m) (α = s², β = 2ζs).

use core::fmt;

use crate::lambert_w::{self, INV_E_HI, INV_E_LO};

/// Beyond this |ln|z|| the solver leaves the direct argument for the logarithmic entry points.
const LN_Z_DIRECT_LIMIT: f64 = 700.0;

/// Below this distance to the branch point the solver uses the entry points that take q.
const Q_ENTRY_LIMIT: f64 = 0.125;

/// The softest gain [`closest_arrival_gains`] considers, as a fraction of the stability limit
/// (γ_min = this × γ_max stands for "coast": zero gain is not stable).
pub const MIN_FALLBACK_FRACTION: f64 = 1e-6;

/// At most this many bisection steps locate an arrival inside the fallback's gain range (enough
/// to reach adjacent doubles: the range spans a factor 1/[`MIN_FALLBACK_FRACTION`] = 2^20, and
/// 2^(20 + 53) < 2^80).
const BISECTION_STEPS: u32 = 80;

/// Beyond this |x|, r·e^x is formed as (r·e^(x/2))·e^(x/2) so that e^x cannot overflow first.
const EXP_SPLIT_LIMIT: f64 = 700.0;

/// Below this |1 + c| the solver recovers u as −(1 + c) − W; above it, as ln(−W/r).
const SUM_FORM_LIMIT: f64 = 2.0;

/// One arrival problem for one degree of freedom. Angles in rad, velocities in rad/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArrivalProblem {
    /// Moment of inertia about the joint axis, kg·m² (must be > 0).
    pub inertia_kgm2: f64,
    /// Current joint position, rad.
    pub position_rad: f64,
    /// Current joint velocity, rad/s.
    pub velocity_rad_s: f64,
    /// The PD setpoint the joint is pulled towards, rad.
    pub setpoint_rad: f64,
    /// The position the joint must have when the time to go has elapsed, rad.
    pub arrival_rad: f64,
    /// Time left until the arrival, s (must be > 0).
    pub time_to_go_s: f64,
}

/// Which field of an [`ArrivalProblem`] (or of a gain-limit request) was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Field {
    /// `inertia_kgm2`.
    Inertia,
    /// `position_rad`.
    Position,
    /// `velocity_rad_s`.
    Velocity,
    /// `setpoint_rad`.
    Setpoint,
    /// `arrival_rad`.
    Arrival,
    /// `time_to_go_s`.
    TimeToGo,
    /// The control period.
    Period,
    /// The stability margin.
    Margin,
}

/// Which Lambert-W branch produced a gain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Branch {
    /// The principal branch W₀: the softer solution.
    Principal,
    /// The lower branch W₋₁: the stiffer solution.
    Lower,
    /// No Lambert W was needed: the joint starts exactly at the setpoint, so the motion is
    /// t·ω₀·e^(−at) and u = ln(t_d ω₀ / θ_d).
    AtSetpoint,
}

/// Why no critically damped gain can be returned.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum GainError {
    /// An input is NaN or infinite.
    NonFinite(Field),
    /// The inertia is zero or negative.
    NonPositiveInertia,
    /// The time to go (or the control period) is zero or negative.
    NonPositiveTime,
    /// The arrival position lies beyond what any critically damped motion from this state
    /// reaches (z < −1/e, i.e. θ_d/θ₀ > e^(t_d ω₀/θ₀)). Also returned when the joint rests
    /// exactly at the setpoint and the arrival differs from it, and when it starts at the
    /// setpoint and the arrival lies on the far side of it from the motion.
    ///
    /// `limit_rad` (caller's coordinates) is the limit of what *stable* gains reach at the
    /// deadline: the supremum (or infimum, on the mirrored side) of θ(t_d) over all γ ∈ (0, ∞),
    /// with no stability clamp (this function has no [`GainLimit`]; [`closest_arrival_gains`]
    /// applies one). With u = γt_d/(2m) the position θ(t_d) = (θ₀ + t_d ω₀ + uθ₀)e^(−u) peaks
    /// at u = −t_d ω₀/θ₀, so in the setpoint-relative frame with θ₀ > 0:
    /// - moving towards the setpoint (or at rest): θ₀·e^(t_d ω₀/θ₀), the peak, attained by
    ///   γ = −2mω₀/θ₀ (approached as γ → 0 at rest);
    /// - moving away: θ₀ + t_d ω₀, the coasting position, approached as γ → 0 but not attained
    ///   (the peak would need γ < 0);
    /// - starting at the setpoint: the setpoint.
    Unreachable {
        /// The furthest arrival position stable gains approach, rad.
        limit_rad: f64,
    },
    /// Real solutions exist but none has γ > 0: only a destabilising (negative) gain would arrive
    /// on time. `coasting_rad` is where the joint would be at the deadline with zero gain (what
    /// stable gains approach as γ → 0; for a crossing that is too slow, stiff gains come closer
    /// to the arrival, towards the setpoint: see [`closest_arrival_gains`]).
    NoStableGain {
        /// Position at the deadline under zero gain, rad.
        coasting_rad: f64,
    },
    /// The joint rests exactly at the setpoint and the arrival is the setpoint: every gain
    /// arrives, so none is singled out.
    Indeterminate,
    /// The problem's scales are too far apart for f64: the offsets from the setpoint or
    /// t_d·ω₀ overflow, a ratio of them (θ_d/θ₀, t_d ω₀/θ₀) overflows, the gain (γ or k) over- or
    /// underflows, or a position the error would report (the coasting position or the limit of
    /// [`GainError::Unreachable`]) is not a finite f64. Never returned for a problem whose
    /// solution and every intermediate fit in f64.
    OutOfRange,
}

impl fmt::Display for GainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NonFinite(field) => write!(f, "{field:?} is not a finite number"),
            Self::NonPositiveInertia => write!(f, "inertia must be > 0"),
            Self::NonPositiveTime => write!(f, "time must be > 0"),
            Self::Unreachable { limit_rad } => write!(
                f,
                "arrival unreachable by any critically damped motion: the furthest reachable is {limit_rad} rad"
            ),
            Self::NoStableGain { coasting_rad } => write!(
                f,
                "only a negative gain arrives on time (zero gain would coast to {coasting_rad} rad)"
            ),
            Self::Indeterminate => write!(f, "joint rests at the setpoint: every gain arrives"),
            Self::OutOfRange => write!(f, "problem scales exceed the f64 range"),
        }
    }
}

impl core::error::Error for GainError {}

/// Critically damped PD gains (γ² = 4km, γ > 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CriticalGains {
    /// Stiffness k, N·m/rad.
    pub stiffness_nm_per_rad: f64,
    /// Damping γ, N·m·s/rad.
    pub damping_nms_per_rad: f64,
    /// The branch the gains came from.
    pub branch: Branch,
}

impl CriticalGains {
    /// Critically damped gains with the given damping γ > 0 about an axis of inertia m > 0:
    /// k = γ²/(4m). Returns `None` unless both are finite and positive and k is finite.
    pub fn from_damping(
        inertia_kgm2: f64,
        damping_nms_per_rad: f64,
        branch: Branch,
    ) -> Option<Self> {
        let positive_finite = |v: f64| v.is_finite() && v > 0.0;
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

    /// Clamp the damping to `limit` keeping critical damping (k follows γ²/(4m)); the result
    /// says whether the clamp acted.
    pub fn clamp_to(self, limit: &GainLimit) -> Clamped {
        if self.damping_nms_per_rad <= limit.max_damping_nms_per_rad {
            return Clamped {
                gains: self,
                acted: false,
                requested_damping_nms_per_rad: self.damping_nms_per_rad,
            };
        }
        Clamped {
            gains: Self {
                stiffness_nm_per_rad: limit.max_stiffness_nm_per_rad,
                damping_nms_per_rad: limit.max_damping_nms_per_rad,
                branch: self.branch,
            },
            acted: true,
            requested_damping_nms_per_rad: self.damping_nms_per_rad,
        }
    }
}

/// The result of [`CriticalGains::clamp_to`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clamped {
    /// The gains after the clamp.
    pub gains: CriticalGains,
    /// Whether the clamp lowered the gains.
    pub acted: bool,
    /// The damping that was asked for, N·m·s/rad.
    pub requested_damping_nms_per_rad: f64,
}

/// How the plant integrates between control samples (see the module docs for the bounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Integrator {
    /// Semi-implicit (symplectic) Euler, velocity first: Rapier's integrator. β < 4(√2 − 1).
    #[default]
    SemiImplicitEuler,
    /// Explicit Euler, position first. β < 4.
    ExplicitEuler,
    /// Exact integration with the torque held over the period (a continuous plant). β < 2.
    ZeroOrderHoldExact,
}

impl Integrator {
    /// The largest β = hγ/m for which the critically damped sampled loop is stable.
    pub fn max_beta(self) -> f64 {
        match self {
            // 4(√2 − 1)
            Self::SemiImplicitEuler => 1.656_854_249_492_380_2,
            Self::ExplicitEuler => 4.0,
            Self::ZeroOrderHoldExact => 2.0,
        }
    }

    /// Trace and determinant of the sampled PD loop's transition matrix Φ for any gains, from
    /// α = h²k/m and β = hγ/m (the table of the module docs; critical damping is α = β²/4).
    pub fn loop_trace_det(self, alpha: f64, beta: f64) -> (f64, f64) {
        match self {
            Self::SemiImplicitEuler => (2.0 - alpha - beta, 1.0 - beta),
            Self::ExplicitEuler => (2.0 - beta, 1.0 - beta + alpha),
            Self::ZeroOrderHoldExact => (2.0 - 0.5 * alpha - beta, 1.0 - beta + 0.5 * alpha),
        }
    }

    /// Whether PD gains with α = h²k/m and β = hγ/m (any pair, not only critically damped) are
    /// a stable sampled loop: both roots of P(λ) = λ² − tr Φ·λ + det Φ strictly inside the unit
    /// circle, by Jury's conditions P(1) > 0, P(−1) > 0, |det Φ| < 1. P(1) = α for all three
    /// integrators, so k = 0 is never stable (the position drifts). For semi-implicit Euler the
    /// region is the triangle α > 0, β > 0, α + 2β < 4 (P(−1) = 4 − α − 2β; with α > 0 it
    /// implies β < 2, i.e. det Φ = 1 − β > −1). NaN gives `false`.
    pub fn is_stable(self, alpha: f64, beta: f64) -> bool {
        let (tr, det) = self.loop_trace_det(alpha, beta);
        1.0 - tr + det > 0.0 && 1.0 + tr + det > 0.0 && det.abs() < 1.0
    }

    /// s*(ζ): for gains of damping ratio ζ = γ/(2√(km)) > 0, the sampled loop is stable exactly
    /// for normalised natural frequencies s = h√(k/m) in (0, s*). With α = s² and β = 2ζs the
    /// Jury conditions become, for
    /// - semi-implicit Euler: s² + 4ζs < 4 (binding; |det Φ| < 1 needs only s < 1/ζ, which it
    ///   implies), so s* = 2/(ζ + √(1 + ζ²));
    /// - explicit Euler: α < β, i.e. s < 2ζ, and for ζ ≥ 1 also s² − 4ζs + 4 > 0 below its
    ///   smaller root: s* = 2ζ for ζ < 1, 2/(ζ + √(ζ² − 1)) for ζ ≥ 1 (det Φ > −1 binds later);
    /// - exact zero-order hold: P(−1) = 4 − 4ζs > 0 and α/2 < β: s* = min(1/ζ, 4ζ) (det Φ > −1
    ///   binds later).
    ///
    /// At ζ = 1 this is [`Self::max_beta`]/2. Returns NaN for ζ NaN or ≤ 0 (no damping: never
    /// strictly stable except marginally), +∞ never.
    pub fn max_normalized_frequency(self, zeta: f64) -> f64 {
        if zeta.is_nan() || zeta <= 0.0 {
            return f64::NAN;
        }
        // ζ + √(ζ² ± 1) without overflow for huge ζ: ζ(1 + √(1 ± 1/ζ²)).
        let sum = |sign: f64| zeta * (1.0 + libm::sqrt(1.0 + sign / (zeta * zeta)));
        match self {
            Self::SemiImplicitEuler => 2.0 / sum(1.0),
            Self::ExplicitEuler if zeta < 1.0 => 2.0 * zeta,
            Self::ExplicitEuler => 2.0 / sum(-1.0),
            Self::ZeroOrderHoldExact => (1.0 / zeta).min(4.0 * zeta),
        }
    }
}

/// The largest critically damped gains a control period can integrate stably, scaled by a margin.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GainLimit {
    /// γ_max, N·m·s/rad.
    pub max_damping_nms_per_rad: f64,
    /// k_max = γ_max²/(4m), N·m/rad.
    pub max_stiffness_nm_per_rad: f64,
}

impl GainLimit {
    /// The stable limit for inertia m, control period h and `integrator`, multiplied by `margin`
    /// in (0, 1] (1 is the edge of instability: use less).
    pub fn new(
        inertia_kgm2: f64,
        period_s: f64,
        integrator: Integrator,
        margin: f64,
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
        let damping = margin * integrator.max_beta() * (inertia_kgm2 / period_s);
        let gains = CriticalGains::from_damping(inertia_kgm2, damping, Branch::Principal)
            .ok_or(GainError::OutOfRange)?;
        Ok(Self {
            max_damping_nms_per_rad: gains.damping_nms_per_rad,
            max_stiffness_nm_per_rad: gains.stiffness_nm_per_rad,
        })
    }
}

fn check_finite(value: f64, field: Field) -> Result<(), GainError> {
    if value.is_finite() {
        Ok(())
    } else {
        Err(GainError::NonFinite(field))
    }
}

/// The problem in normalised form: setpoint at 0, θ₀ ≥ 0 (sign `sign` undoes the flip).
#[derive(Debug, Clone, Copy)]
struct Normalised {
    sign: f64,
    theta0: f64,
    theta_d: f64,
    /// t_d·ω₀ (flipped).
    travel: f64,
}

impl ArrivalProblem {
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

    /// Back from the normalised frame to the caller's coordinates.
    fn denormalise(&self, n: &Normalised, offset: f64) -> f64 {
        self.setpoint_rad + n.sign * offset
    }
}

/// The critically damped gains that bring the joint of `problem` to its arrival position when
/// its time to go has elapsed; the softer of two where both branches are stable.
///
/// Never panics; see [`GainError`] for every refusal.
pub fn solve_arrival_gains(problem: &ArrivalProblem) -> Result<CriticalGains, GainError> {
    problem.validate()?;
    let n = problem.normalise()?;
    let (u, branch) = solve_normalised(problem, &n)?;
    let m = problem.inertia_kgm2;
    let rate = u / problem.time_to_go_s;
    let damping = 2.0 * m * rate;
    let stiffness = m * rate * rate;
    // Both must be finite and positive: a gain that under- or overflows is out of range.
    if !(damping.is_finite() && stiffness.is_finite() && damping > 0.0 && stiffness > 0.0) {
        return Err(GainError::OutOfRange);
    }
    Ok(CriticalGains {
        stiffness_nm_per_rad: stiffness,
        damping_nms_per_rad: damping,
        branch,
    })
}

/// Solve (θ₀ + travel + u θ₀)e^(−u) = θ_d for the softest u > 0.
fn solve_normalised(problem: &ArrivalProblem, n: &Normalised) -> Result<(f64, Branch), GainError> {
    if n.theta0 == 0.0 {
        return solve_at_setpoint(problem, n);
    }
    let r = n.theta_d / n.theta0;
    let c = n.travel / n.theta0;
    if !(r.is_finite() && c.is_finite()) {
        return Err(GainError::OutOfRange);
    }
    // 1 + c as (θ₀ + t_d ω₀)/θ₀: one rounding of a sum that is exact near c = −1 (Sterbenz),
    // where 1 + c would carry the rounding of c, ~1e−16 absolute.
    let coast = n.theta0 + n.travel;
    let one_plus_c = if coast.is_finite() {
        coast / n.theta0
    } else {
        1.0 + c
    };
    // ln|r|, also where r itself is subnormal or underflows to 0 (θ_d ≠ 0): −∞ only for θ_d = 0.
    let r_normal = r.is_normal();
    let ln_abs_r = if r_normal {
        libm::log(r.abs())
    } else if n.theta_d != 0.0 {
        libm::log(n.theta_d.abs()) - libm::log(n.theta0)
    } else {
        f64::NEG_INFINITY
    };
    if n.theta_d <= 0.0 {
        // Crossing (or arriving exactly at the setpoint): z ≥ 0, only W₀ is real.
        let w = principal_for_nonnegative_z(r, ln_abs_r, one_plus_c)?;
        return match positive_u(r, ln_abs_r, one_plus_c, w) {
            Some(u) => Ok((u, Branch::Principal)),
            None => Err(no_stable_gain(problem, n)),
        };
    }
    // Arriving from the same side: z < 0. Reachable iff z ≥ −1/e, i.e. ln r ≤ c.
    let ln_r = ln_abs_r;
    if ln_r > c {
        return Err(unreachable(problem, n, c));
    }
    let ln_abs_z = ln_r - one_plus_c;
    // The argument in the form that keeps it accurate: its logarithm when |z| underflows, the
    // distance q to the branch point near it, z itself elsewhere.
    let argument = if ln_abs_z < -LN_Z_DIRECT_LIMIT {
        Argument::LnNeg(ln_abs_z)
    } else {
        // q = z + 1/e = e^(−1)·[(1 − r) − r·expm1(−c)], formed without cancellation; for
        // −c beyond the range of exp (possible only with r < e^c, i.e. a tiny r) as
        // e^(−1)·(1 − r·e^(−c)), r·e^(−c) formed without overflowing; for an r that is not a
        // normal f64 (its digits are lost) as −e^(−1)·expm1(ln r − c) from ln r.
        let x = if !r_normal {
            -libm::expm1(ln_r - c)
        } else if -c <= EXP_SPLIT_LIMIT {
            (1.0 - r) - r * libm::expm1(-c)
        } else {
            1.0 - mul_exp(r, -c)
        };
        let q = x * INV_E_HI + x * INV_E_LO;
        if q < Q_ENTRY_LIMIT {
            Argument::BranchDistance(if q < 0.0 { 0.0 } else { q })
        } else if r_normal {
            Argument::Direct(-mul_exp(r, -one_plus_c))
        } else {
            Argument::Direct(-libm::exp(ln_abs_z))
        }
    };
    // The softer branch first; the stiffer only when the softer is not stable.
    if let Some(u) = argument
        .w0()
        .and_then(|w| positive_u(r, ln_r, one_plus_c, w))
    {
        return Ok((u, Branch::Principal));
    }
    if let Some(u) = argument
        .wm1()
        .and_then(|w| positive_u(r, ln_r, one_plus_c, w))
    {
        return Ok((u, Branch::Lower));
    }
    Err(no_stable_gain(problem, n))
}

/// r·e^x without e^x overflowing on its own (for |x| up to ~1400 the product is finite whenever
/// the exact one is).
fn mul_exp(r: f64, x: f64) -> f64 {
    if x.abs() <= EXP_SPLIT_LIMIT {
        r * libm::exp(x)
    } else {
        let half = libm::exp(0.5 * x);
        (r * half) * half
    }
}

/// A negative Lambert-W argument z ∈ [−1/e, 0) in the form that keeps it accurate.
#[derive(Debug, Clone, Copy)]
enum Argument {
    /// z itself.
    Direct(f64),
    /// q = z + 1/e, near the branch point.
    BranchDistance(f64),
    /// ln(−z), when z underflows.
    LnNeg(f64),
}

impl Argument {
    fn w0(self) -> Option<f64> {
        match self {
            Self::Direct(z) => lambert_w::w0(z),
            Self::BranchDistance(q) => lambert_w::w0_from_branch_distance(q),
            // W₀(z) = z(1 − z + …): for |z| < e^(−700) it is z to full precision.
            Self::LnNeg(l) => Some(-libm::exp(l)),
        }
    }

    fn wm1(self) -> Option<f64> {
        match self {
            Self::Direct(z) => lambert_w::wm1(z),
            Self::BranchDistance(q) => lambert_w::wm1_from_branch_distance(q),
            Self::LnNeg(l) => lambert_w::wm1_of_neg_exp(l),
        }
    }
}

/// W₀(z) for z = −r e^(−(1+c)) ≥ 0 (r ≤ 0, ln|r| = `ln_abs_r`), through the logarithm when z
/// over- or underflows or r is not a normal f64.
fn principal_for_nonnegative_z(r: f64, ln_abs_r: f64, one_plus_c: f64) -> Result<f64, GainError> {
    if ln_abs_r == f64::NEG_INFINITY {
        return Ok(0.0);
    }
    let ln_z = ln_abs_r - one_plus_c;
    let w = if !(-LN_Z_DIRECT_LIMIT..=LN_Z_DIRECT_LIMIT).contains(&ln_z) {
        lambert_w::w0_of_exp(ln_z)
    } else if r.is_normal() {
        lambert_w::w0(-mul_exp(r, -one_plus_c))
    } else {
        lambert_w::w0(libm::exp(ln_z))
    };
    w.filter(|w| w.is_finite()).ok_or(GainError::OutOfRange)
}

/// u = −(1 + c) − W, recovered without cancellation, if it is a finite positive number.
///
/// The sum is used whenever it cancels at most one bit (−(1 + c) and −W of the same sign, or
/// one at most a third of the other), and whenever |1 + c| is small. In particular a tiny |z|
/// (W₀(z) ≈ z, possibly subnormal or zero) gives u = −(1 + c) − W, which rounds to the exact
/// u = −(1 + c) once |W| is below half an ulp of it; the logarithmic form below would divide a
/// subnormal W by r and lose most of the digits. Only when the sum cancels and |1 + c| is large
/// (W₋₁ for a joint moving away, W₀ for a fast crossing) is u = ln(−W/r) used, from
/// W e^W = −r e^(−1−c); when that ratio leaves the normal range, as ln|W| − ln|r|
/// (`ln_abs_r` = ln|r|, formed by the caller also where r underflows).
fn positive_u(r: f64, ln_abs_r: f64, one_plus_c: f64, w: f64) -> Option<f64> {
    if !w.is_finite() {
        return None;
    }
    let sum = -one_plus_c - w;
    let larger = one_plus_c.abs().max(w.abs());
    let u = if ln_abs_r == f64::NEG_INFINITY
        || one_plus_c.abs() <= SUM_FORM_LIMIT
        || sum.abs() >= 0.5 * larger
    {
        sum
    } else {
        let ratio = -w / r;
        if ratio.is_normal() && ratio > 0.0 {
            libm::log(ratio)
        } else if w != 0.0 {
            libm::log(w.abs()) - ln_abs_r
        } else {
            sum
        }
    };
    (u > 0.0 && u.is_finite()).then_some(u)
}

/// The joint starts exactly at the setpoint: θ(t) = t ω₀ e^(−at), so u = ln(t_d ω₀ / θ_d).
fn solve_at_setpoint(problem: &ArrivalProblem, n: &Normalised) -> Result<(f64, Branch), GainError> {
    if n.travel == 0.0 {
        return if n.theta_d == 0.0 {
            Err(GainError::Indeterminate)
        } else {
            Err(GainError::Unreachable {
                limit_rad: problem.setpoint_rad,
            })
        };
    }
    // travel > 0 after normalisation. Reachable by critically damped motions: θ_d > 0.
    if n.theta_d <= 0.0 {
        // Stable gains approach the setpoint (γ → ∞) but never reach it.
        return Err(GainError::Unreachable {
            limit_rad: problem.setpoint_rad,
        });
    }
    if n.theta_d >= n.travel {
        return Err(no_stable_gain(problem, n));
    }
    let ratio = n.travel / n.theta_d;
    let u = if ratio.is_finite() {
        libm::log(ratio)
    } else {
        libm::log(n.travel) - libm::log(n.theta_d)
    };
    if u > 0.0 && u.is_finite() {
        Ok((u, Branch::AtSetpoint))
    } else {
        Err(no_stable_gain(problem, n))
    }
}

/// `offset` (normalised frame) in the caller's coordinates, if that is a finite f64.
fn reported(problem: &ArrivalProblem, n: &Normalised, offset: f64) -> Option<f64> {
    let position = problem.denormalise(n, offset);
    position.is_finite().then_some(position)
}

/// [`GainError::NoStableGain`] with the coasting position, or `OutOfRange` if it is not finite.
fn no_stable_gain(problem: &ArrivalProblem, n: &Normalised) -> GainError {
    match reported(problem, n, n.theta0 + n.travel) {
        Some(coasting_rad) => GainError::NoStableGain { coasting_rad },
        None => GainError::OutOfRange,
    }
}

/// [`GainError::Unreachable`] for θ₀ > 0 and c = t_d ω₀/θ₀: the supremum over γ > 0 of θ(t_d),
/// θ₀e^c when the peak u = −c is a stable gain (c ≤ 0), the coasting position θ₀(1 + c) when the
/// joint moves away (c > 0); `OutOfRange` if it is not a finite f64.
fn unreachable(problem: &ArrivalProblem, n: &Normalised, c: f64) -> GainError {
    let limit = if c > 0.0 {
        n.theta0 + n.travel
    } else {
        n.theta0 * libm::exp(c)
    };
    match reported(problem, n, limit) {
        Some(limit_rad) => GainError::Unreachable { limit_rad },
        None => GainError::OutOfRange,
    }
}

/// θ(t_d) in the normalised frame for u = γt_d/(2m) ≥ 0: (θ₀ + travel + uθ₀)e^(−u), formed as
/// θ₀·(1 + u)e^(−u) + travel·e^(−u) so that no intermediate overflows unless the result does
/// ((1 + u)e^(−u) ≤ 1). Never NaN for finite θ₀, travel and u ≥ 0 (+∞ included: 0).
fn offset_at(n: &Normalised, u: f64) -> f64 {
    let decay = libm::exp(-u);
    if decay == 0.0 {
        return 0.0;
    }
    n.theta0 * ((1.0 + u) * decay) + n.travel * decay
}

/// One gain of the fallback's range and where it puts the joint at the deadline.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    /// γ, N·m·s/rad.
    gain: f64,
    /// u = γt_d/(2m).
    u: f64,
    /// θ(t_d) in the normalised frame.
    offset: f64,
}

impl Candidate {
    fn new(n: &Normalised, gain: f64, u: f64) -> Self {
        Self {
            gain,
            u,
            offset: offset_at(n, u),
        }
    }

    /// |θ(t_d) − θ_d| (+∞ if that overflows).
    fn error(&self, target: f64) -> f64 {
        (self.offset - target).abs()
    }
}

/// `gain` if it lies strictly inside (`lo`, `hi`), else the nearer end; NaN gives `lo`. Plain
/// comparisons, no panic (unlike `f64::clamp` with an unordered range).
fn into_range(gain: f64, lo: f64, hi: f64) -> f64 {
    if gain > lo && gain < hi {
        gain
    } else if gain >= hi {
        hi
    } else {
        lo
    }
}

/// Bisection in u for θ(t_d; u) = target between `a` and `b` (a.u < b.u, the target strictly
/// between their offsets, θ(t_d; u) monotone in between): at most [`BISECTION_STEPS`] steps,
/// stops at adjacent doubles; returns the closer end, with γ = u/`u_per_gain` kept in
/// [a.gain, b.gain].
fn bisect(
    n: &Normalised,
    mut a: Candidate,
    mut b: Candidate,
    target: f64,
    u_per_gain: f64,
) -> Candidate {
    let (lo_gain, hi_gain) = (a.gain, b.gain);
    let a_below = a.offset < target;
    for _ in 0..BISECTION_STEPS {
        let mid = a.u + 0.5 * (b.u - a.u);
        if !(mid > a.u && mid < b.u) {
            break;
        }
        let offset = offset_at(n, mid);
        let gain = mid / u_per_gain;
        let gain = into_range(gain, lo_gain, hi_gain);
        let c = Candidate {
            gain,
            u: mid,
            offset,
        };
        if (offset < target) == a_below {
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

/// The critically damped gain in the stable range [γ_min, γ_max] (γ_max from `limit`,
/// γ_min = [`MIN_FALLBACK_FRACTION`]·γ_max standing for "coast") whose predicted arrival
/// θ(t_d; γ) comes closest to the requested one: the fallback for a problem that
/// [`solve_arrival_gains`] refused ([`GainError::Unreachable`], [`GainError::NoStableGain`],
/// [`GainError::OutOfRange`]), but defined for every problem. Among equally close gains it takes
/// the softest.
///
/// # Method
/// With u = γt_d/(2m), θ(t_d; u) = (θ₀ + t_d ω₀ + uθ₀)e^(−u) has dθ/du = −(t_d ω₀ + uθ₀)e^(−u):
/// in the normalised frame (θ₀ ≥ 0) it rises up to its only stationary point u* = −t_d ω₀/θ₀
/// and falls after it (it only falls when θ₀ = 0). Clamping u* into [u_min, u_max] splits the
/// range into a rising and a falling piece, and on a monotone piece the closest arrival is the
/// end nearer the target or, if the target lies between the ends' positions, the exact
/// arrival. So the minimiser is one of: γ_min, γ_max, the clamped stationary point (the peak,
/// when the target lies beyond it), or a root of θ(t_d; u) = θ_d inside a piece. The root is
/// located by bisection (there is no closed-form choice among the Lambert-W branches that is
/// cheaper to guard), and only exists for a problem the solver does not refuse or at a
/// rounding boundary of one it does.
///
/// # Cost
/// No allocation; three evaluations of θ(t_d) (one `exp` each) and a few comparisons; plus, only
/// when the target lies strictly inside a piece's range, at most `BISECTION_STEPS` (80) more.
///
/// # Bound on what the floor γ_min gives away
/// Over (0, γ_min) the error can improve on the returned one by at most
/// u_min·(|t_d ω₀| + u_min·|θ₀|) (rad, offsets from the setpoint), u_min = γ_min·t_d/(2m):
/// the largest |dθ/du| there times the width.
///
/// Returns `None` for a problem that is not finite or not positive where it must be, a limit
/// whose γ_max is not finite and positive (or whose k_max is not finite and ≥ 0), and when no
/// predicted arrival is a finite f64.
pub fn closest_arrival_gains(problem: &ArrivalProblem, limit: &GainLimit) -> Option<CriticalGains> {
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
    // u = γ·u_per_gain; 0 or +∞ if t_d/(2m) under- or overflows (then every gain arrives alike).
    let u_per_gain = problem.time_to_go_s / (2.0 * m);
    let lo = Candidate::new(&n, g_min, g_min * u_per_gain);
    let hi = Candidate::new(&n, g_max, g_max * u_per_gain);
    let peak = if n.theta0 > 0.0 {
        let u_star = -(n.travel / n.theta0);
        // Never NaN: θ₀ > 0 and travel are finite, and γ_min > 0.
        if u_star <= lo.u {
            lo
        } else if u_star >= hi.u {
            hi
        } else {
            let gain = u_star / u_per_gain;
            let gain = into_range(gain, g_min, g_max);
            Candidate::new(&n, gain, u_star)
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
    // The softest of equally close gains (the whole range arrives alike when u_per_gain
    // under- or overflows, or the joint rests at the setpoint).
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
        return Some(CriticalGains {
            stiffness_nm_per_rad: k_max,
            damping_nms_per_rad: g_max,
            branch,
        });
    }
    CriticalGains::from_damping(m, best.gain, branch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Position at time t of the critically damped motion from (θ₀, ω₀) about the setpoint.
    fn closed_form(p: &ArrivalProblem, g: &CriticalGains) -> f64 {
        crate::closed_form::critically_damped_position(
            p.inertia_kgm2,
            g.damping_nms_per_rad,
            p.position_rad - p.setpoint_rad,
            p.velocity_rad_s,
            p.time_to_go_s,
        ) + p.setpoint_rad
    }

    fn scale(p: &ArrivalProblem) -> f64 {
        let a = (p.position_rad - p.setpoint_rad).abs();
        let b = (p.arrival_rad - p.setpoint_rad).abs();
        let c = (p.velocity_rad_s * p.time_to_go_s).abs();
        a.max(b).max(c)
    }

    fn problem(theta0: f64, omega0: f64, theta_d: f64, td: f64) -> ArrivalProblem {
        ArrivalProblem {
            inertia_kgm2: 1.0,
            position_rad: theta0,
            velocity_rad_s: omega0,
            setpoint_rad: 0.0,
            arrival_rad: theta_d,
            time_to_go_s: td,
        }
    }

    #[test]
    fn design_example_takes_the_lower_branch() {
        // docs/ARCHITECTURE.md's example: m=1, θ0=1, ω0=0, θd=0.05, td=1: W₋₁ → γ ≈ 9.4877 (W₀ would give −1.96).
        let g = solve_arrival_gains(&problem(1.0, 0.0, 0.05, 1.0)).unwrap();
        assert_eq!(g.branch, Branch::Lower);
        assert!((g.damping_nms_per_rad - 9.4877).abs() < 1e-3, "{g:?}");
        assert!((g.damping_nms_per_rad.powi(2) - 4.0 * g.stiffness_nm_per_rad).abs() < 1e-9);
    }

    #[test]
    fn two_stable_branches_give_the_softer() {
        // Moving towards with 1 + c < r ≤ e^c: c = −0.5, r = 0.55 (1 + c = 0.5, e^c ≈ 0.607).
        let p = problem(1.0, -0.5, 0.55, 1.0);
        let g = solve_arrival_gains(&p).unwrap();
        assert_eq!(g.branch, Branch::Principal);
        assert!((closed_form(&p, &g) - 0.55).abs() < 1e-12);
    }

    #[test]
    fn crossing_needs_speed() {
        // c = −2, r = −0.5 > 1 + c = −1: feasible with W₀.
        let p = problem(1.0, -2.0, -0.5, 1.0);
        let g = solve_arrival_gains(&p).unwrap();
        assert_eq!(g.branch, Branch::Principal);
        assert!((closed_form(&p, &g) + 0.5).abs() < 1e-12);
        // Too slow: c = −0.5.
        assert!(matches!(
            solve_arrival_gains(&problem(1.0, -0.5, -0.5, 1.0)),
            Err(GainError::NoStableGain { .. })
        ));
    }

    #[test]
    fn unreachable_gives_the_bound() {
        // r = 2 > e^0 = 1 from rest: the furthest reachable is θ0 e^c = 1.
        match solve_arrival_gains(&problem(1.0, 0.0, 2.0, 1.0)) {
            Err(GainError::Unreachable { limit_rad }) => assert!((limit_rad - 1.0).abs() < 1e-15),
            other => panic!("{other:?}"),
        }
        // Mirrored side: setpoint 0, start −1, arrival −2 → limit −1.
        match solve_arrival_gains(&problem(-1.0, 0.0, -2.0, 1.0)) {
            Err(GainError::Unreachable { limit_rad }) => assert!((limit_rad + 1.0).abs() < 1e-15),
            other => panic!("{other:?}"),
        }
    }

    /// The limit of what stable gains reach, in the caller's coordinates.
    fn unreachable_limit(p: &ArrivalProblem) -> f64 {
        match solve_arrival_gains(p) {
            Err(GainError::Unreachable { limit_rad }) => limit_rad,
            other => panic!("{p:?}: {other:?}"),
        }
    }

    #[test]
    fn unreachable_limit_is_what_stable_gains_approach() {
        // Moving away (c = 1): the peak θ0·e^c = e needs u = −1 (γ < 0); stable gains approach
        // the coasting position θ0 + t_d ω0 = 2 as γ → 0.
        assert_eq!(unreachable_limit(&problem(1.0, 1.0, 5.0, 1.0)), 2.0);
        assert_eq!(unreachable_limit(&problem(1.0, 0.5, 2.0, 1.0)), 1.5);
        assert_eq!(unreachable_limit(&problem(-1.0, -1.0, -5.0, 1.0)), -2.0);
        let mut p = problem(1.0, 1.0, 5.0, 1.0);
        p.setpoint_rad = 0.25;
        p.position_rad += 0.25;
        p.arrival_rad += 0.25;
        assert_eq!(unreachable_limit(&p), 2.25);
        // Moving towards (c = −0.5): the peak e^−0.5 is attained by γ = 2m·0.5/t_d = 1.
        let towards = problem(1.0, -0.5, 2.0, 1.0);
        let limit = unreachable_limit(&towards);
        assert!((limit - (-0.5f64).exp()).abs() < 1e-16);
        let at_peak = CriticalGains::from_damping(1.0, 1.0, Branch::Principal).unwrap();
        assert!((closed_form(&towards, &at_peak) - limit).abs() < 1e-15);
    }

    #[test]
    fn tiny_and_subnormal_arrivals_keep_the_gain_exact() {
        // c = −5 (1 + c = −4): the joint crosses the setpoint at u = 4 (γ = 8); an arrival
        // that tiny is the crossing itself, W₀(z) ≈ z ≈ 0, u = −(1 + c) exactly.
        let tiny = [
            5e-324, -5e-324, 1e-310, -1e-310, 2.2e-308, 1e-300, 1e-20, 0.0,
        ];
        for theta_d in tiny {
            let g = solve_arrival_gains(&problem(1.0, -5.0, theta_d, 1.0)).unwrap();
            assert_eq!(g.damping_nms_per_rad, 8.0, "θd {theta_d:e}");
            assert_eq!(g.stiffness_nm_per_rad, 16.0, "θd {theta_d:e}");
            assert_eq!(g.branch, Branch::Principal);
        }
        // The same with an inexact subnormal ratio θd/θ0.
        let g = solve_arrival_gains(&problem(10.0, -50.0, 1e-310, 1.0)).unwrap();
        assert_eq!(g.damping_nms_per_rad, 8.0);
        // Against mpmath (50 digits): the stiff W₋₁ gains for a subnormal arrival from rest and
        // moving away, and the W₀ gain when e^(−c) overflows (c = −713).
        for (omega0, theta_d, gamma) in [
            (0.0, 5e-324, 1502.1257837492922),
            (0.0, 1e-310, 1440.7650968100866),
            (3.0, 5e-324, 1502.1337564943342),
            (-713.0, 1e-310, 1424.4040550628276),
        ] {
            let g = solve_arrival_gains(&problem(1.0, omega0, theta_d, 1.0))
                .unwrap_or_else(|e| panic!("ω0 {omega0} θd {theta_d:e}: {e:?}"));
            let rel = (g.damping_nms_per_rad - gamma).abs() / gamma;
            assert!(rel < 1e-15, "ω0 {omega0} θd {theta_d:e}: {g:?}");
        }
    }

    #[test]
    fn huge_states_give_typed_errors_not_infinite_positions() {
        // θ0 = t_d ω0 = 1e308: the coasting position 2e308 is not a finite f64.
        let p = problem(1e308, 1e308, 0.0, 1.0);
        assert_eq!(solve_arrival_gains(&p), Err(GainError::OutOfRange));
        // Nothing the fallback predicts is NaN, whatever the state.
        let limit = GainLimit::new(1.0, 0.005, Integrator::SemiImplicitEuler, 0.8).unwrap();
        for (x, v, a) in [
            (1e308, -1e308, 0.0),
            (1e308, 1e308, 0.0),
            (f64::MAX, -f64::MAX, 0.5),
            (-f64::MAX, f64::MAX, f64::MAX),
            (5e-324, f64::MAX, -f64::MAX),
        ] {
            let p = problem(x, v, a, 1.0);
            if let Some(g) = closest_arrival_gains(&p, &limit) {
                assert!(g.damping_nms_per_rad > 0.0, "{p:?}: {g:?}");
                assert!(g.damping_nms_per_rad <= limit.max_damping_nms_per_rad);
                assert!(!closed_form(&p, &g).is_nan(), "{p:?}: {g:?}");
            }
        }
    }

    /// The limit's own gains (a placeholder after a failed assertion).
    fn limit_gains(limit: &GainLimit) -> CriticalGains {
        CriticalGains {
            stiffness_nm_per_rad: limit.max_stiffness_nm_per_rad,
            damping_nms_per_rad: limit.max_damping_nms_per_rad,
            branch: Branch::Lower,
        }
    }

    /// |θ(t_d; γ) − θ_d| from the closed form, in offsets from the setpoint.
    fn arrival_error(p: &ArrivalProblem, gamma: f64) -> f64 {
        let theta0 = p.position_rad - p.setpoint_rad;
        let theta_d = p.arrival_rad - p.setpoint_rad;
        let at = crate::closed_form::critically_damped_position(
            p.inertia_kgm2,
            gamma,
            theta0,
            p.velocity_rad_s,
            p.time_to_go_s,
        );
        (at - theta_d).abs()
    }

    /// The smallest arrival error over a dense scan of γ ∈ (0, γ_max]: 4000 even steps and 900
    /// log-spaced ones down to 1e−15·γ_max; and the same restricted to γ ≥ `floor`.
    fn scan_best(p: &ArrivalProblem, max: f64, floor: f64) -> ((f64, f64), (f64, f64)) {
        let mut all = (f64::INFINITY, 0.0);
        let mut above = (f64::INFINITY, 0.0);
        let even = (1..=4000).map(|i| max * f64::from(i) / 4000.0);
        let log = (0..=900).map(|j| max * 10f64.powf(-15.0 + f64::from(j) / 60.0));
        for gamma in even.chain(log).chain([floor]) {
            let e = arrival_error(p, gamma);
            if e < all.0 {
                all = (e, gamma);
            }
            if gamma >= floor && e < above.0 {
                above = (e, gamma);
            }
        }
        (all, above)
    }

    #[test]
    fn a_fast_crossing_past_the_coast_point_falls_back_to_coasting() {
        // θ0 = 1, ω0 = −3, θd = −2.5, t_d = 1 (c = −3, r = −2.5 < 1 + c = −2): only γ < 0
        // arrives. θ(t_d; γ) rises from the coasting position −2 to its peak at u = 3, so the
        // closest stable arrival is the softest gain (−2.0, error 0.5), not the stiffest (≈ 0,
        // error 2.5).
        let p = problem(1.0, -3.0, -2.5, 1.0);
        assert_eq!(
            solve_arrival_gains(&p),
            Err(GainError::NoStableGain { coasting_rad: -2.0 })
        );
        for margin in [0.8, 0.5] {
            let limit = GainLimit::new(1.0, 0.005, Integrator::SemiImplicitEuler, margin).unwrap();
            let max = limit.max_damping_nms_per_rad;
            let floor = MIN_FALLBACK_FRACTION * max;
            let g = closest_arrival_gains(&p, &limit).unwrap();
            assert_eq!(g.damping_nms_per_rad, floor, "margin {margin}");
            let err = arrival_error(&p, g.damping_nms_per_rad);
            let ((best, _), (best_above, _)) = scan_best(&p, max, floor);
            // u_min·(|t_d ω0| + u_min·|θ0|): what the floor can give away.
            let u_min = floor / 2.0;
            assert!(
                err <= best + u_min * (3.0 + u_min) + 1e-12,
                "{err} vs {best}"
            );
            assert!(err <= best_above + 1e-12, "{err} vs {best_above}");
            assert!(err < 0.5 + 1e-3 && arrival_error(&p, max) > 2.49);
        }
    }

    #[test]
    fn the_fallback_arrives_exactly_when_a_stable_gain_in_range_does() {
        // The architecture notes' example (γ ≈ 9.4877 on W₋₁, within the limit): the fallback finds the
        // same gain by bisection on the falling piece.
        let p = problem(1.0, 0.0, 0.05, 1.0);
        let limit = GainLimit::new(1.0, 0.005, Integrator::SemiImplicitEuler, 0.8).unwrap();
        let solved = solve_arrival_gains(&p).unwrap();
        let g = closest_arrival_gains(&p, &limit).unwrap();
        assert_eq!(g.branch, Branch::Lower);
        let rel = (g.damping_nms_per_rad - solved.damping_nms_per_rad).abs() / 9.4877;
        assert!(rel < 1e-14, "{g:?} vs {solved:?}");
        assert!(arrival_error(&p, g.damping_nms_per_rad) < 1e-15);
        // Beyond the peak (moving towards, c = −0.5, r = 2 > e^c): the peak's gain γ = 1.
        let p = problem(1.0, -0.5, 2.0, 1.0);
        let g = closest_arrival_gains(&p, &limit).unwrap();
        assert!((g.damping_nms_per_rad - 1.0).abs() < 1e-15, "{g:?}");
    }

    #[test]
    fn bad_inputs_are_named() {
        let mut p = problem(1.0, 0.0, 0.5, 1.0);
        p.velocity_rad_s = f64::NAN;
        assert_eq!(
            solve_arrival_gains(&p),
            Err(GainError::NonFinite(Field::Velocity))
        );
        let mut p = problem(1.0, 0.0, 0.5, 1.0);
        p.inertia_kgm2 = 0.0;
        assert_eq!(solve_arrival_gains(&p), Err(GainError::NonPositiveInertia));
        let mut p = problem(1.0, 0.0, 0.5, 1.0);
        p.time_to_go_s = -1.0;
        assert_eq!(solve_arrival_gains(&p), Err(GainError::NonPositiveTime));
        assert_eq!(
            solve_arrival_gains(&problem(0.0, 0.0, 0.0, 1.0)),
            Err(GainError::Indeterminate)
        );
    }

    #[test]
    fn starting_at_the_setpoint_uses_the_log() {
        let p = problem(0.0, 1.0, 0.5, 1.0);
        let g = solve_arrival_gains(&p).unwrap();
        assert_eq!(g.branch, Branch::AtSetpoint);
        assert!((closed_form(&p, &g) - 0.5).abs() < 1e-14);
    }

    #[test]
    fn near_the_branch_point_keeps_full_accuracy() {
        // r within 1e−14 of e^c with c = −0.3: two nearly equal branches, q tiny.
        let c: f64 = -0.3;
        let r = c.exp() * (1.0 - 1e-14);
        let p = problem(1.0, c, r, 1.0);
        let g = solve_arrival_gains(&p).unwrap();
        // The double root is u = −c = 0.3: γ = 2mu/td = 0.6.
        assert!((g.damping_nms_per_rad - 0.6).abs() < 1e-6, "{g:?}");
        assert!((closed_form(&p, &g) - r).abs() < 1e-13);
    }

    #[test]
    fn gain_limits_follow_the_jury_bounds() {
        let l = GainLimit::new(2.0, 0.005, Integrator::SemiImplicitEuler, 1.0).unwrap();
        assert!((l.max_damping_nms_per_rad - 1.656_854_249_492_380_2 * 400.0).abs() < 1e-9);
        let g = CriticalGains::from_damping(2.0, 1e6, Branch::Lower).unwrap();
        let c = g.clamp_to(&l);
        assert!(c.acted);
        assert_eq!(c.requested_damping_nms_per_rad, 1e6);
        let soft = CriticalGains::from_damping(2.0, 1.0, Branch::Lower).unwrap();
        assert!(!soft.clamp_to(&l).acted);
    }

    /// Simulate the sampled loop for each integrator at β just below and just above its bound.
    #[test]
    fn derived_bounds_separate_stable_from_unstable() {
        fn grows(integrator: Integrator, beta: f64) -> bool {
            let (m, h) = (1.0, 0.01);
            let gamma = beta * m / h;
            let k = gamma * gamma / (4.0 * m);
            let (mut x, mut v) = (1.0f64, 0.0f64);
            for _ in 0..20_000 {
                let a = (-k * x - gamma * v) / m;
                match integrator {
                    Integrator::SemiImplicitEuler => {
                        v += h * a;
                        x += h * v;
                    }
                    Integrator::ExplicitEuler => {
                        x += h * v;
                        v += h * a;
                    }
                    Integrator::ZeroOrderHoldExact => {
                        x += h * v + 0.5 * h * h * a;
                        v += h * a;
                    }
                }
            }
            x.abs() > 1.0 || !x.is_finite()
        }
        for integrator in [
            Integrator::SemiImplicitEuler,
            Integrator::ExplicitEuler,
            Integrator::ZeroOrderHoldExact,
        ] {
            let b = integrator.max_beta();
            assert!(!grows(integrator, b * 0.99), "{integrator:?} below");
            assert!(grows(integrator, b * 1.01), "{integrator:?} above");
        }
    }

    /// One step of the sampled loop x, v with gains k, γ on inertia m for period h.
    fn loop_step(
        integrator: Integrator,
        k: f64,
        gamma: f64,
        m: f64,
        h: f64,
        x: &mut f64,
        v: &mut f64,
    ) {
        let a = (-k * *x - gamma * *v) / m;
        match integrator {
            Integrator::SemiImplicitEuler => {
                *v += h * a;
                *x += h * *v;
            }
            Integrator::ExplicitEuler => {
                *x += h * *v;
                *v += h * a;
            }
            Integrator::ZeroOrderHoldExact => {
                *x += h * *v + 0.5 * h * h * a;
                *v += h * a;
            }
        }
    }

    /// Whether the simulated loop for α, β (m = 1, h = 1) has grown after `n` steps.
    fn simulated_grows(integrator: Integrator, alpha: f64, beta: f64, n: usize) -> bool {
        let (mut x, mut v) = (1.0f64, 0.3f64);
        for _ in 0..n {
            loop_step(integrator, alpha, beta, 1.0, 1.0, &mut x, &mut v);
        }
        !(x.abs() < 1.0 && x.is_finite())
    }

    /// The general test agrees with the critically damped bound, and with SIMBICON's ankle:
    /// 300/30 on 0.012 kg·m² is stable at 2 kHz and not at 1 kHz for semi-implicit Euler.
    #[test]
    fn general_stability_test_matches_the_critical_bound_and_the_triangle() {
        for integrator in [
            Integrator::SemiImplicitEuler,
            Integrator::ExplicitEuler,
            Integrator::ZeroOrderHoldExact,
        ] {
            let b = integrator.max_beta();
            assert!(integrator.is_stable(0.99 * b * 0.99 * b / 4.0, 0.99 * b));
            assert!(!integrator.is_stable(1.01 * b * 1.01 * b / 4.0, 1.01 * b));
            let s = integrator.max_normalized_frequency(1.0);
            assert!((2.0 * s - b).abs() < 1e-12, "{integrator:?}: {s}");
            assert!(!integrator.is_stable(f64::NAN, 0.5));
            assert!(!integrator.is_stable(0.5, f64::NAN));
            assert!(integrator.max_normalized_frequency(0.0).is_nan());
            assert!(integrator.max_normalized_frequency(f64::NAN).is_nan());
            assert!(integrator.max_normalized_frequency(1e300).is_finite());
        }
        let si = Integrator::SemiImplicitEuler;
        let ankle = |h: f64| (h * h * 300.0 / 0.012, h * 30.0 / 0.012);
        let (a, b) = ankle(1.0 / 2000.0);
        assert!(si.is_stable(a, b));
        let (a, b) = ankle(1.0 / 1000.0);
        assert!(!si.is_stable(a, b));
        // The triangle's corners and edges.
        assert!(si.is_stable(3.9, 0.04));
        assert!(!si.is_stable(3.9, 0.06));
        assert!(!si.is_stable(0.0, 1.0));
        assert!(!si.is_stable(1.0, 0.0));
        assert!(si.is_stable(0.01, 1.99));
        assert!(!si.is_stable(0.01, 2.0));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// Jury's verdict is what the simulated loop does, for any pair away from the boundary
        /// (a 2 % step inside stays bounded, a 2 % step outside grows).
        #[test]
        fn general_stability_test_is_what_the_loop_does(
            integrator in integrator(), alpha in 1e-4f64..6.0, beta in 1e-3f64..4.5,
        ) {
            let inside = integrator.is_stable(alpha * 1.02, beta * 1.02)
                && integrator.is_stable(alpha * 0.98, beta * 0.98)
                && integrator.is_stable(alpha * 1.02, beta * 0.98)
                && integrator.is_stable(alpha * 0.98, beta * 1.02);
            let outside = !integrator.is_stable(alpha * 1.02, beta * 1.02)
                && !integrator.is_stable(alpha * 0.98, beta * 0.98)
                && !integrator.is_stable(alpha * 1.02, beta * 0.98)
                && !integrator.is_stable(alpha * 0.98, beta * 1.02);
            let (_, det) = integrator.loop_trace_det(alpha, beta);
            // Roots of modulus ≥ 0.999 decay too slowly to tell in a few thousand steps.
            prop_assume!(inside || outside);
            if inside && det.abs() < 0.99 {
                prop_assert!(!simulated_grows(integrator, alpha, beta, 20_000));
            }
            if outside {
                prop_assert!(simulated_grows(integrator, alpha, beta, 20_000));
            }
        }

        /// s*(ζ) is the edge along the ray of fixed ζ: stable just below, unstable just above.
        #[test]
        fn max_normalized_frequency_is_the_edge_for_that_damping_ratio(
            integrator in integrator(), zeta in (-3.0f64..3.0).prop_map(|e| 10f64.powf(e)),
        ) {
            let s = integrator.max_normalized_frequency(zeta);
            prop_assert!(s.is_finite() && s > 0.0);
            let pair = |s: f64| (s * s, 2.0 * zeta * s);
            for f in [1e-3, 0.1, 0.5, 0.9, 0.999] {
                let (a, b) = pair(f * s);
                prop_assert!(integrator.is_stable(a, b), "{f}");
            }
            let (a, b) = pair(1.001 * s);
            prop_assert!(!integrator.is_stable(a, b));
        }
    }

    /// What the branch table says for normalised r and c, away from its boundaries.
    #[derive(Debug, PartialEq)]
    enum Expect {
        Solvable,
        Unreachable,
        NoStable,
        Boundary,
    }

    fn expected(r: f64, c: f64) -> Expect {
        let tol = 1e-9;
        let ec = c.exp();
        if r <= 0.0 {
            if (c + 1.0).abs() < tol || (r - (1.0 + c)).abs() < tol {
                return Expect::Boundary;
            }
            return if c < -1.0 && r > 1.0 + c {
                Expect::Solvable
            } else {
                Expect::NoStable
            };
        }
        if (r - ec).abs() <= tol * ec.max(1.0) {
            return Expect::Boundary;
        }
        if r > ec {
            return Expect::Unreachable;
        }
        if c >= 0.0 {
            if (r - (1.0 + c)).abs() < tol * (1.0 + c) {
                return Expect::Boundary;
            }
            return if r < 1.0 + c {
                Expect::Solvable
            } else {
                Expect::NoStable
            };
        }
        Expect::Solvable
    }

    fn magnitude() -> impl Strategy<Value = f64> {
        prop_oneof![
            -3.0f64..3.0,
            (-8.0f64..8.0).prop_map(|e| 10f64.powf(e)),
            (-8.0f64..8.0).prop_map(|e| -(10f64.powf(e))),
            Just(0.0),
        ]
    }

    /// Sign of x: −1, 0 or 1 (`f64::signum` has no 0).
    fn sign(x: f64) -> i8 {
        if x > 0.0 {
            1
        } else if x < 0.0 {
            -1
        } else {
            0
        }
    }

    /// The largest condition number (relative change of a root per relative change of the
    /// offsets) at which the solver must agree with the reference to [`REFERENCE_TOLERANCE`].
    const MAX_CONDITION: f64 = 1e6;
    /// Relative agreement of the solver's u with the reference root.
    const REFERENCE_TOLERANCE: f64 = 1e-9;

    /// Offsets from the setpoint (θ₀, t_d·ω₀, θ_d), divided by their largest magnitude s; and
    /// ln|θ_d/s| formed without underflow.
    #[derive(Debug, Clone, Copy)]
    struct Scaled {
        theta0: f64,
        travel: f64,
        theta_d: f64,
        theta_d_sign: i8,
        ln_abs_theta_d: f64,
    }

    impl Scaled {
        fn new(theta0: f64, travel: f64, theta_d: f64) -> Option<Self> {
            let s = theta0.abs().max(travel.abs()).max(theta_d.abs());
            (s > 0.0 && s.is_finite()).then(|| Self {
                theta0: theta0 / s,
                travel: travel / s,
                theta_d: theta_d / s,
                theta_d_sign: sign(theta_d),
                ln_abs_theta_d: theta_d.abs().ln() - s.ln(),
            })
        }

        /// θ₀ + t_d ω₀ + uθ₀: θ(t_d; u)·e^u.
        fn amplitude(&self, u: f64) -> f64 {
            self.theta0 + self.travel + u * self.theta0
        }

        /// Sign of θ(t_d; u) − θ_d = e^(−u)·[(θ₀ + t_d ω₀ + uθ₀) − θ_d e^u], evaluated in
        /// logarithms where e^u overflows.
        fn sign_at(&self, u: f64) -> i8 {
            let (a, d, d_sign) = (self.amplitude(u), self.theta_d, self.theta_d_sign);
            if u <= 700.0 && d.is_normal() {
                sign(a - d * u.exp())
            } else if d_sign == 0 || sign(a) != d_sign {
                if a == 0.0 { -d_sign } else { sign(a) }
            } else {
                sign(a) * sign(a.abs().ln() - self.ln_abs_theta_d - u)
            }
        }

        /// Relative condition of a root u: (|∂g/∂θ₀·θ₀| + |∂g/∂T·T| + |∂g/∂θ_d·θ_d|)/(u·|g′(u)|)
        /// for g(u) = (θ₀ + T + uθ₀) − θ_d e^u, with θ_d e^u = θ₀ + T + uθ₀ at the root.
        fn condition(&self, u: f64) -> f64 {
            let numerator =
                self.travel.abs() + self.theta0.abs() * (1.0 + u) + self.amplitude(u).abs();
            numerator / (u * (self.travel + u * self.theta0).abs())
        }
    }

    /// An independent reference for the solver, without Lambert W: every positive root u of
    /// θ(t_d; u) = θ_d (u = γt_d/(2m)), from sign changes on a grid of u (0, then 8 points per
    /// decade from 1e−20 to 1e300, plus the stationary point u = −t_d ω₀/θ₀, so that θ(t_d; u)
    /// is monotone between grid points and each interval holds at most one root) and bisection
    /// to adjacent doubles.
    #[derive(Debug)]
    struct Reference {
        /// Ascending (u, condition).
        roots: Vec<(f64, f64)>,
        /// False when a root may have escaped the grid: the offsets are all zero, the coasting
        /// position is exactly the arrival (roots may sit anywhere in (0, 1e−20)), or the sign
        /// at the end of the grid is not the asymptotic one.
        complete: bool,
        scaled: Option<Scaled>,
    }

    fn reference_roots(theta0: f64, travel: f64, theta_d: f64) -> Reference {
        let Some(s) = Scaled::new(theta0, travel, theta_d) else {
            return Reference {
                roots: Vec::new(),
                complete: false,
                scaled: None,
            };
        };
        let mut grid = vec![0.0];
        grid.extend((0..=2560).map(|k| 10f64.powf(-20.0 + f64::from(k) / 8.0)));
        if s.theta0 != 0.0 {
            let peak = -s.travel / s.theta0;
            if peak > 0.0 && peak < 1e300 {
                grid.push(peak);
            }
        }
        grid.sort_by(f64::total_cmp);
        grid.dedup();
        let mut roots = Vec::new();
        let mut complete = s.sign_at(0.0) != 0;
        for pair in grid.windows(2) {
            let (mut lo, mut hi) = (pair[0], pair[1]);
            let (s_lo, s_hi) = (s.sign_at(lo), s.sign_at(hi));
            if s_hi == 0 {
                roots.push(hi);
            } else if s_lo * s_hi < 0 {
                for _ in 0..1100 {
                    let mid = lo + 0.5 * (hi - lo);
                    if !(mid > lo && mid < hi) {
                        break;
                    }
                    if s.sign_at(mid) == s_lo {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                roots.push(lo + 0.5 * (hi - lo));
            }
        }
        let end = grid.last().copied().unwrap_or(0.0);
        let asymptotic = if s.theta_d_sign != 0 {
            -s.theta_d_sign
        } else if s.theta0 != 0.0 {
            sign(s.theta0)
        } else {
            sign(s.travel)
        };
        complete &= s.sign_at(end) == asymptotic;
        Reference {
            roots: roots.iter().map(|&u| (u, s.condition(u))).collect(),
            complete,
            scaled: Some(s),
        }
    }

    /// When `OutOfRange` is legitimate for a problem whose softest positive root is `u`: an f64
    /// the solver must form is not finite, or a gain underflows to 0 — the offsets θ₀, θ_d,
    /// t_d·ω₀; the ratios θ_d/θ₀ and t_d ω₀/θ₀ (θ₀ ≠ 0); γ = 2m·u/t_d and k = m·(u/t_d)²
    /// (with a 1e−6 relative margin at the thresholds, for the rounding of u).
    fn out_of_range_is_legitimate(p: &ArrivalProblem, u: f64) -> bool {
        let theta0 = p.position_rad - p.setpoint_rad;
        let theta_d = p.arrival_rad - p.setpoint_rad;
        let travel = p.time_to_go_s * p.velocity_rad_s;
        if !(theta0.is_finite() && theta_d.is_finite() && travel.is_finite()) {
            return true;
        }
        if theta0 != 0.0 && !((theta_d / theta0).is_finite() && (travel / theta0).is_finite()) {
            return true;
        }
        let rate = u / p.time_to_go_s;
        let gamma = 2.0 * p.inertia_kgm2 * rate;
        let k = p.inertia_kgm2 * rate * rate;
        let near_max = f64::MAX * (1.0 - 1e-6);
        !(gamma < near_max && k < near_max && k > 1e-300 * f64::MIN_POSITIVE)
    }

    /// The solver against the reference: where the softest positive root is well conditioned
    /// (condition ≤ [`MAX_CONDITION`]) the solver returns it to [`REFERENCE_TOLERANCE`], or
    /// `OutOfRange` when [`out_of_range_is_legitimate`]; where the reference finds no root, a
    /// gain the solver returns must be ill conditioned (a near-double root that rounding
    /// creates).
    fn check_against_reference(p: &ArrivalProblem) -> Result<(), TestCaseError> {
        let theta0 = p.position_rad - p.setpoint_rad;
        let theta_d = p.arrival_rad - p.setpoint_rad;
        let travel = p.time_to_go_s * p.velocity_rad_s;
        let result = solve_arrival_gains(p);
        if !(theta0.is_finite() && theta_d.is_finite() && travel.is_finite()) {
            prop_assert_eq!(result, Err(GainError::OutOfRange));
            return Ok(());
        }
        let reference = reference_roots(theta0, travel, theta_d);
        let u_of = |g: &CriticalGains| u_of_gain(p, g.damping_nms_per_rad);
        let softest = reference.roots.first().copied();
        let well = reference.complete && softest.is_some_and(|(_, k)| k <= MAX_CONDITION);
        match (result, softest) {
            (Ok(g), Some((u_ref, k))) if well => {
                let u = u_of(&g);
                prop_assert!(
                    (u - u_ref).abs() <= REFERENCE_TOLERANCE * u_ref,
                    "u {u} vs reference {u_ref} (condition {k:e}, roots {:?}) {g:?}",
                    reference.roots
                );
            }
            (Err(GainError::OutOfRange), Some((u_ref, _))) if well => {
                prop_assert!(
                    out_of_range_is_legitimate(p, u_ref),
                    "OutOfRange for the root u = {u_ref} ({:?})",
                    reference.roots
                );
            }
            (Err(e), Some(root)) if well => {
                prop_assert!(false, "{e:?} but the reference has {root:?}");
            }
            (Ok(g), None) if reference.complete => {
                let u = u_of(&g);
                let k = reference.scaled.map_or(f64::INFINITY, |s| s.condition(u));
                prop_assert!(
                    k > MAX_CONDITION,
                    "u {u} (condition {k:e}) but no reference root"
                );
            }
            _ => {}
        }
        Ok(())
    }

    /// u = γt_d/(2m), in whichever order of operations neither over- nor underflows.
    fn u_of_gain(p: &ArrivalProblem, gamma: f64) -> f64 {
        let m2 = 2.0 * p.inertia_kgm2;
        let td = p.time_to_go_s;
        [gamma * (td / m2), (gamma / m2) * td, (gamma * td) / m2]
            .into_iter()
            .find(|u| u.is_normal())
            .unwrap_or(0.0)
    }

    /// Every returned gain arrives (closed form in u = γt_d/(2m) on the scaled offsets, 1e−9
    /// relative to the problem's scale; and, with `caller_closed_form`, the closed form in the
    /// caller's units, whose a·θ₀ and a·t_d under- and overflow at extreme scales), is
    /// positive and critically damped; every refusal matches the branch table; and the gain is
    /// the reference's softest root ([`check_against_reference`]).
    fn check_problem(p: &ArrivalProblem, caller_closed_form: bool) -> Result<(), TestCaseError> {
        let m = p.inertia_kgm2;
        // Normalised r and c as the table defines them (from the offsets the solver sees).
        let t0 = p.position_rad - p.setpoint_rad;
        let td_off = p.arrival_rad - p.setpoint_rad;
        let result = solve_arrival_gains(p);
        if let Ok(g) = result {
            prop_assert!(g.damping_nms_per_rad > 0.0 && g.stiffness_nm_per_rad > 0.0);
            // k = γ²/(4m), as m·(γ/(2m))² so that γ² cannot overflow.
            let rate = g.damping_nms_per_rad / (2.0 * m);
            let k = m * rate * rate;
            let rel = (k - g.stiffness_nm_per_rad).abs() / k;
            prop_assert!(rel <= 1e-12, "k {} vs γ²/(4m) {k}", g.stiffness_nm_per_rad);
            let travel = p.time_to_go_s * p.velocity_rad_s;
            let s = Scaled::new(t0, travel, td_off);
            prop_assert!(s.is_some());
            if let Some(s) = s {
                let u = u_of_gain(p, g.damping_nms_per_rad);
                let err = (s.amplitude(u) * (-u).exp() - s.theta_d).abs();
                prop_assert!(err <= 1e-9, "scaled err {err} at u {u}: {g:?}");
            }
            if caller_closed_form {
                let err = arrival_error(p, g.damping_nms_per_rad);
                prop_assert!(err <= 1e-9 * scale(p), "err {err} scale {} {g:?}", scale(p));
            }
        }
        if t0 != 0.0 {
            let sign = t0.signum();
            let r = td_off / t0;
            let c = p.time_to_go_s * p.velocity_rad_s * sign / t0.abs();
            // Not where r is subnormal or underflows: the table would see a rounded r.
            let r_exact = r.is_normal() || td_off == 0.0;
            if r_exact && r.is_finite() && c.is_finite() && c.abs() < 600.0 {
                let e = expected(r, c);
                match (&e, &result) {
                    (Expect::Boundary, _)
                    | (Expect::Solvable, Ok(_))
                    | (Expect::Unreachable, Err(GainError::Unreachable { .. }))
                    | (Expect::NoStable, Err(GainError::NoStableGain { .. })) => {}
                    // Only where the reference says so (checked there).
                    (Expect::Solvable, Err(GainError::OutOfRange)) => {}
                    _ => prop_assert!(false, "r {r} c {c}: expected {e:?}, got {result:?}"),
                }
            }
        }
        check_against_reference(p)
    }

    /// Offsets, velocities and times over most of the f64 range.
    fn wide() -> impl Strategy<Value = f64> {
        prop_oneof![
            -3.0f64..3.0,
            (-300.0f64..300.0).prop_map(|e| 10f64.powf(e)),
            (-300.0f64..300.0).prop_map(|e| -(10f64.powf(e))),
            Just(0.0),
        ]
    }

    fn integrator() -> impl Strategy<Value = Integrator> {
        prop_oneof![
            Just(Integrator::SemiImplicitEuler),
            Just(Integrator::ExplicitEuler),
            Just(Integrator::ZeroOrderHoldExact),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        /// [`check_problem`] over the scales of a joint.
        #[test]
        fn gains_arrive_and_errors_match_the_table(
            m in (-3.0f64..3.0).prop_map(|e| 10f64.powf(e)),
            theta0 in magnitude(),
            omega0 in magnitude(),
            theta_d in magnitude(),
            setpoint in -2.0f64..2.0,
            td in (-3.0f64..2.0).prop_map(|e| 10f64.powf(e)),
        ) {
            check_problem(&ArrivalProblem {
                inertia_kgm2: m,
                position_rad: setpoint + theta0,
                velocity_rad_s: omega0,
                setpoint_rad: setpoint,
                arrival_rad: setpoint + theta_d,
                time_to_go_s: td,
            }, true)?;
        }

        /// [`check_problem`] over most of the f64 range, where `OutOfRange` is legitimate for
        /// some problems (and only for those).
        #[test]
        fn wide_scales_are_solved_or_legitimately_out_of_range(
            m in (-300.0f64..300.0).prop_map(|e| 10f64.powf(e)),
            theta0 in wide(),
            omega0 in wide(),
            theta_d in wide(),
            td in (-300.0f64..300.0).prop_map(|e| 10f64.powf(e)),
        ) {
            check_problem(&ArrivalProblem {
                inertia_kgm2: m,
                position_rad: theta0,
                velocity_rad_s: omega0,
                setpoint_rad: 0.0,
                arrival_rad: theta_d,
                time_to_go_s: td,
            }, false)?;
        }

        /// The fallback's gain lies in [γ_min, γ_max], is critically damped, and its predicted
        /// arrival error is at most a dense scan's best over [γ_min, γ_max] (+1e−12 of the
        /// problem's scale), and over (0, γ_max] up to what the floor γ_min can give away.
        #[test]
        fn the_fallback_is_the_closest_stable_arrival(
            m in (-3.0f64..3.0).prop_map(|e| 10f64.powf(e)),
            theta0 in magnitude(),
            omega0 in magnitude(),
            theta_d in magnitude(),
            setpoint in -2.0f64..2.0,
            td in (-3.0f64..2.0).prop_map(|e| 10f64.powf(e)),
            period in (-4.0f64..-1.0).prop_map(|e| 10f64.powf(e)),
            margin in 0.05f64..=1.0,
            integrator in integrator(),
        ) {
            let p = ArrivalProblem {
                inertia_kgm2: m,
                position_rad: setpoint + theta0,
                velocity_rad_s: omega0,
                setpoint_rad: setpoint,
                arrival_rad: setpoint + theta_d,
                time_to_go_s: td,
            };
            let limit = GainLimit::new(m, period, integrator, margin).unwrap();
            let max = limit.max_damping_nms_per_rad;
            let floor = MIN_FALLBACK_FRACTION * max;
            let g = closest_arrival_gains(&p, &limit);
            prop_assert!(g.is_some());
            let g = g.unwrap_or(limit_gains(&limit));
            let gamma = g.damping_nms_per_rad;
            prop_assert!(gamma >= floor && gamma <= max, "{gamma} outside [{floor}, {max}]");
            let k = g.stiffness_nm_per_rad;
            prop_assert!((gamma * gamma - 4.0 * m * k).abs() <= 1e-12 * gamma * gamma);
            let err = arrival_error(&p, gamma);
            let ((best, at), (best_above, at_above)) = scan_best(&p, max, floor);
            let tol = 1e-12 * scale(&p);
            let t0 = (p.position_rad - p.setpoint_rad).abs();
            let u_min = floor * td / (2.0 * m);
            let gap = u_min * ((td * omega0).abs() + u_min * t0);
            prop_assert!(
                err <= best_above + tol,
                "γ {gamma}: error {err} > {best_above} at γ {at_above} {g:?}"
            );
            prop_assert!(err <= best + gap + tol, "γ {gamma}: error {err} > {best} at γ {at}");
        }

        /// For every unreachable arrival, `limit_rad` bounds θ(t_d; γ) over γ ∈ (0, ∞) on the
        /// arrival's side and is approached by it (to 1e−9 of the scale, on a log grid of γ).
        #[test]
        fn unreachable_limit_is_the_bound_of_stable_arrivals(
            theta0 in magnitude(),
            omega0 in magnitude(),
            theta_d in magnitude(),
            setpoint in -2.0f64..2.0,
            td in (-3.0f64..2.0).prop_map(|e| 10f64.powf(e)),
        ) {
            let p = ArrivalProblem {
                inertia_kgm2: 1.0,
                position_rad: setpoint + theta0,
                velocity_rad_s: omega0,
                setpoint_rad: setpoint,
                arrival_rad: setpoint + theta_d,
                time_to_go_s: td,
            };
            if let Err(GainError::Unreachable { limit_rad }) = solve_arrival_gains(&p) {
                // The arrival's side of the limit (none when the arrival is the limit itself: an
                // infimum such as the setpoint, approached as γ → ∞).
                let side = f64::from(sign(p.arrival_rad - limit_rad));
                let tol = 1e-9 * scale(&p).max(setpoint.abs());
                let mut closest = f64::INFINITY;
                // A log grid of u = γt_d/(2m), and the stationary point u = −t_d ω0/θ0.
                let t0 = p.position_rad - p.setpoint_rad;
                let peak = -(td * omega0) / t0;
                let grid = (0..=2400).map(|j| 10f64.powf(-12.0 + f64::from(j) / 100.0));
                for u in grid.chain((peak > 0.0 && peak.is_finite()).then_some(peak)) {
                    let g = CriticalGains::from_damping(1.0, 2.0 * u / td, Branch::Principal);
                    let Some(g) = g else { continue };
                    let at = closed_form(&p, &g);
                    prop_assert!(side * (at - limit_rad) <= tol, "u {u}: {at} beyond {limit_rad}");
                    closest = closest.min((at - limit_rad).abs());
                }
                prop_assert!(closest <= tol, "{limit_rad} not approached: {closest}");
            }
        }

        /// No f64 input panics, and whatever comes back is either an error or positive gains.
        #[test]
        fn never_panics(
            m in any::<f64>(), p in any::<f64>(), v in any::<f64>(),
            s in any::<f64>(), a in any::<f64>(), t in any::<f64>(),
        ) {
            let pr = ArrivalProblem {
                inertia_kgm2: m, position_rad: p, velocity_rad_s: v,
                setpoint_rad: s, arrival_rad: a, time_to_go_s: t,
            };
            if let Ok(g) = solve_arrival_gains(&pr) {
                prop_assert!(g.damping_nms_per_rad > 0.0 && g.damping_nms_per_rad.is_finite());
                prop_assert!(g.stiffness_nm_per_rad > 0.0 && g.stiffness_nm_per_rad.is_finite());
            }
            if let Ok(l) = GainLimit::new(m, t, Integrator::SemiImplicitEuler, 0.5) {
                let _ = closest_arrival_gains(&pr, &l);
            }
        }
    }
}
