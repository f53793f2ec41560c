//! One recovery step for a biped balancing with [`super::Balance`]: when the capture point
//! leaves the feet's footprint, lift one foot and put it down where the capture point will be.
//!
//! Standing, a push the ankles and hips cannot absorb carries the capture point
//! `ξ = x + ẋ/ω` (`x` the centre of mass, horizontal, `ω = √(g/h)`) beyond the feet; from
//! there no force of the feet can bring the body back to rest. [`Stepper::tick`] watches `ξ`
//! against the footprint (every corner of both feet, touching or not: a heel or a toe lifting
//! is no reason to step) and, once `ξ` is [`StepSettings::trigger_m`] beyond it (the ankles
//! and hips bring back a capture point just outside), starts a step along `ξ`'s direction from
//! the footprint's middle with the foot ahead along it (the other would cross in front of it;
//! of two feet level with each other, within [`LEVEL_M`], the less loaded one):
//! - **Where.** With the stance foot's centre of pressure at its edge `e` (the farthest corner
//!   along the direction), `ξ` runs away from it as `ξ(t) − e = (ξ₀ − e) e^{ωt}`. The swing
//!   foot's front edge goes to the capture point predicted at touchdown plus
//!   [`StepSettings::aim_m`] (so that `ξ` lands inside the new footprint, near the middle of
//!   the foot), at most [`StepSettings::max_length_m`] from where it started. The prediction
//!   is made again every tick during the first [`StepSettings::adapt_fraction`] of the swing,
//!   as the push may still be acting; then the landing point is kept.
//! - **How.** Three corners of the swing foot's sole follow the same path, a smoothstep
//!   along the step and `lift_m · sin(π u)` up (`u` the swing's fraction,
//!   [`StepSettings::swing_s`] long), as [`super::PointTask`]s: the foot keeps its
//!   orientation. The caller leaves the swing foot (and what moves with it, such as toes) out
//!   of the planted set while [`StepCommand::Swing`] lasts.
//! - **After.** Once the swing's time is over and the ground carries the swing foot
//!   ([`FootState::loaded`]), the step has landed ([`StepCommand::Landed`], from then on):
//!   the caller plants the foot again and should hold the legs where they landed (the
//!   standing pose would pull the feet back together). While the ground does not carry the
//!   other foot (the body has passed over the new one and lifted it), its sole is brought
//!   straight down, flat, where it is ([`StepCommand::Landed`]'s `settle` tasks), so that the
//!   body ends on both feet.
//! - **Again.** Once the ground carries both feet after a landing, the stepper stands again
//!   (the footprint now the new one) and steps again if the capture point leaves it: a push
//!   one step does not catch gets a second, a body pelted again steps again. Steps, not a
//!   gait: no rhythm, no walking on.
//!
//! Never allocates, blocks or panics: a tick with a non-finite input, an `up` whose length is
//! not 1 (within [`UNIT_TOLERANCE`]), or finite input so large that a swing target would
//! overflow is [`StepCommand::Stand`] (or, once a step has landed, [`StepCommand::Landed`]
//! without tasks): no step is started and no task given on it (the balance QP refuses a
//! non-finite state anyway and sends its fallback). Every value it returns is finite.

use nalgebra::Vector3;

use super::PointTask;
use crate::tree::Tree;

/// Two feet whose reach along the step's direction differs by less than this are level, m:
/// the less loaded one steps.
pub const LEVEL_M: f64 = 0.02;

/// The pendulum rate `ω = √(g/h)` of the 15-body humanoid [`StepSettings::DEFAULT`] was
/// measured on, 1/s.
pub const HUMANOID_OMEGA: f64 = 2.97;

/// How far `up`'s length may be from 1 in [`Stepper::tick`]: beyond, the tick's input is not
/// used (as a non-finite one).
pub const UNIT_TOLERANCE: f64 = 1e-6;

/// How a recovery step is taken. [`StepSettings::DEFAULT`] fits a human-sized biped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepSettings {
    /// The swing's duration, s, > 0.
    pub swing_s: f64,
    /// The sole's highest lift above its start during the swing, m, ≥ 0.
    pub lift_m: f64,
    /// The longest step (how far the foot moves horizontally), m, ≥ 0.
    pub max_length_m: f64,
    /// How far beyond the capture point predicted at touchdown the swing foot's front edge
    /// lands, m (about half a foot's length: the capture point lands mid-foot).
    pub aim_m: f64,
    /// During this fraction of the swing, `[0, 1]`, the landing point is predicted again every
    /// tick; then it is kept.
    pub adapt_fraction: f64,
    /// How far beyond the footprint the capture point must be before a step starts, m
    /// (≥ 0; 0: as soon as it leaves).
    pub trigger_m: f64,
}

impl StepSettings {
    /// A step once the capture point is 1 cm beyond the footprint (the ankles and hips bring
    /// back a capture point just outside: the pelted humanoid's balls take it out by less, and
    /// it stands them without a step), a 0.25 s swing lifting 5 cm, at most 0.4 m long, the
    /// capture point landing 11 cm behind the foot's front edge, the landing point followed
    /// through the first 70 % of the swing. Measured on the 15-body humanoid (`balance_push`,
    /// every push of 20–34 N·s and 36–44 N·s, with the contact hold of one tick): these settings
    /// stand every one, and so do swings of 0.2–0.3 s with the landing point followed through
    /// 60–80 % of the swing (but 0.3 s and 80 %: every push up to 33 N·s), an aim of 14 cm and
    /// triggers of 0–3 cm; an aim of 8 cm stands every push up to 34 N·s, and following the
    /// landing point through only half the swing 23–36 N·s (docs/RESULTS.md of the repository).
    pub const DEFAULT: Self = Self {
        swing_s: 0.25,
        lift_m: 0.05,
        max_length_m: 0.4,
        aim_m: 0.11,
        adapt_fraction: 0.7,
        trigger_m: 0.01,
    };

    /// [`StepSettings::DEFAULT`] carried to another body: the swing as long in pendulum time
    /// (`0.25 s × 2.97/s / ω`, the 15-body humanoid's ω = √(g/h) being 2.97/s), the capture
    /// point landing half a foot (`foot_length_m / 2`) behind the foot's front edge; the rest
    /// as the default. `None` if `omega` or `foot_length_m` is not finite and positive.
    pub fn scaled(omega: f64, foot_length_m: f64) -> Option<Self> {
        let ok = |x: f64| x.is_finite() && x > 0.0;
        (ok(omega) && ok(foot_length_m)).then(|| Self {
            swing_s: Self::DEFAULT.swing_s * HUMANOID_OMEGA / omega,
            aim_m: foot_length_m / 2.0,
            ..Self::DEFAULT
        })
    }

    /// Whether every field is finite and in its range.
    pub fn is_valid(&self) -> bool {
        self.swing_s > 0.0
            && self.swing_s.is_finite()
            && self.lift_m >= 0.0
            && self.lift_m.is_finite()
            && self.max_length_m >= 0.0
            && self.max_length_m.is_finite()
            && self.aim_m.is_finite()
            && (0.0..=1.0).contains(&self.adapt_fraction)
            && self.trigger_m >= 0.0
            && self.trigger_m.is_finite()
    }
}

impl Default for StepSettings {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// One foot as [`Stepper::tick`] sees it.
#[derive(Debug, Clone, Copy)]
pub struct FootState<'a> {
    /// The tree body of its sole (the swing's point tasks are on it).
    pub body: usize,
    /// Its sole's corners in that body's frame, m (the first three are moved in a swing; at
    /// least three).
    pub sole: &'a [[f64; 3]],
    /// Every corner of the foot in the world, m: its sole's and those of what moves with it
    /// (toes). The footprint is all of both feet's.
    pub corners_world: &'a [[f64; 3]],
    /// The sole's first three corners in the world, m (where a swing starts).
    pub sole_world: [[f64; 3]; 3],
    /// Whether the ground carries it now (the plant measured a normal force on it).
    pub loaded: bool,
    /// The ground's normal force on it, N (the less loaded foot swings).
    pub load_n: f64,
}

/// What to do this tick.
// The swing's tasks are returned by value: no allocation, and the caller copies them into
// its task list anyway.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepCommand {
    /// No step: stand on what touches.
    Stand,
    /// Foot `foot` (0 or 1) is in the air: leave it out of the planted set and give the QP
    /// these tasks (its sole's three corners).
    Swing {
        /// Which foot swings.
        foot: usize,
        /// The sole corners' tasks.
        tasks: [PointTask; 3],
    },
    /// The step has landed (this tick or before): plant what touches, hold the legs.
    Landed {
        /// Which foot stepped.
        foot: usize,
        /// Whether it landed this tick.
        now: bool,
        /// While the ground does not carry the other foot (it lifts as the body passes over
        /// the new one): its sole's three corners brought down flat onto the ground where
        /// they are, as tasks (none: it is on the ground).
        settle: Option<[PointTask; 3]>,
    },
}

impl StepCommand {
    /// The foot in the air this tick (none: both are planted as they touch).
    pub fn swing_foot(&self) -> Option<usize> {
        match self {
            Self::Swing { foot, .. } => Some(*foot),
            _ => None,
        }
    }

    /// The tasks to give the QP this tick: the swinging sole's, or the other foot's being
    /// brought down after a landing (none standing).
    pub fn tasks(&self) -> &[PointTask] {
        match self {
            Self::Swing { tasks, .. }
            | Self::Landed {
                settle: Some(tasks),
                ..
            } => tasks,
            _ => &[],
        }
    }

    /// Whether a step landed this tick: the caller holds the legs where they are from now.
    pub fn landed_now(&self) -> bool {
        matches!(self, Self::Landed { now: true, .. })
    }
}

#[derive(Debug, Clone, Copy)]
struct Swing {
    foot: usize,
    start_s: f64,
    start: [Vector3<f64>; 3],
    direction: Vector3<f64>,
    /// The swing foot's reach along `direction` where it started, m.
    front_m: f64,
    length_m: f64,
    landed: bool,
}

/// The recovery step's state: standing, swinging, landed. See the module docs.
#[derive(Debug, Clone, Copy)]
pub struct Stepper {
    settings: StepSettings,
    swing: Option<Swing>,
    steps: u32,
    longest_m: f64,
}

impl Stepper {
    /// A stepper that has not stepped; `None` if the settings are not valid
    /// ([`StepSettings::is_valid`]).
    pub fn new(settings: StepSettings) -> Option<Self> {
        settings.is_valid().then_some(Self {
            settings,
            swing: None,
            steps: 0,
            longest_m: 0.0,
        })
    }

    /// Its settings.
    pub fn settings(&self) -> &StepSettings {
        &self.settings
    }

    /// The current (or last) step's length so far (the landing point's distance from the
    /// start), m, and its foot, from a step's start until the stepper stands again.
    pub fn step(&self) -> Option<(usize, f64)> {
        self.swing.map(|s| (s.foot, s.length_m))
    }

    /// Steps started so far, and the longest of them (its length when it landed, or so far),
    /// m.
    pub fn steps(&self) -> (u32, f64) {
        let current = self.swing.map_or(0.0, |s| s.length_m);
        (self.steps, self.longest_m.max(current))
    }

    /// One tick at `time_s`: the centre of mass `com` and its velocity (world), the pendulum's
    /// rate `omega` (1/s, `√(g/h)`), the unit `up` vector, and both feet (input it cannot use:
    /// see the module docs). Decides whether a step starts, moves the swing along and notices
    /// the landing.
    pub fn tick(
        &mut self,
        time_s: f64,
        com: &Vector3<f64>,
        com_velocity: &Vector3<f64>,
        omega: f64,
        up: &Vector3<f64>,
        feet: &[FootState<'_>; 2],
    ) -> StepCommand {
        let finite = time_s.is_finite()
            && com.iter().chain(com_velocity.iter()).all(|x| x.is_finite())
            && omega.is_finite()
            && omega > 0.0
            && (up.norm() - 1.0).abs() <= UNIT_TOLERANCE
            && feet.iter().all(|f| {
                f.corners_world.iter().flatten().all(|x| x.is_finite())
                    && f.sole_world.iter().flatten().all(|x| x.is_finite())
                    && f.sole.len() >= 3
            });
        if !finite {
            return self.held();
        }
        let command = self.advance(time_s, com, com_velocity, omega, up, feet);
        // Finite inputs of absurd size can still overflow a target: never passed on.
        if command.tasks().iter().all(PointTask::is_finite) {
            command
        } else {
            self.held()
        }
    }

    /// What a tick whose input or output is not usable returns: no step started and no task
    /// given; a landed step stays landed.
    fn held(&self) -> StepCommand {
        match self.swing {
            Some(s) if s.landed => StepCommand::Landed {
                foot: s.foot,
                now: false,
                settle: None,
            },
            _ => StepCommand::Stand,
        }
    }

    /// [`Stepper::tick`] on checked input.
    fn advance(
        &mut self,
        time_s: f64,
        com: &Vector3<f64>,
        com_velocity: &Vector3<f64>,
        omega: f64,
        up: &Vector3<f64>,
        feet: &[FootState<'_>; 2],
    ) -> StepCommand {
        let flat = |x: Vector3<f64>| x - up * up.dot(&x);
        let xi = flat(com + com_velocity / omega);
        let s = self.settings;
        match self.swing {
            None => {
                // The footprint's middle (the corners' mean) and how far ξ is beyond it.
                let (mut sum, mut n) = (Vector3::zeros(), 0.0);
                for p in feet.iter().flat_map(|f| f.corners_world) {
                    sum += flat(Vector3::from(*p));
                    n += 1.0;
                }
                if n == 0.0 {
                    return StepCommand::Stand;
                }
                let off = xi - sum / n;
                let Some(direction) = off.try_normalize(1e-9) else {
                    return StepCommand::Stand;
                };
                let beyond = direction.dot(&xi) - reach(feet, &direction);
                if !(beyond > s.trigger_m) {
                    return StepCommand::Stand;
                }
                // The foot ahead along the direction steps (the other would cross in front of
                // it); of two feet level with each other, the less loaded one.
                let ahead = reach(core::slice::from_ref(&feet[1]), &direction)
                    - reach(core::slice::from_ref(&feet[0]), &direction);
                let foot = if ahead.abs() > LEVEL_M {
                    usize::from(ahead > 0.0)
                } else {
                    usize::from(feet[1].load_n < feet[0].load_n)
                };
                let start = feet[foot].sole_world.map(Vector3::from);
                self.steps = self.steps.saturating_add(1);
                self.swing = Some(Swing {
                    foot,
                    start_s: time_s,
                    start,
                    direction,
                    front_m: reach(core::slice::from_ref(&feet[foot]), &direction),
                    length_m: 0.0,
                    landed: false,
                });
                self.aim(&xi, omega, feet, 0.0);
                self.swinging(time_s, up, feet)
            }
            Some(sw) if sw.landed => {
                if feet.iter().all(|f| f.loaded) {
                    // On both feet again: stand, and step again if need be.
                    self.longest_m = self.longest_m.max(sw.length_m);
                    self.swing = None;
                    return StepCommand::Stand;
                }
                StepCommand::Landed {
                    foot: sw.foot,
                    now: false,
                    settle: settle(&sw, up, feet),
                }
            }
            Some(sw) => {
                let u = ((time_s - sw.start_s) / s.swing_s).clamp(0.0, 1.0);
                if u >= 1.0 && feet[sw.foot].loaded {
                    if let Some(w) = self.swing.as_mut() {
                        w.landed = true;
                    }
                    return StepCommand::Landed {
                        foot: sw.foot,
                        now: true,
                        settle: settle(&sw, up, feet),
                    };
                }
                if u < s.adapt_fraction {
                    self.aim(&xi, omega, feet, u);
                }
                self.swinging(time_s, up, feet)
            }
        }
    }

    /// Sets the step's length from the capture point predicted at touchdown, the swing
    /// being at fraction `u`.
    fn aim(&mut self, xi: &Vector3<f64>, omega: f64, feet: &[FootState<'_>; 2], u: f64) {
        let s = self.settings;
        let Some(sw) = self.swing.as_mut() else {
            return;
        };
        let Some(stance) = feet.get(1 - sw.foot.min(1)) else {
            return;
        };
        let edge = reach(core::slice::from_ref(stance), &sw.direction);
        let front = sw.front_m;
        let left_s = s.swing_s * (1.0 - u);
        let predicted = edge + (sw.direction.dot(xi) - edge) * libm::exp(omega * left_s);
        let length = predicted + s.aim_m - front;
        if length.is_finite() {
            sw.length_m = length.clamp(0.0, s.max_length_m);
        }
    }

    /// The swing's tasks at `time_s`.
    fn swinging(&self, time_s: f64, up: &Vector3<f64>, feet: &[FootState<'_>; 2]) -> StepCommand {
        let Some(sw) = self.swing else {
            return StepCommand::Stand;
        };
        let s = self.settings;
        let t = s.swing_s;
        let u = ((time_s - sw.start_s) / t).clamp(0.0, 1.0);
        let moving = u < 1.0;
        let (along, d_along, dd_along) = if moving {
            (
                u * u * (3.0 - 2.0 * u),
                6.0 * u * (1.0 - u) / t,
                (6.0 - 12.0 * u) / (t * t),
            )
        } else {
            (1.0, 0.0, 0.0)
        };
        let pi = core::f64::consts::PI;
        let (lift, d_lift, dd_lift) = if moving {
            let (sin, cos) = (libm::sin(pi * u), libm::cos(pi * u));
            (
                s.lift_m * sin,
                s.lift_m * pi / t * cos,
                -s.lift_m * (pi / t) * (pi / t) * sin,
            )
        } else {
            (0.0, 0.0, 0.0)
        };
        let way = sw.direction * sw.length_m;
        let foot = feet.get(sw.foot.min(1));
        let body = foot.map_or(0, |f| f.body);
        let mut tasks = [PointTask::on(body); 3];
        for (k, task) in tasks.iter_mut().enumerate() {
            let point = foot
                .and_then(|f| f.sole.get(k))
                .copied()
                .unwrap_or([0.0; 3]);
            let start = sw.start.get(k).copied().unwrap_or_else(Vector3::zeros);
            *task = PointTask {
                body,
                point,
                target: (start + way * along + up * lift).into(),
                target_velocity: (way * d_along + up * d_lift).into(),
                target_acceleration: (way * dd_along + up * dd_lift).into(),
            };
        }
        StepCommand::Swing {
            foot: sw.foot,
            tasks,
        }
    }
}

/// After a step has landed, the legs hold where they landed: every joint between the base and
/// each of `bodies` (the feet's tree bodies) gets its pose target from `held` (the joints'
/// coordinates when the step landed) instead of the standing pose, which would pull the feet
/// back together. Other joints keep their targets. A body past the tree changes nothing.
pub fn hold_legs<const N: usize>(
    tree: &Tree<N>,
    bodies: impl IntoIterator<Item = usize>,
    held: &[f64; N],
    q_target: &mut [f64; N],
) {
    for foot in bodies {
        let mut body = foot;
        // A joint's child is the body after it; each path to the base is at most every joint.
        for _ in 0..tree.joint_count() {
            let Some(joint) = body.checked_sub(1) else {
                break;
            };
            if let (Some(t), Some(h)) = (q_target.get_mut(joint), held.get(joint)) {
                *t = *h;
            }
            let Some(parent) = tree.parent_body(joint) else {
                break;
            };
            body = parent;
        }
    }
}

/// The other foot's tasks after a step while the ground does not carry it: its sole's
/// three corners straight down to the ground's height (where the swing foot's sole started),
/// at rest.
fn settle(sw: &Swing, up: &Vector3<f64>, feet: &[FootState<'_>; 2]) -> Option<[PointTask; 3]> {
    let other = feet.get(1 - sw.foot.min(1))?;
    if other.loaded {
        return None;
    }
    let ground = up.dot(sw.start.first()?);
    let mut tasks = [PointTask::on(other.body); 3];
    for (k, task) in tasks.iter_mut().enumerate() {
        let now = Vector3::from(*other.sole_world.get(k)?);
        task.point = *other.sole.get(k)?;
        task.target = (now - up * (up.dot(&now) - ground)).into();
    }
    Some(tasks)
}

/// The farthest any corner of `feet` reaches along the horizontal unit `direction`, m
/// (−∞ for no corner). A direction with no vertical part makes the height drop out.
fn reach(feet: &[FootState<'_>], direction: &Vector3<f64>) -> f64 {
    feet.iter()
        .flat_map(|f| f.corners_world)
        .map(|p| direction.dot(&Vector3::from(*p)))
        .fold(f64::NEG_INFINITY, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SOLE: [[f64; 3]; 4] = [
        [-0.1, 0.0, -0.05],
        [-0.1, 0.0, 0.05],
        [0.1, 0.0, -0.05],
        [0.1, 0.0, 0.05],
    ];

    /// Two feet side by side at z = ±0.1, soles 0.2 m long, in a y-up world.
    fn feet_at(
        world: &mut [[[f64; 3]; 4]; 2],
        loads: [f64; 2],
        loaded: [bool; 2],
    ) -> [FootState<'_>; 2] {
        for (k, foot) in world.iter_mut().enumerate() {
            let z = if k == 0 { 0.1 } else { -0.1 };
            for (c, s) in foot.iter_mut().zip(SOLE) {
                *c = [s[0], 0.0, s[2] + z];
            }
        }
        fn state<'a>(w: &'a [[f64; 3]; 4], k: usize, load_n: f64, loaded: bool) -> FootState<'a> {
            FootState {
                body: k + 1,
                sole: &SOLE,
                corners_world: &w[..],
                sole_world: [w[0], w[1], w[2]],
                loaded,
                load_n,
            }
        }
        let [a, b] = world;
        [
            state(a, 0, loads[0], loaded[0]),
            state(b, 1, loads[1], loaded[1]),
        ]
    }

    const UP: Vector3<f64> = Vector3::new(0.0, 1.0, 0.0);
    const OMEGA: f64 = 3.0;

    #[test]
    fn a_capture_point_inside_the_footprint_takes_no_step() {
        let mut world = [[[0.0; 3]; 4]; 2];
        let feet = feet_at(&mut world, [300.0, 300.0], [true, true]);
        let mut stepper = Stepper::new(StepSettings::DEFAULT).unwrap();
        // ξ = 0.05 + 0.1·(0.3/3) … inside the soles' front edge at x = 0.1.
        let com = Vector3::new(0.05, 1.0, 0.0);
        let velocity = Vector3::new(0.14, 0.0, 0.0);
        assert_eq!(
            stepper.tick(0.0, &com, &velocity, OMEGA, &UP, &feet),
            StepCommand::Stand
        );
        assert!(stepper.step().is_none());
    }

    #[test]
    fn a_capture_point_beyond_the_footprint_steps_with_the_less_loaded_foot_past_it() {
        let mut world = [[[0.0; 3]; 4]; 2];
        let feet = feet_at(&mut world, [400.0, 200.0], [true, true]);
        let s = StepSettings::DEFAULT;
        let mut stepper = Stepper::new(s).unwrap();
        let com = Vector3::new(0.05, 1.0, 0.0);
        let velocity = Vector3::new(0.3, 0.0, 0.0); // ξ at 0.15: 5 cm beyond the toes
        let StepCommand::Swing { foot, tasks } =
            stepper.tick(0.0, &com, &velocity, OMEGA, &UP, &feet)
        else {
            panic!("no step");
        };
        assert_eq!(foot, 1);
        // The capture point at touchdown: 0.1 + 0.05 e^{ω T}, the front edge aim_m past it.
        let predicted = 0.1 + 0.05 * (OMEGA * s.swing_s).exp();
        let (_, length) = stepper.step().unwrap();
        assert!(
            (length - (predicted + s.aim_m - 0.1)).abs() < 1e-12,
            "{length}"
        );
        // The swing starts where the sole is, rising (sin(π u)'s slope) but not yet moving along.
        let rise = s.lift_m * core::f64::consts::PI / s.swing_s;
        for (task, start) in tasks.iter().zip(&feet[1].sole_world) {
            assert_eq!(task.body, 2);
            assert_eq!(task.target, *start);
            assert_eq!(task.target_velocity, [0.0, rise, 0.0]);
        }
        // Half-way it is lifted by lift_m and half-way along; at the end on the ground.
        let mid = stepper.tick(s.swing_s / 2.0, &com, &velocity, OMEGA, &UP, &feet);
        let StepCommand::Swing { tasks, .. } = mid else {
            panic!("{mid:?}");
        };
        let (_, length) = stepper.step().unwrap();
        let t = tasks[0].target;
        let start = feet[1].sole_world[0];
        assert!((t[1] - (start[1] + s.lift_m)).abs() < 1e-12);
        assert!((t[0] - (start[0] + length / 2.0)).abs() < 1e-12);
        let end = stepper.tick(s.swing_s, &com, &velocity, OMEGA, &UP, &feet);
        assert_eq!(
            end,
            StepCommand::Landed {
                foot: 1,
                now: true,
                settle: None
            }
        );
        // The other foot lifted (by 2 cm, its heel up): it is brought down where it is.
        let mut lifted = [[[0.0; 3]; 4]; 2];
        let mut one_foot = feet_at(&mut lifted, [0.0, 600.0], [false, true]);
        let mut sole = one_foot[0].sole_world;
        for c in &mut sole {
            c[1] += 0.02;
        }
        one_foot[0].sole_world = sole;
        let later = stepper.tick(s.swing_s + 0.1, &com, &velocity, OMEGA, &UP, &one_foot);
        let StepCommand::Landed {
            foot: 1,
            now: false,
            settle: Some(tasks),
        } = later
        else {
            panic!("{later:?}");
        };
        for (task, now) in tasks.iter().zip(&sole) {
            assert_eq!(task.body, 1);
            assert_eq!(task.target, [now[0], 0.0, now[2]]);
            assert_eq!(task.target_velocity, [0.0; 3]);
        }
        // On both feet again it stands, and steps again while ξ is beyond the footprint.
        let (_, first) = stepper.step().unwrap();
        let stand = stepper.tick(s.swing_s + 0.2, &com, &velocity, OMEGA, &UP, &feet);
        assert_eq!(stand, StepCommand::Stand);
        assert_eq!(stepper.steps(), (1, first));
        let again = stepper.tick(s.swing_s + 0.205, &com, &velocity, OMEGA, &UP, &feet);
        assert!(
            matches!(again, StepCommand::Swing { foot: 1, .. }),
            "{again:?}"
        );
        assert_eq!(stepper.steps().0, 2);
    }

    #[test]
    fn a_swing_ends_only_on_the_ground_and_its_length_is_bounded() {
        let mut world = [[[0.0; 3]; 4]; 2];
        let feet_in_air = feet_at(&mut world, [400.0, 0.0], [true, false]);
        let s = StepSettings {
            max_length_m: 0.3,
            ..StepSettings::DEFAULT
        };
        let mut stepper = Stepper::new(s).unwrap();
        let com = Vector3::new(0.1, 1.0, 0.0);
        let velocity = Vector3::new(3.0, 0.0, 0.0); // far beyond: the longest step
        assert!(matches!(
            stepper.tick(0.0, &com, &velocity, OMEGA, &UP, &feet_in_air),
            StepCommand::Swing { foot: 1, .. }
        ));
        assert_eq!(stepper.step(), Some((1, 0.3)));
        // Time is up but the foot is not on the ground: it is held at the landing point.
        let late = stepper.tick(2.0 * s.swing_s, &com, &velocity, OMEGA, &UP, &feet_in_air);
        let StepCommand::Swing { tasks, .. } = late else {
            panic!("{late:?}");
        };
        assert!((tasks[0].target[0] - (-0.1 + 0.3)).abs() < 1e-12);
        assert_eq!(tasks[0].target_velocity, [0.0; 3]);
    }

    #[test]
    fn a_command_says_which_foot_swings_its_tasks_and_a_landing() {
        let task = PointTask::on(2);
        let swing = StepCommand::Swing {
            foot: 1,
            tasks: [task; 3],
        };
        assert_eq!((swing.swing_foot(), swing.tasks().len()), (Some(1), 3));
        assert!(!swing.landed_now());
        let landed = StepCommand::Landed {
            foot: 1,
            now: true,
            settle: None,
        };
        assert_eq!((landed.swing_foot(), landed.tasks().len()), (None, 0));
        assert!(landed.landed_now());
        let settling = StepCommand::Landed {
            foot: 1,
            now: false,
            settle: Some([task; 3]),
        };
        assert_eq!(settling.tasks(), &[task; 3]);
        assert!(!settling.landed_now());
        assert!(StepCommand::Stand.tasks().is_empty());
    }

    #[test]
    fn held_legs_are_the_joints_between_the_base_and_the_feet() {
        use crate::articulated::{LinkSpec, serial_tree};
        let rod = LinkSpec {
            origin_xyz_m: [0.0, 0.0, -0.3],
            origin_rpy_rad: [0.0; 3],
            axis: [0.0, 1.0, 0.0],
            mass_kg: 1.0,
            com_m: [0.0, 0.0, -0.15],
            inertia_kgm2: [0.01, 0.0, 0.0, 0.01, 0.0, 0.001],
        };
        // A chain of four: "feet" at bodies 2 and 9 (past the tree).
        let tree = serial_tree::<4>(&[rod; 4]).unwrap();
        let held = [1.0, 2.0, 3.0, 4.0];
        let mut target = [0.0; 4];
        hold_legs(&tree, [2, 9], &held, &mut target);
        assert_eq!(target, [1.0, 2.0, 0.0, 0.0]);
        hold_legs(&tree, [4], &held, &mut target);
        assert_eq!(target, held);
    }

    #[test]
    fn scaled_settings_keep_the_swing_in_pendulum_time_and_aim_half_a_foot() {
        let d = StepSettings::DEFAULT;
        let same = StepSettings::scaled(HUMANOID_OMEGA, 2.0 * d.aim_m).unwrap();
        assert!((same.swing_s - d.swing_s).abs() < 1e-15);
        assert_eq!(
            StepSettings {
                swing_s: d.swing_s,
                ..same
            },
            d
        );
        let small = StepSettings::scaled(2.0 * HUMANOID_OMEGA, 0.1).unwrap();
        assert!((small.swing_s - d.swing_s / 2.0).abs() < 1e-15);
        assert_eq!(small.aim_m, 0.05);
        assert!(small.is_valid());
        for (omega, length) in [
            (0.0, 0.2),
            (3.0, 0.0),
            (f64::NAN, 0.2),
            (3.0, f64::INFINITY),
        ] {
            assert!(
                StepSettings::scaled(omega, length).is_none(),
                "{omega} {length}"
            );
        }
    }

    #[test]
    fn non_finite_input_takes_no_step_and_bad_settings_are_refused() {
        let mut world = [[[0.0; 3]; 4]; 2];
        let feet = feet_at(&mut world, [300.0, 300.0], [true, true]);
        let mut stepper = Stepper::new(StepSettings::DEFAULT).unwrap();
        let com = Vector3::new(f64::NAN, 1.0, 0.0);
        let velocity = Vector3::new(3.0, 0.0, 0.0);
        assert_eq!(
            stepper.tick(0.0, &com, &velocity, OMEGA, &UP, &feet),
            StepCommand::Stand
        );
        for bad in [
            StepSettings {
                swing_s: 0.0,
                ..StepSettings::DEFAULT
            },
            StepSettings {
                adapt_fraction: 1.5,
                ..StepSettings::DEFAULT
            },
            StepSettings {
                lift_m: f64::NAN,
                ..StepSettings::DEFAULT
            },
        ] {
            assert!(Stepper::new(bad).is_none(), "{bad:?}");
        }
    }

    /// A value of any kind now and then (NaN, ±∞, huge, subnormal), else an ordinary one.
    fn any_f64(ordinary: core::ops::Range<f64>) -> impl Strategy<Value = f64> {
        prop_oneof![12 => ordinary, 1 => proptest::num::f64::ANY]
    }

    fn any_vector(ordinary: core::ops::Range<f64>) -> impl Strategy<Value = Vector3<f64>> {
        prop::array::uniform3(any_f64(ordinary)).prop_map(Vector3::from)
    }

    /// One tick's input: time step, centre of mass and its velocity, ω, up, and per foot its
    /// corners (world; 0 to 6, the first three its sole's start), load and whether loaded.
    type TickInput = (
        f64,
        Vector3<f64>,
        Vector3<f64>,
        f64,
        Vector3<f64>,
        [(Vec<[f64; 3]>, f64, bool); 2],
    );

    fn tick_input() -> impl Strategy<Value = TickInput> {
        let foot = || {
            (
                prop::collection::vec(prop::array::uniform3(any_f64(-0.4..0.4)), 0..=6),
                any_f64(0.0..600.0),
                any::<bool>(),
            )
        };
        (
            any_f64(0.0..0.05),
            any_vector(-0.3..0.3),
            any_vector(-3.0..3.0),
            any_f64(0.5..5.0),
            prop_oneof![8 => Just(UP), 1 => any_vector(-2.0..2.0)],
            [foot(), foot()],
        )
    }

    proptest! {
        /// Over any sequence of ticks, ordinary or garbage: no panic, every task finite and on
        /// its foot's body, a swing's foot 0 or 1, steps within the longest allowed, a landing
        /// only of the foot that swung.
        #[test]
        fn any_ticks_give_finite_commands_within_the_settings(
            ticks in prop::collection::vec(tick_input(), 1..80),
            settings in (0.05..1.0f64, 0.0..0.2f64, 0.0..0.6f64, -0.1..0.3f64, 0.0..=1.0f64, 0.0..0.05f64),
        ) {
            let (swing_s, lift_m, max_length_m, aim_m, adapt_fraction, trigger_m) = settings;
            let settings = StepSettings { swing_s, lift_m, max_length_m, aim_m, adapt_fraction, trigger_m };
            let mut stepper = Stepper::new(settings).unwrap();
            let mut time = 0.0;
            let mut swung: Option<usize> = None;
            for (dt, com, velocity, omega, up, feet) in &ticks {
                time += dt;
                let state = |k: usize| {
                    let (corners, load_n, loaded) = &feet[k];
                    let at = |i: usize| corners.get(i).copied().unwrap_or([0.0; 3]);
                    FootState {
                        body: k + 1,
                        sole: &SOLE,
                        corners_world: corners,
                        sole_world: [at(0), at(1), at(2)],
                        loaded: *loaded,
                        load_n: *load_n,
                    }
                };
                let command = stepper.tick(time, com, velocity, *omega, up, &[state(0), state(1)]);
                prop_assert!(command.tasks().iter().all(PointTask::is_finite), "{command:?}");
                match command {
                    StepCommand::Swing { foot, tasks } => {
                        prop_assert!(foot <= 1);
                        prop_assert!(swung.is_none_or(|f| f == foot), "{swung:?} then {foot}");
                        prop_assert!(tasks.iter().all(|t| t.body == foot + 1));
                        swung = Some(foot);
                    }
                    StepCommand::Landed { foot, settle, .. } => {
                        prop_assert_eq!(swung, Some(foot));
                        prop_assert!(settle.iter().flatten().all(|t| t.body == 2 - foot));
                    }
                    StepCommand::Stand => {
                        if stepper.step().is_none() {
                            swung = None;
                        }
                    }
                }
                let (count, longest) = stepper.steps();
                prop_assert!((0.0..=max_length_m).contains(&longest), "{longest}");
                prop_assert!(count as usize <= ticks.len());
            }
        }
    }
}
