//! hil owns the clock of a run: which plant state comes next, what time it is, and when the run
//! ends. The plant is a separate process that may be faulty or lying with well-formed frames, so
//! every state frame the link accepted (a valid, checksummed frame with a newer sequence number)
//! is checked here before a controller, a recorder or the watchdog sees it:
//!
//! - **Order.** The first state is step 0; every later one is exactly one step after the last
//!   accepted one, with the next sequence number. A plant steps once per state it sends, in
//!   lockstep and in real time alike, so a repeated, frozen, skipped or backwards step is a fault.
//! - **Time.** `sim_time_s` is `step × dt` of the scene hil wrote (to a thousandth of a step).
//! - **End.** The run ends at the scene's last step (`end_time_s / dt_s`, rounded, as the plant
//!   counts it), whatever the plant says: a state beyond it is refused, and a state flagged final
//!   before it is an early end, which loses the plant ([`Refusal::EarlyFinal`]); it is never a
//!   completed run.
//! - **Plausibility.** Joint positions and velocities, body positions, velocities and
//!   orientations, and contact forces within physical bounds no robot or character of a scene
//!   reaches ([`Bounds`]); orientations unit quaternions.
//!
//! A refused state is counted by reason ([`StateRejections`]) and dropped: it does not reach the
//! controller and does not reset the watchdog, so a plant that sends only refused states is lost
//! after the watchdog window as if it were silent.
//!
//! Never does: allocate, block or panic (it runs on the I/O thread in real time), or let a
//! refused state advance the clock.

use std::path::Path;

use control_core::frames::{StateFlags, StateFrame};
use serde::Serialize;

/// The bounds beyond which a state is implausible for any model a scene can hold. They are far
/// beyond anything the scenes reach (the fastest joint seen in the shipped scenarios turns at a
/// few tens of rad/s) and far below what a lying plant sends (1e300).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// |joint position|, rad (about 160 turns: a joint with limits never gets near it).
    pub joint_position_rad: f64,
    /// |joint velocity|, rad/s.
    pub joint_velocity_rad_s: f64,
    /// |body centre of mass| from the world origin, m.
    pub body_position_m: f64,
    /// |body velocity|, m/s.
    pub body_velocity_m_s: f64,
    /// |body angular velocity|, rad/s.
    pub body_angular_velocity_rad_s: f64,
    /// | |q| − 1 | of a body's orientation quaternion.
    pub quaternion_norm_error: f64,
    /// |contact force|, N.
    pub contact_force_n: f64,
}

/// The bounds every run is checked against.
pub const BOUNDS: Bounds = Bounds {
    joint_position_rad: 1.0e3,
    joint_velocity_rad_s: 1.0e3,
    body_position_m: 1.0e4,
    body_velocity_m_s: 1.0e3,
    body_angular_velocity_rad_s: 1.0e3,
    quaternion_norm_error: 1.0e-3,
    contact_force_n: 1.0e8,
};

/// The clock of one run: the scene's physics step and its last step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunClock {
    /// Physics step, s.
    pub dt_s: f64,
    /// The step of the run's last state (the plant's `end_time_s / dt_s`, rounded).
    pub final_step: u64,
}

impl RunClock {
    /// The clock of the scene in the JSON scene file `path` (every scene has `dt_s` and
    /// `end_time_s`, checked by the plant's loader; checked again here).
    pub fn of_scene_file(path: &Path) -> Result<Self, String> {
        let text = sim_host::input::read_text(path, sim_host::input::InputKind::Scene)
            .map_err(|e| e.to_string())?;
        let scene: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| format!("scene {}: not JSON: {e}", path.display()))?;
        let field = |name: &str| {
            scene
                .get(name)
                .and_then(serde_json::Value::as_f64)
                .ok_or_else(|| format!("scene {}: no number `{name}`", path.display()))
        };
        Self::new(field("dt_s")?, field("end_time_s")?)
            .map_err(|e| format!("scene {}: {e}", path.display()))
    }

    /// The clock of a scene of step `dt_s` ending at `end_time_s`.
    pub fn new(dt_s: f64, end_time_s: f64) -> Result<Self, String> {
        if !(dt_s.is_finite() && dt_s > 0.0) {
            return Err(format!("dt_s {dt_s}: not a positive time"));
        }
        if !(end_time_s.is_finite() && end_time_s >= 0.0) {
            return Err(format!("end_time_s {end_time_s}: not a time ≥ 0"));
        }
        Ok(Self {
            dt_s,
            final_step: sim_host::scene::steps_for(end_time_s, dt_s),
        })
    }

    /// The simulated time of the run's last state, s.
    pub fn end_s(&self) -> f64 {
        self.final_step as f64 * self.dt_s
    }
}

/// Why a state frame was refused (its key in `report.json` is `state_` and the variant's name
/// in snake case; see [`StateRejections::by_reason`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Refusal {
    /// Its step is not the one after the last accepted state's (or not 0 for the first).
    OutOfOrder {
        /// The step expected.
        expected: u64,
        /// The step it carries.
        got: u64,
    },
    /// Its sequence number is not the one after the last accepted state's.
    SequenceGap {
        /// The sequence number expected.
        expected: u64,
        /// The one it carries.
        got: u64,
    },
    /// Its time is not its step times the scene's dt.
    WrongTime {
        /// Its step.
        step: u64,
        /// Its time, s.
        sim_time_s: f64,
    },
    /// A step after the scene's last.
    BeyondEnd {
        /// Its step.
        step: u64,
    },
    /// A value beyond the physical bounds ([`BOUNDS`]).
    Implausible {
        /// Which value ("joint 2 velocity", "body 4 orientation", …).
        what: &'static str,
        /// The index of the joint, body or contact.
        index: usize,
        /// The value (a magnitude).
        value: f64,
    },
    /// Flagged final before the scene's last step: the plant ended the run early.
    EarlyFinal {
        /// Its step.
        step: u64,
    },
    /// In order and plausible, but not a state the controller can use (no joints, or not its
    /// model's shape): [`StateCheck::count_unusable`].
    Unusable,
}

/// States refused by reason (keys: [`StateRejections::by_reason`]), and the first refusal in words.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StateRejections {
    /// Step out of order (repeated, frozen, skipped or backwards).
    pub out_of_order: u64,
    /// Sequence number not the next.
    pub sequence_gap: u64,
    /// Time not step × dt.
    pub wrong_time: u64,
    /// Beyond the scene's last step.
    pub beyond_end: u64,
    /// Beyond the physical bounds.
    pub implausible: u64,
    /// A state the controller cannot use (e.g. no joints; counted by the drivers).
    pub unusable: u64,
    /// The first refusal, described.
    pub first: Option<String>,
}

impl StateRejections {
    /// Every refusal counted.
    pub const fn total(&self) -> u64 {
        self.out_of_order
            + self.sequence_gap
            + self.wrong_time
            + self.beyond_end
            + self.implausible
            + self.unusable
    }

    /// The non-zero counts with their keys, for `faults.rejected_by_reason`.
    pub fn by_reason(&self) -> impl Iterator<Item = (&'static str, u64)> {
        [
            ("state_out_of_order", self.out_of_order),
            ("state_sequence_gap", self.sequence_gap),
            ("state_wrong_time", self.wrong_time),
            ("state_beyond_end", self.beyond_end),
            ("state_implausible", self.implausible),
            ("state_unusable", self.unusable),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
    }
}

/// Checks each state a link accepted against the run's clock and [`BOUNDS`]; see the
/// [module docs](self).
#[derive(Debug, Clone)]
pub struct StateCheck {
    clock: RunClock,
    /// The newest state passed: (step, sequence).
    last: Option<(u64, u64)>,
    rejections: StateRejections,
    /// The first refusal and its step (described only when asked: the hot path does not
    /// format).
    first_refusal: Option<(Refusal, u64)>,
    /// The newest step number of any frame seen (passed or not) that is within the run: where
    /// a lockstep plant waits for its torques.
    newest_seen_step: Option<u64>,
}

impl StateCheck {
    /// A check for a run on `clock` that has passed no state yet.
    pub const fn new(clock: RunClock) -> Self {
        Self {
            clock,
            last: None,
            rejections: StateRejections {
                out_of_order: 0,
                sequence_gap: 0,
                wrong_time: 0,
                beyond_end: 0,
                implausible: 0,
                unusable: 0,
                first: None,
            },
            first_refusal: None,
            newest_seen_step: None,
        }
    }

    /// The run's clock.
    pub const fn clock(&self) -> RunClock {
        self.clock
    }

    /// Check `frame`: `Ok(true)` for the run's last state, `Ok(false)` for any other that
    /// passed (the clock advances to it), `Err` for a refused one (counted; the clock stays).
    /// [`Refusal::EarlyFinal`] is counted nowhere: it ends the run.
    pub fn check(&mut self, frame: &StateFrame) -> Result<bool, Refusal> {
        self.saw(frame);
        let verdict = self.verdict(frame);
        match verdict {
            Ok(()) => {
                self.last = Some((frame.step, frame.sequence));
                Ok(frame.step == self.clock.final_step)
            }
            Err(r) => {
                let counter = match r {
                    Refusal::OutOfOrder { .. } => &mut self.rejections.out_of_order,
                    Refusal::SequenceGap { .. } => &mut self.rejections.sequence_gap,
                    Refusal::WrongTime { .. } => &mut self.rejections.wrong_time,
                    Refusal::BeyondEnd { .. } => &mut self.rejections.beyond_end,
                    Refusal::Implausible { .. } => &mut self.rejections.implausible,
                    Refusal::Unusable => &mut self.rejections.unusable,
                    Refusal::EarlyFinal { .. } => return Err(r),
                };
                *counter = counter.saturating_add(1);
                if self.first_refusal.is_none() {
                    self.first_refusal = Some((r, frame.step));
                }
                Err(r)
            }
        }
    }

    /// After the run was cut: whether `frame` passes (the clock then advances to it), counting
    /// nothing (what a plant sends after the run ended is not the run's).
    pub fn observe(&mut self, frame: &StateFrame) -> bool {
        self.saw(frame);
        let ok = self.verdict(frame).is_ok();
        if ok {
            self.last = Some((frame.step, frame.sequence));
        }
        ok
    }

    /// The newest step of any frame seen within the run, passed or not (a lockstep plant waits
    /// for the torques of that step).
    pub const fn newest_seen_step(&self) -> Option<u64> {
        self.newest_seen_step
    }

    fn saw(&mut self, frame: &StateFrame) {
        if frame.step <= self.clock.final_step {
            self.newest_seen_step = Some(
                self.newest_seen_step
                    .map_or(frame.step, |s| s.max(frame.step)),
            );
        }
    }

    /// Count a state (of step `step`) that passed the clock but that the controller cannot use.
    pub fn count_unusable(&mut self, step: u64) {
        self.rejections.unusable = self.rejections.unusable.saturating_add(1);
        if self.first_refusal.is_none() {
            self.first_refusal = Some((Refusal::Unusable, step));
        }
    }

    /// The refusals so far, with the first described.
    pub fn rejections(&self) -> StateRejections {
        let mut r = self.rejections.clone();
        r.first = self.first_refusal.map(|(why, step)| describe(&why, step));
        r
    }

    fn verdict(&self, frame: &StateFrame) -> Result<(), Refusal> {
        let step = frame.step;
        let (expected_step, expected_sequence) = match self.last {
            None => (0, None),
            Some((s, q)) => (s.saturating_add(1), Some(q.saturating_add(1))),
        };
        if step > self.clock.final_step {
            return Err(Refusal::BeyondEnd { step });
        }
        if step != expected_step {
            return Err(Refusal::OutOfOrder {
                expected: expected_step,
                got: step,
            });
        }
        if let Some(expected) = expected_sequence
            && frame.sequence != expected
        {
            return Err(Refusal::SequenceGap {
                expected,
                got: frame.sequence,
            });
        }
        let t = step as f64 * self.clock.dt_s;
        let off = (frame.sim_time_s - t).abs();
        // NaN is off too (the link refuses non-finite times before this).
        if off.is_nan() || off > 1e-3 * self.clock.dt_s {
            return Err(Refusal::WrongTime {
                step,
                sim_time_s: frame.sim_time_s,
            });
        }
        plausible(frame, &BOUNDS)?;
        if frame.flags.contains(StateFlags::FINAL) && step < self.clock.final_step {
            return Err(Refusal::EarlyFinal { step });
        }
        Ok(())
    }
}

/// Whether every value of `frame` is within `b`.
fn plausible(frame: &StateFrame, b: &Bounds) -> Result<(), Refusal> {
    let over = |what, index, value: f64, bound: f64| {
        // NaN is beyond any bound (the link refuses non-finite values before this).
        if value.abs() <= bound {
            Ok(())
        } else {
            Err(Refusal::Implausible {
                what,
                index,
                value: value.abs(),
            })
        }
    };
    for (i, j) in frame.joints.iter().enumerate() {
        over(
            "joint position, rad",
            i,
            j.position_rad,
            b.joint_position_rad,
        )?;
        over(
            "joint velocity, rad/s",
            i,
            j.velocity_rad_s,
            b.joint_velocity_rad_s,
        )?;
    }
    for (i, m) in frame.bodies.iter().enumerate() {
        over("body position, m", i, norm(&m.com_m), b.body_position_m)?;
        over(
            "body velocity, m/s",
            i,
            norm(&m.velocity_m_s),
            b.body_velocity_m_s,
        )?;
        over(
            "body angular velocity, rad/s",
            i,
            norm(&m.angular_velocity_rad_s),
            b.body_angular_velocity_rad_s,
        )?;
        over(
            "body orientation, | |q| - 1 |",
            i,
            norm(&m.orientation) - 1.0,
            b.quaternion_norm_error,
        )?;
    }
    for (i, c) in frame.contacts.iter().enumerate() {
        over("contact force, N", i, norm(&c.force_n), b.contact_force_n)?;
    }
    Ok(())
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// A refusal in words, for the report and the console.
pub fn describe(why: &Refusal, step: u64) -> String {
    match *why {
        Refusal::OutOfOrder { expected, got } => {
            format!("a state for step {got} where step {expected} was due")
        }
        Refusal::SequenceGap { expected, got } => {
            format!("state sequence number {got} where {expected} was due (step {step})")
        }
        Refusal::WrongTime { step, sim_time_s } => {
            format!("step {step} at t = {sim_time_s} s, not step × dt")
        }
        Refusal::BeyondEnd { step } => format!("a state for step {step}, after the scene's end"),
        Refusal::Implausible { what, index, value } => {
            format!("implausible {what} of {value:e} (index {index}) at step {step}")
        }
        Refusal::EarlyFinal { step } => format!("final state at step {step}"),
        Refusal::Unusable => {
            format!(
                "a state the controller cannot use (no joints, or not its model's) at step {step}"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use control_core::frames::{BodyMotion, JointState};

    fn clock() -> RunClock {
        RunClock::new(0.005, 0.05).unwrap()
    }

    fn state(step: u64) -> StateFrame {
        let mut f = StateFrame::new(step + 7, step, step as f64 * 0.005);
        f.push_joint(JointState {
            position_rad: 0.1,
            velocity_rad_s: -2.0,
        })
        .unwrap();
        f
    }

    #[test]
    fn the_clock_follows_the_plants_step_count() {
        let c = clock();
        assert_eq!(c.final_step, 10);
        assert!((c.end_s() - 0.05).abs() < 1e-12);
        assert!(RunClock::new(0.0, 1.0).is_err());
        assert!(RunClock::new(0.01, f64::NAN).is_err());
    }

    #[test]
    fn an_honest_plant_passes_and_ends_at_the_last_step() {
        let mut check = StateCheck::new(clock());
        for k in 0..10 {
            assert_eq!(check.check(&state(k)), Ok(false), "step {k}");
        }
        let mut last = state(10);
        last.flags = StateFlags::FINAL;
        assert_eq!(check.check(&last), Ok(true));
        assert_eq!(check.rejections().total(), 0);
        // The end comes from hil's clock, not from the flag.
        let mut unflagged = StateCheck::new(clock());
        for k in 0..10 {
            unflagged.check(&state(k)).unwrap();
        }
        assert_eq!(unflagged.check(&state(10)), Ok(true));
        assert_eq!(
            unflagged.check(&state(11)),
            Err(Refusal::BeyondEnd { step: 11 })
        );
    }

    #[test]
    fn repeated_frozen_skipped_and_backwards_steps_are_refused_and_counted() {
        let mut check = StateCheck::new(clock());
        assert!(matches!(
            check.check(&state(3)),
            Err(Refusal::OutOfOrder {
                expected: 0,
                got: 3
            })
        ));
        check.check(&state(0)).unwrap();
        check.check(&state(1)).unwrap();
        // Repeated step with a new sequence number (a flood of step-0 states looks like this).
        let mut again = state(1);
        again.sequence += 1;
        assert!(check.check(&again).is_err());
        let mut back = state(0);
        back.sequence = 100;
        assert!(check.check(&back).is_err());
        assert!(check.check(&state(5)).is_err());
        // A sequence number that jumps.
        let mut gap = state(2);
        gap.sequence += 3;
        assert_eq!(
            check.check(&gap),
            Err(Refusal::SequenceGap {
                expected: 9,
                got: 12
            })
        );
        // The clock did not move: step 2 with the right sequence still passes.
        assert_eq!(check.check(&state(2)), Ok(false));
        let r = check.rejections();
        assert_eq!((r.out_of_order, r.sequence_gap, r.total()), (4, 1, 5));
        assert_eq!(
            r.first.as_deref(),
            Some("a state for step 3 where step 0 was due")
        );
    }

    #[test]
    fn time_must_be_step_times_dt() {
        let mut check = StateCheck::new(clock());
        check.check(&state(0)).unwrap();
        for t in [0.0, 0.004, 0.0051, -0.005, 1e300] {
            let mut f = state(1);
            f.sim_time_s = t;
            assert!(
                matches!(check.check(&f), Err(Refusal::WrongTime { .. })),
                "{t}"
            );
        }
        let mut close = state(1);
        close.sim_time_s = 0.005 + 1e-9; // accumulated rounding is fine
        assert_eq!(check.check(&close), Ok(false));
        assert_eq!(check.rejections().wrong_time, 5);
    }

    #[test]
    fn an_early_final_flag_is_an_early_end_not_a_count() {
        let mut check = StateCheck::new(clock());
        check.check(&state(0)).unwrap();
        let mut f = state(1);
        f.flags = StateFlags::FINAL;
        assert_eq!(check.check(&f), Err(Refusal::EarlyFinal { step: 1 }));
        assert_eq!(check.rejections().total(), 0);
        // The clock did not move: step 1 unflagged still passes.
        assert_eq!(check.check(&state(1)), Ok(false));
    }

    #[test]
    fn implausible_values_are_refused() {
        let mut check = StateCheck::new(clock());
        let mut f = state(0);
        f.joints[0].position_rad = 1e300;
        assert!(matches!(
            check.check(&f),
            Err(Refusal::Implausible { index: 0, .. })
        ));
        let mut f = state(0);
        f.joints[0].velocity_rad_s = -2e3;
        assert!(check.check(&f).is_err());
        let body = |m: BodyMotion| {
            let mut f = state(0);
            f.bodies.push(m).unwrap();
            f
        };
        let ok = BodyMotion {
            com_m: [0.1, 1.0, 0.0],
            orientation: [0.6, 0.8, 0.0, 0.0],
            velocity_m_s: [3.0, 0.0, 0.0],
            angular_velocity_rad_s: [0.0, 5.0, 0.0],
        };
        for bad in [
            BodyMotion {
                orientation: [1.0, 1.0, 0.0, 0.0],
                ..ok
            },
            BodyMotion {
                orientation: [0.0; 4],
                ..ok
            },
            BodyMotion {
                com_m: [0.0, 2e4, 0.0],
                ..ok
            },
            BodyMotion {
                velocity_m_s: [0.0, 0.0, 1e5],
                ..ok
            },
            BodyMotion {
                angular_velocity_rad_s: [1e4, 0.0, 0.0],
                ..ok
            },
        ] {
            assert!(check.check(&body(bad)).is_err(), "{bad:?}");
        }
        assert_eq!(check.rejections().implausible, 7);
        assert_eq!(check.check(&body(ok)), Ok(false));
        let text = check.rejections().first.unwrap();
        assert!(text.contains("joint position"), "{text}");
    }
}
