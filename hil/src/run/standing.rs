//! What a pushed robot's standing is judged by, measured the same way by every kind that pushes
//! one (`dynamo_push` with its balance scenarios, `robot_push`): its feet ([`FeetMeter`]: the
//! forces as the plant measured them against the friction cone, and the feet's own motion along
//! the ground) and its capture point against the feet's footprint ([`CaptureOut`]). Forces and
//! motion are different things: with two or more feet down the plant's solver may load their
//! cones with internal forces (equal and opposite, moving nothing), so a foot at its cone's edge
//! need not slide, and `slip_steps` counts motion, not forces.
//!
//! And the balls both kinds may throw at it ([`PeltSpec`]), and how many hit ([`BallCount`]).
//!
//! Runs in the recorder, off the control thread.

use serde::{Deserialize, Serialize};

/// A planted foot whose points' centroid moves faster than this along the ground slips, m/s.
pub const SLIP_M_S: f64 = 0.01;

/// A foot whose tangential force is at least this fraction of μ times its normal force is at
/// its friction cone's edge.
pub const SATURATED_USE: f64 = 0.99;

/// The ground's forces on the feet as the plant measured them, and the feet's motion, until the
/// fall (or the end).
#[derive(Debug, Clone, Default, Serialize)]
pub struct FeetOut {
    /// Largest ‖f_t‖ / (μ f_n) over the steps and the feet touching the ground (μ the ground's):
    /// 1 is the cone's edge.
    pub max_friction_use: f64,
    /// Foot-steps at the cone's edge (friction use ≥ [`SATURATED_USE`]): forces, not motion
    /// (see the module docs).
    pub saturated_steps: u64,
    /// Foot-steps on which a foot touching at this step and the last moved along the ground
    /// faster than [`SLIP_M_S`] (its sole points' centroid).
    pub slip_steps: u64,
    /// A foot lifting: touching at one step, not at the next.
    pub lift_events: u64,
    /// The farthest a foot's centroid got from where it stood at the first state, along the
    /// ground, m (a step taken counts).
    pub max_drift_m: f64,
}

/// One foot at one state, as the plant measured it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FootForce {
    /// Whether the ground carries it (the kind's own threshold on the normal force).
    pub touching: bool,
    /// ‖f_t‖ / (μ f_n), read while it touches.
    pub friction_use: f64,
}

/// Turns each state's feet into a [`FeetOut`].
#[derive(Debug, Clone, Default)]
pub struct FeetMeter {
    out: FeetOut,
    /// Whether each foot touched at the last state.
    planted: Vec<bool>,
    /// Each foot's centroid at the last measured state and at the first, along the ground, m.
    last: Vec<[f64; 2]>,
    start: Vec<[f64; 2]>,
}

impl FeetMeter {
    /// A meter for `feet` feet.
    pub fn new(feet: usize) -> Self {
        Self {
            out: FeetOut::default(),
            planted: vec![false; feet],
            last: Vec::with_capacity(feet),
            start: Vec::with_capacity(feet),
        }
    }

    /// One state: each foot's force (`feet`, one per foot in a fixed order), where their sole
    /// points' centroids are along the ground (`at`, the same order; `None` where the state
    /// could not be measured), the time since the last state `dt_s`, and whether a foot leaving
    /// the ground counts as a lift (not on the run's first steps, while the body settles).
    pub fn state(
        &mut self,
        feet: &[FootForce],
        at: Option<&[[f64; 2]]>,
        dt_s: f64,
        count_lifts: bool,
    ) {
        let measured = !self.last.is_empty();
        for (k, foot) in feet.iter().enumerate() {
            let planted = self.planted.get(k).copied().unwrap_or(false);
            if foot.touching {
                self.out.max_friction_use = self.out.max_friction_use.max(foot.friction_use);
                if foot.friction_use >= SATURATED_USE {
                    self.out.saturated_steps += 1;
                }
            }
            if let (Some(now), true) = (at.and_then(|a| a.get(k)), measured) {
                let last = self.last.get(k).copied().unwrap_or(*now);
                let start = self.start.get(k).copied().unwrap_or(*now);
                let moved = (now[0] - last[0]).hypot(now[1] - last[1]);
                if foot.touching && planted && dt_s > 0.0 && moved > SLIP_M_S * dt_s {
                    self.out.slip_steps += 1;
                }
                let drift = (now[0] - start[0]).hypot(now[1] - start[1]);
                self.out.max_drift_m = self.out.max_drift_m.max(drift);
            }
            if planted && !foot.touching && count_lifts {
                self.out.lift_events += 1;
            }
            if let Some(p) = self.planted.get_mut(k) {
                *p = foot.touching;
            }
        }
        if let Some(now) = at {
            if self.start.is_empty() {
                self.start.extend_from_slice(now);
            }
            self.last.clear();
            self.last.extend_from_slice(now);
        }
    }

    /// What it measured so far.
    pub fn out(&self) -> &FeetOut {
        &self.out
    }
}

/// The capture point `ξ = x + ẋ/ω` (ω = √(g/h)) against the feet's footprint (the convex hull
/// of every foot point on the ground, touching or not), from the push's start until the fall or
/// the end.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CaptureOut {
    /// The smallest signed distance from the capture point to the footprint's edge, m:
    /// positive inside, negative outside (beyond the support).
    pub min_margin_m: Option<f64>,
    /// When that was, s.
    pub min_margin_at_s: Option<f64>,
    /// The same at the last state before the run ended (or fell), m: a run that ends with its
    /// capture point outside its footprint is falling and does not count as standing.
    pub end_margin_m: Option<f64>,
    /// The largest speed of the centre of mass along the push direction, m/s.
    pub max_com_speed_m_s: f64,
    /// At the push's start: how far the footprint reaches beyond the capture point along the
    /// push direction, m. An impulse of `m ω` times this puts the capture point on the
    /// footprint's front edge: the most the ankles alone can stop.
    pub front_at_push_m: Option<f64>,
    /// ω = √(g / h) at the push's start, 1/s.
    pub omega_at_push_per_s: Option<f64>,
}

impl CaptureOut {
    /// A margin measured at `time_s` (`None`: none could be): the end margin, and the smallest
    /// with its time.
    pub fn margin(&mut self, time_s: f64, margin: Option<f64>) {
        self.end_margin_m = margin;
        if let Some(margin) = margin
            && self.min_margin_m.is_none_or(|m| margin < m)
        {
            self.min_margin_m = Some(margin);
            self.min_margin_at_s = Some(time_s);
        }
    }

    /// The centre of mass's speed along the push at a state, m/s.
    pub fn speed(&mut self, along_push_m_s: f64) {
        self.max_com_speed_m_s = self.max_com_speed_m_s.max(along_push_m_s);
    }

    /// At the push's start: the footprint's reach beyond the capture point along the push, m,
    /// and ω, 1/s. Only the first call counts.
    pub fn at_push(&mut self, front_m: f64, omega_per_s: f64) {
        if self.front_at_push_m.is_none() {
            self.front_at_push_m = Some(front_m);
            self.omega_at_push_per_s = Some(omega_per_s);
        }
    }
}

/// Balls thrown at the pushed body, one after another along the push's direction (its part
/// along the ground): ball k (from 0) arrives at `first_s + k · interval_s` at the body's centre
/// of mass as the robot stands at the start, at the top of its arc (no vertical velocity there),
/// with a horizontal speed from `speed_m_s[0]` (the first) to `speed_m_s[1]` (the last) in equal
/// steps, thrown from `distance_m` away. Every run of the scenario gets them (`[pelt]` of
/// `dynamo_push` and `robot_push`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeltSpec {
    /// How many, 1 – [`sim_host::MAX_PROPS`].
    pub count: usize,
    /// When the first arrives, s.
    pub first_s: f64,
    /// Between arrivals, s (> 0).
    pub interval_s: f64,
    /// The first and the last ball's speed, m/s (each in (0, 100]).
    #[serde(deserialize_with = "sim_host::input::exact")]
    pub speed_m_s: [f64; 2],
    /// Each ball's mass, kg, (0, 100].
    pub mass_kg: f64,
    /// Each ball's radius, m, [0.01, 1].
    pub radius_m: f64,
    /// How far from the body each is thrown, m, (0, 100].
    pub distance_m: f64,
}

impl PeltSpec {
    /// Ball `k`'s arrival time and speed.
    pub fn arrival(&self, k: usize) -> (f64, f64) {
        let [v0, v1] = self.speed_m_s;
        let share = if self.count > 1 {
            k as f64 / (self.count - 1) as f64
        } else {
            0.0
        };
        (
            self.first_s + k as f64 * self.interval_s,
            v0 + (v1 - v0) * share,
        )
    }

    /// Every field in range, every ball thrown at t ≥ 0 and arriving by `end_s`; the failing
    /// field (`pelt.…`) and why.
    pub fn check(&self, end_s: f64) -> Result<(), (String, String)> {
        let bad = |f: &str, r: String| Err((format!("pelt.{f}"), r));
        let max = sim_host::MAX_PROPS;
        if !(1..=max).contains(&self.count) {
            return bad("count", format!("{}: within [1, {max}]", self.count));
        }
        for (f, v, lo, hi) in [
            ("first_s", self.first_s, 0.0, 1e4),
            ("interval_s", self.interval_s, 1e-3, 1e4),
            ("speed_m_s[0]", self.speed_m_s[0], 1e-3, 100.0),
            ("speed_m_s[1]", self.speed_m_s[1], 1e-3, 100.0),
            ("mass_kg", self.mass_kg, 1e-3, 100.0),
            ("radius_m", self.radius_m, 0.01, 1.0),
            ("distance_m", self.distance_m, 1e-3, 100.0),
        ] {
            if !(v.is_finite() && (lo..=hi).contains(&v)) {
                return bad(f, format!("{v}: must be within [{lo}, {hi}]"));
            }
        }
        for k in 0..self.count {
            let (arrive, speed) = self.arrival(k);
            if arrive - self.distance_m / speed < 0.0 {
                return bad(
                    "first_s",
                    format!(
                        "ball {k} would be thrown before the run starts (it flies {} s)",
                        self.distance_m / speed
                    ),
                );
            }
            if arrive > end_s {
                return bad(
                    "count",
                    format!("ball {k} arrives at {arrive} s, after the run's end at {end_s} s"),
                );
            }
        }
        Ok(())
    }

    /// The balls, ids from [`sim_host::FIRST_PROP_ID`], thrown at `target` (a world point, m)
    /// along `direction`'s part across `up` (the world axis against gravity, 0 – 2) under
    /// gravity `g` (m/s², > 0).
    pub fn balls(
        &self,
        target: [f64; 3],
        direction: [f64; 3],
        up: usize,
        g: f64,
    ) -> Vec<sim_host::BallSpawn> {
        let d = direction;
        let (a, b) = ((up + 1) % 3, (up + 2) % 3);
        let (a, b) = (a.min(b), a.max(b));
        let h = (d[a] * d[a] + d[b] * d[b]).sqrt().max(1e-12);
        let mut dir = [0.0; 3];
        dir[a] = d[a] / h;
        dir[b] = d[b] / h;
        (0..self.count)
            .map(|k| {
                let (arrive, speed) = self.arrival(k);
                let flight = self.distance_m / speed;
                let (mut position_m, mut velocity_m_s) = ([0.0; 3], [0.0; 3]);
                for i in [a, b] {
                    position_m[i] = target[i] - dir[i] * self.distance_m;
                    velocity_m_s[i] = dir[i] * speed;
                }
                // At the top of its arc when it arrives.
                position_m[up] = target[up] - 0.5 * g * flight * flight;
                velocity_m_s[up] = g * flight;
                sim_host::BallSpawn {
                    id: sim_host::FIRST_PROP_ID + k as u16,
                    spawn_time_s: arrive - flight,
                    position_m,
                    velocity_m_s,
                    radius_m: self.radius_m,
                    mass_kg: self.mass_kg,
                }
            })
            .collect()
    }
}

/// The balls that hit, counted once each by id.
#[derive(Debug, Clone, Default)]
pub struct BallCount {
    hit_ids: Vec<u16>,
    out: BallsOut,
}

impl BallCount {
    /// None hit yet of `thrown`.
    pub fn new(thrown: usize) -> Self {
        Self {
            hit_ids: Vec::with_capacity(thrown),
            out: BallsOut {
                thrown,
                ..BallsOut::default()
            },
        }
    }

    /// Ball `id` touched the robot (counted once), `fallen` or not yet.
    pub fn touched(&mut self, id: u16, fallen: bool) {
        if !self.hit_ids.contains(&id) {
            self.hit_ids.push(id);
            self.out.hit += 1;
            if !fallen {
                self.out.hit_before_fall += 1;
            }
        }
    }

    /// What the report says.
    pub fn out(&self) -> BallsOut {
        self.out.clone()
    }
}

/// Balls thrown at the robot (`[pelt]`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct BallsOut {
    /// Thrown.
    pub thrown: usize,
    /// That touched the robot.
    pub hit: usize,
    /// That touched it before it fell (all that hit, if it stood).
    pub hit_before_fall: usize,
}

impl BallsOut {
    /// The summary's line for controller `name`'s run at `impulse_ns`, which `stood` (`None`:
    /// cut).
    pub fn summary_line(&self, name: &str, impulse_ns: f64, stood: Option<bool>) -> String {
        format!(
            "{name} at {impulse_ns} N·s: {} of {} balls hit, {} before {}\n",
            self.hit,
            self.thrown,
            self.hit_before_fall,
            match stood {
                Some(true) => "the end, standing",
                Some(false) => "it fell",
                None => "the run was cut",
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn down(friction_use: f64) -> FootForce {
        FootForce {
            touching: true,
            friction_use,
        }
    }

    const UP: FootForce = FootForce {
        touching: false,
        friction_use: 0.0,
    };

    #[test]
    fn forces_motion_and_lifts_are_counted_apart() {
        let mut m = FeetMeter::new(2);
        // First state: nothing to compare with yet.
        m.state(
            &[down(0.5), down(0.995)],
            Some(&[[0.0, 0.0], [0.2, 0.0]]),
            0.0,
            false,
        );
        assert_eq!(m.out().saturated_steps, 1);
        assert_eq!(m.out().slip_steps, 0);
        // Foot 0 slides 1 mm in 10 ms (0.1 m/s); foot 1 stays put at its cone's edge.
        m.state(
            &[down(0.7), down(0.999)],
            Some(&[[0.001, 0.0], [0.2, 0.0]]),
            0.01,
            true,
        );
        assert_eq!(m.out().slip_steps, 1);
        assert_eq!(m.out().saturated_steps, 2);
        assert_eq!(m.out().max_friction_use, 0.999);
        // Foot 1 lifts and moves: a lift, not a slip.
        m.state(
            &[down(0.1), UP],
            Some(&[[0.001, 0.0], [0.3, 0.0]]),
            0.01,
            true,
        );
        assert_eq!(m.out().slip_steps, 1);
        assert_eq!(m.out().lift_events, 1);
        assert!((m.out().max_drift_m - 0.1).abs() < 1e-12);
        // Foot 1 lands moving: not planted at the last state, so no slip either.
        m.state(
            &[down(0.1), down(0.1)],
            Some(&[[0.001, 0.0], [0.4, 0.0]]),
            0.01,
            true,
        );
        assert_eq!(m.out().slip_steps, 1);
        assert!((m.out().max_drift_m - 0.2).abs() < 1e-12);
    }

    #[test]
    fn the_capture_point_keeps_its_smallest_margin_and_the_first_push_state() {
        let mut c = CaptureOut::default();
        c.at_push(0.11, 2.97);
        c.at_push(0.5, 1.0);
        assert_eq!(
            (c.front_at_push_m, c.omega_at_push_per_s),
            (Some(0.11), Some(2.97))
        );
        c.margin(1.0, Some(0.05));
        c.margin(1.5, Some(-0.02));
        c.margin(2.0, Some(0.03));
        c.speed(0.4);
        c.speed(0.2);
        assert_eq!(c.min_margin_m, Some(-0.02));
        assert_eq!(c.min_margin_at_s, Some(1.5));
        assert_eq!(c.end_margin_m, Some(0.03));
        assert_eq!(c.max_com_speed_m_s, 0.4);
        // A state that could not be measured leaves no end margin (not judged standing).
        c.margin(2.5, None);
        assert_eq!(c.end_margin_m, None);
        assert_eq!(c.min_margin_m, Some(-0.02));
    }

    #[test]
    fn a_state_without_positions_counts_forces_and_lifts_only() {
        let mut m = FeetMeter::new(1);
        m.state(&[down(0.2)], None, 0.0, true);
        m.state(&[UP], None, 0.01, true);
        assert_eq!(m.out().lift_events, 1);
        assert_eq!(m.out().slip_steps, 0);
        assert_eq!(m.out().max_drift_m, 0.0);
        // Lifts are not counted while the caller says so (the first steps).
        let mut m = FeetMeter::new(1);
        m.state(&[down(0.2)], None, 0.0, false);
        m.state(&[UP], None, 0.01, false);
        assert_eq!(m.out().lift_events, 0);
    }

    /// Each ball flies freely into the target at its arrival time, at the top of its arc, along
    /// the push's direction across the up axis, each faster than the last; the count is one
    /// ball per hit, a ball hitting twice counted once.
    #[test]
    fn balls_arrive_at_the_target_at_the_top_of_their_arc_and_count_once() {
        let pelt = PeltSpec {
            count: 3,
            first_s: 1.0,
            interval_s: 0.5,
            speed_m_s: [2.0, 6.0],
            mass_kg: 0.3,
            radius_m: 0.03,
            distance_m: 2.0,
        };
        assert_eq!(pelt.check(3.0), Ok(()));
        assert_eq!(
            pelt.check(1.5).map_err(|e| e.0),
            Err("pelt.count".to_owned())
        );
        let target = [0.1, -0.2, 0.3];
        for (up, g) in [(1, 9.81), (2, 9.81)] {
            let mut direction = [0.0; 3];
            direction[(up + 2) % 3] = 3.0; // across up
            direction[up] = 1.0; // ignored: balls fly across up
            let balls = pelt.balls(target, direction, up, g);
            assert_eq!(balls.len(), 3);
            for (k, b) in balls.iter().enumerate() {
                let (arrive, speed) = pelt.arrival(k);
                let t = arrive - b.spawn_time_s;
                assert_eq!(b.id, sim_host::FIRST_PROP_ID + k as u16);
                for (i, aim) in target.iter().enumerate() {
                    let fall = if i == up { -0.5 * g * t * t } else { 0.0 };
                    let at = b.position_m[i] + b.velocity_m_s[i] * t + fall;
                    assert!((at - aim).abs() < 1e-12, "ball {k} axis {i}: {at}");
                }
                assert!((b.velocity_m_s[up] - g * t).abs() < 1e-12);
                let across: f64 = (0..3)
                    .filter(|&i| i != up)
                    .map(|i| b.velocity_m_s[i] * b.velocity_m_s[i])
                    .sum();
                assert!((across.sqrt() - speed).abs() < 1e-12);
            }
            assert!(balls[0].spawn_time_s < balls[1].spawn_time_s);
        }
        let mut count = BallCount::new(3);
        count.touched(100, false);
        count.touched(100, false);
        count.touched(102, true);
        let out = count.out();
        assert_eq!((out.thrown, out.hit, out.hit_before_fall), (3, 2, 1));
        assert!(
            out.summary_line("pd_hold", 0.0, Some(true))
                .contains("2 of 3 balls hit, 1 before the end")
        );
    }
}
