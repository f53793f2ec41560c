//! A 3D walking controller as a program runs it: [`Simbicon3d`] with, as chosen, stable PD in
//! place of its PD torques ([`StablePd`]), the ground-contact stabiliser on its stance leg
//! ([`StanceStabiliser`]) and the velocity tuning ([`SpeedTuner`]), walking a schedule of
//! desired coronal speeds; and its safe state.
//!
//! Each tick: the schedule's coronal speed (entry `steps / steps_per_speed`, cycled) and the
//! tuner's forward velocity (towards its target of the same entry) go to the walker; the
//! walker's torques (stable PD's when it succeeds, its own when not) go to the stabiliser,
//! which adds its supplement to the stance ankle and knee; each joint's torque is then cut to
//! its effort (every cut reported in [`Walker3dCommand::limited`]); the tuner observes the
//! step's speed. The safe state ([`Walker3d::safe`]) damps each joint's relative angular
//! velocity by [`SAFE_DAMPING_NMS_PER_RAD`] within its effort.
//!
//! `robot-model`'s `humanoid` module builds the walker's parts from a URDF (its
//! `stance_stabiliser` the stabiliser).
//!
//! Never allocates, blocks or panics: capacities are in the types ([`crate::simbicon3d::MAX_WALK_JOINTS`] joints,
//! [`MAX_SPEEDS`] schedule entries), a refused input is a [`Walk3dError`] (nothing changed but
//! the tick's time), and non-finite states get finite safe torques. A [`Walker3d`] holds its
//! parts by value (about 0.14 MB: 57 KB of stable PD, 70 KB of stabiliser): box it.
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic
    )
)]

use nalgebra::Vector3;

use crate::contact_stabiliser::StabiliserOutput;
use crate::contact_stabiliser::stance::{StanceInput, StanceStabiliser};
use crate::controller::{Controller, Limits};
use crate::frames::BodyMotion;
use crate::simbicon::Side;
use crate::simbicon3d::{
    EFFORT_MARGIN, MAX_WALK_TORQUES, Simbicon3d, SpeedTuner, Walk3dCommand, Walk3dError,
    Walk3dInput,
};
use crate::stable_pd::StablePd;

/// Most entries of the speed schedule (and of the tuner's targets).
pub const MAX_SPEEDS: usize = 64;

/// The safe state's damping of each joint's relative angular velocity, N·m·s/rad.
pub const SAFE_DAMPING_NMS_PER_RAD: f64 = 10.0;

/// Why a [`Walker3d`] was not built.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Walker3dError {
    /// `coronal_speeds_m_s` is empty, longer than [`MAX_SPEEDS`], or has a non-finite entry.
    Speeds,
    /// `steps_per_speed` is zero.
    StepsPerSpeed,
    /// The tuner's targets: longer than [`MAX_SPEEDS`], or entry `k` the tuner refuses.
    Target(usize),
    /// Targets without a tuner, or a tuner without targets.
    Tuning,
}

impl core::fmt::Display for Walker3dError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Speeds => write!(
                f,
                "the coronal speeds: give 1 to {MAX_SPEEDS} finite speeds"
            ),
            Self::StepsPerSpeed => write!(f, "steps per speed: must be at least 1"),
            Self::Target(k) => write!(
                f,
                "the tuner's target {k}: beyond {MAX_SPEEDS} targets or refused by the tuner"
            ),
            Self::Tuning => write!(f, "the tuner and its targets come together"),
        }
    }
}

impl core::error::Error for Walker3dError {}

/// What a [`Walker3d`] is built from besides its parts.
#[derive(Debug, Clone, Copy)]
pub struct Walker3dSpec<'a> {
    /// The desired coronal speeds, m/s (rightward), each held for `steps_per_speed` steps,
    /// then the next, cycled (1 to [`MAX_SPEEDS`]).
    pub coronal_speeds_m_s: &'a [f64],
    /// Steps per entry (≥ 1).
    pub steps_per_speed: u32,
    /// The velocity tuning (none: the desired forward velocity is 0).
    pub tuner: Option<SpeedTuner>,
    /// The tuner's forward speed targets, m/s, one per entry as the coronal speeds (cycled on
    /// their own count; empty without a tuner).
    pub forward_targets_m_s: &'a [f64],
}

/// What a tick reads from the plant.
#[derive(Debug, Clone, Copy)]
pub struct Walker3dInput<'a> {
    /// Time, s.
    pub time_s: f64,
    /// What the stabiliser reads (and the walker: the bodies and the feet's loads).
    pub plant: StanceInput<'a>,
}

/// What a tick returns.
#[derive(Debug, Clone, Copy)]
pub struct Walker3dCommand {
    /// Values of `torques_nm` in use: 3 per joint.
    pub len: usize,
    /// Each joint's torque vector, world, N·m (+τ on the child, −τ on the parent), 3 per joint.
    pub torques_nm: [f64; MAX_WALK_TORQUES],
    /// Joints whose torque an effort cut (bit k: joint k), the walker's and after the
    /// supplement.
    pub limited: u32,
    /// Steps taken (states begun after the first).
    pub steps: u32,
    /// The stance side.
    pub stance: Side,
    /// A step began at this tick.
    pub step_began: bool,
    /// The desired coronal speed this tick used, m/s.
    pub desired_coronal_m_s: f64,
    /// The desired forward velocity this tick used (the tuner's; 0 without), m/s.
    pub desired_forward_m_s: f64,
    /// The forward speed the tuner held to this tick, m/s.
    pub target_forward_m_s: Option<f64>,
    /// The centre of mass's velocity in the character frame, m/s (forward, up, right).
    pub v_m_s: [f64; 3],
    /// Stable PD's outcome (`None`: not used; `Some(true)`: its torques were sent;
    /// `Some(false)`: it failed and the walker's own torques were sent).
    pub stable_pd: Option<bool>,
    /// What the stabiliser did (`None`: no stabiliser, or the state could not be mapped).
    pub stabiliser: Option<StabiliserOutput>,
}

/// The walking controller (see the module docs).
#[derive(Debug, Clone)]
pub struct Walker3d {
    walker: Simbicon3d,
    stable_pd: Option<StablePd>,
    stabiliser: Option<StanceStabiliser>,
    tuner: Option<SpeedTuner>,
    speeds: heapless::Vec<f64, MAX_SPEEDS>,
    steps_per_speed: u32,
    targets: heapless::Vec<f64, MAX_SPEEDS>,
}

impl Walker3d {
    /// The controller of `walker`, with stable PD and the stabiliser if given (each built for
    /// the walker's bodies and joints), walking `spec`'s schedule.
    pub fn new(
        walker: Simbicon3d,
        stable_pd: Option<StablePd>,
        stabiliser: Option<StanceStabiliser>,
        spec: &Walker3dSpec<'_>,
    ) -> Result<Self, Walker3dError> {
        let speeds = heapless::Vec::from_slice(spec.coronal_speeds_m_s)
            .map_err(|()| Walker3dError::Speeds)?;
        if speeds.is_empty() || speeds.iter().any(|v| !v.is_finite()) {
            return Err(Walker3dError::Speeds);
        }
        if spec.steps_per_speed == 0 {
            return Err(Walker3dError::StepsPerSpeed);
        }
        if spec.tuner.is_some() == spec.forward_targets_m_s.is_empty() {
            return Err(Walker3dError::Tuning);
        }
        let mut targets = heapless::Vec::new();
        for (k, &t) in spec.forward_targets_m_s.iter().enumerate() {
            let mut probe = spec.tuner;
            let refused = probe.as_mut().is_none_or(|p| p.set_target(t).is_err());
            if refused || targets.push(t).is_err() {
                return Err(Walker3dError::Target(k));
            }
        }
        Ok(Self {
            walker,
            stable_pd,
            stabiliser,
            tuner: spec.tuner,
            speeds,
            steps_per_speed: spec.steps_per_speed,
            targets,
        })
    }

    /// The walking law (its configuration, its gains).
    pub fn walker(&self) -> &Simbicon3d {
        &self.walker
    }

    /// The stabiliser, if any.
    pub fn stabiliser(&self) -> Option<&StanceStabiliser> {
        self.stabiliser.as_ref()
    }

    /// Whether stable PD replaces the walker's PD torques.
    pub fn stable_pd(&self) -> bool {
        self.stable_pd.is_some()
    }

    /// A command with no torques yet, for the state of `time_s`.
    fn empty(&self) -> Walker3dCommand {
        Walker3dCommand {
            len: 3 * self.walker.config().joints.len(),
            torques_nm: [0.0; MAX_WALK_TORQUES],
            limited: 0,
            steps: self.walker.steps(),
            stance: self.walker.stance(),
            step_began: false,
            desired_coronal_m_s: 0.0,
            desired_forward_m_s: 0.0,
            target_forward_m_s: None,
            v_m_s: [0.0; 3],
            stable_pd: None,
            stabiliser: None,
        }
    }

    /// One tick (never allocates, blocks or panics).
    pub fn tick(&mut self, input: &Walker3dInput<'_>) -> Result<Walker3dCommand, Walk3dError> {
        let segment = self
            .walker
            .steps()
            .checked_div(self.steps_per_speed)
            .unwrap_or(0) as usize;
        let desired = self
            .speeds
            .get(segment % self.speeds.len().max(1))
            .copied()
            .unwrap_or(0.0);
        let n = input.plant.contact_normal_n;
        let target = self
            .targets
            .get(segment % self.targets.len().max(1))
            .copied();
        let forward = match (self.tuner.as_mut(), target) {
            (Some(t), Some(v)) => {
                // Every target was tried when built: a refusal cannot happen here, and would
                // keep the last target.
                let _ = t.set_target(v);
                t.desired_m_s()
            }
            _ => 0.0,
        };
        let walk = Walk3dInput {
            time_s: input.time_s,
            bodies: input.plant.bodies,
            foot_up_force_n: [n[0] + n[2], n[1] + n[3]],
            desired_velocity_m_s: [forward, desired],
            desired_heading_rad: 0.0,
        };
        let (c, stable_pd): (Walk3dCommand, Option<bool>) = match self.stable_pd.as_mut() {
            Some(spd) => self
                .walker
                .tick_stable_pd(&walk, spd)
                .map(|(c, r)| (c, Some(r.is_ok())))?,
            None => self.walker.tick(&walk).map(|c| (c, None))?,
        };
        let mut out = self.empty();
        out.stable_pd = stable_pd;
        let joints = self.walker.config().joints.len();
        for (t, c) in out
            .torques_nm
            .chunks_exact_mut(3)
            .zip(&c.torques_nm)
            .take(joints)
        {
            t.copy_from_slice(c);
        }
        out.limited = c.limited;
        if let (Some(st), Some(torques)) =
            (self.stabiliser.as_mut(), out.torques_nm.get_mut(..out.len))
        {
            out.stabiliser = st.tick(&input.plant, c.stance.index(), torques);
            // The supplement within the efforts too: each cut reported.
            for (k, (t, j)) in torques
                .chunks_exact_mut(3)
                .zip(&self.walker.config().joints)
                .enumerate()
            {
                let [x, y, z] = [0, 1, 2].map(|i| t.get(i).copied().unwrap_or(0.0));
                let norm = libm::sqrt(x * x + y * y + z * z);
                let cap = j.effort_nm * (1.0 - EFFORT_MARGIN);
                if norm > cap {
                    for x in t.iter_mut() {
                        *x *= cap / norm;
                    }
                    out.limited |= 1 << k;
                }
            }
        }
        out.steps = self.walker.steps();
        out.stance = c.stance;
        out.step_began = c.step_began;
        out.desired_coronal_m_s = desired;
        out.desired_forward_m_s = forward;
        out.target_forward_m_s = target;
        out.v_m_s = c.v_m_s;
        if let Some(t) = self.tuner.as_mut() {
            t.observe(c.v_m_s[0], c.step_began);
        }
        Ok(out)
    }

    /// The safe state on the plant's `bodies`: each joint damps its relative angular velocity,
    /// within its effort (a joint whose bodies are missing or whose damping is not finite
    /// gets none).
    pub fn safe(&self, bodies: &[BodyMotion]) -> Walker3dCommand {
        let mut out = self.empty();
        for (t_out, j) in out
            .torques_nm
            .chunks_exact_mut(3)
            .zip(&self.walker.config().joints)
        {
            let (Some(p), Some(c)) = (bodies.get(j.parent), bodies.get(j.child)) else {
                continue;
            };
            let w =
                Vector3::from(p.angular_velocity_rad_s) - Vector3::from(c.angular_velocity_rad_s);
            let mut t = w * SAFE_DAMPING_NMS_PER_RAD;
            let norm = t.norm();
            if !norm.is_finite() {
                continue;
            }
            if norm > j.effort_nm {
                t *= j.effort_nm * (1.0 - EFFORT_MARGIN) / norm;
            }
            t_out.copy_from_slice(t.as_slice());
        }
        out
    }
}

impl Controller<Walker3dInput<'_>> for Walker3d {
    type Command = Walker3dCommand;
    type Error = Walk3dError;

    fn tick(&mut self, input: &Walker3dInput<'_>) -> Result<Walker3dCommand, Walk3dError> {
        Walker3d::tick(self, input)
    }

    fn limits(command: &Walker3dCommand) -> Limits {
        Limits {
            torque_limited: command.limited.count_ones(),
            fallback: command.stable_pd == Some(false),
            ..Limits::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contact_stabiliser::stance::StanceInput;
    use crate::simbicon3d::SpeedTuning;
    use crate::simbicon3d::tests::{config, standing};
    use proptest::prelude::*;

    const TUNING: SpeedTuning = SpeedTuning {
        target_m_s: 0.5,
        gain: 0.5,
        bound_m_s: 0.3,
    };

    fn spec<'a>(speeds: &'a [f64], targets: &'a [f64]) -> Walker3dSpec<'a> {
        Walker3dSpec {
            coronal_speeds_m_s: speeds,
            steps_per_speed: 2,
            tuner: (!targets.is_empty()).then(|| SpeedTuner::new(TUNING).unwrap()),
            forward_targets_m_s: targets,
        }
    }

    fn walker(speeds: &[f64], targets: &[f64]) -> Result<Walker3d, Walker3dError> {
        let w = Simbicon3d::new(config(300.0)).unwrap();
        Walker3d::new(w, None, None, &spec(speeds, targets))
    }

    fn input(time_s: f64, bodies: &[BodyMotion]) -> Walker3dInput<'_> {
        Walker3dInput {
            time_s,
            plant: StanceInput {
                bodies,
                contact_normal_n: [300.0, 300.0, 10.0, 10.0],
                sole_corner_n: [[80.0; 4]; 2],
            },
        }
    }

    #[test]
    fn bad_schedules_are_refused_naming_why() {
        let many = [0.0; MAX_SPEEDS + 1];
        assert_eq!(walker(&[], &[]).unwrap_err(), Walker3dError::Speeds);
        assert_eq!(walker(&[f64::NAN], &[]).unwrap_err(), Walker3dError::Speeds);
        assert_eq!(walker(&many, &[]).unwrap_err(), Walker3dError::Speeds);
        assert_eq!(
            walker(&[0.0], &[0.5, 99.0]).unwrap_err(),
            Walker3dError::Target(1)
        );
        assert_eq!(
            walker(&[0.0], &many).unwrap_err(),
            Walker3dError::Target(MAX_SPEEDS)
        );
        let w = Simbicon3d::new(config(300.0)).unwrap();
        let zero = Walker3dSpec {
            steps_per_speed: 0,
            ..spec(&[0.0], &[])
        };
        let e = Walker3d::new(w.clone(), None, None, &zero).unwrap_err();
        assert_eq!(e, Walker3dError::StepsPerSpeed);
        let untuned = Walker3dSpec {
            tuner: None,
            ..spec(&[0.0], &[0.5])
        };
        let e = Walker3d::new(w.clone(), None, None, &untuned).unwrap_err();
        assert_eq!(e, Walker3dError::Tuning);
        let aimless = Walker3dSpec {
            tuner: Some(SpeedTuner::new(TUNING).unwrap()),
            ..spec(&[0.0], &[])
        };
        let e = Walker3d::new(w, None, None, &aimless).unwrap_err();
        assert_eq!(e, Walker3dError::Tuning);
        assert!(format!("{}", Walker3dError::Target(3)).contains("target 3"));
    }

    #[test]
    fn without_extras_it_is_the_walker_with_the_schedule_s_speed() {
        let bodies = standing();
        let mut alone = Simbicon3d::new(config(300.0)).unwrap();
        let mut w = walker(&[0.2, -0.2], &[]).unwrap();
        for k in 0..50 {
            let t = k as f64 * 0.002;
            let c = w.tick(&input(t, &bodies)).unwrap();
            let a = alone
                .tick(&Walk3dInput {
                    time_s: t,
                    bodies: &bodies,
                    foot_up_force_n: [310.0, 310.0],
                    desired_velocity_m_s: [0.0, 0.2],
                    desired_heading_rad: 0.0,
                })
                .unwrap();
            assert_eq!(c.len, 42);
            for (j, torque) in a.torques_nm.iter().take(14).enumerate() {
                assert_eq!(&c.torques_nm[3 * j..3 * j + 3], torque.as_slice());
            }
            assert_eq!(
                (c.limited, c.stance, c.v_m_s),
                (a.limited, a.stance, a.v_m_s)
            );
            assert_eq!(c.desired_coronal_m_s, 0.2);
            assert_eq!((c.desired_forward_m_s, c.target_forward_m_s), (0.0, None));
            assert_eq!((c.stable_pd, c.stabiliser.is_none()), (None, true));
        }
    }

    #[test]
    fn the_tuner_s_target_and_velocity_are_reported() {
        let bodies = standing();
        let mut w = walker(&[0.0], &[0.4, 0.6]).unwrap();
        let c = w.tick(&input(0.0, &bodies)).unwrap();
        assert_eq!(c.target_forward_m_s, Some(0.4));
        // No step has ended: the tuner's desired velocity is where it starts.
        assert_eq!(c.desired_forward_m_s, 0.0);
        assert!(!Walker3d::limits(&c).fallback);
    }

    #[test]
    fn a_refused_input_changes_nothing_and_the_safe_state_damps() {
        let mut bodies = standing();
        let mut w = walker(&[0.0], &[]).unwrap();
        w.tick(&input(1.0, &bodies)).unwrap();
        assert!(w.tick(&input(0.5, &bodies)).is_err(), "time went back");
        // The safe state: 10 N·m·s/rad on the relative angular velocity, within the effort.
        bodies[8].angular_velocity_rad_s = [0.0, 0.0, 2.0]; // the left knee's child
        bodies[12].angular_velocity_rad_s = [0.0, 0.0, 1e6]; // the right knee's: capped
        bodies[3].angular_velocity_rad_s = [f64::NAN, 0.0, 0.0]; // the left elbow's parent
        let s = w.safe(&bodies);
        assert_eq!(&s.torques_nm[21..24], &[0.0, 0.0, -20.0]);
        let right_knee = &s.torques_nm[33..36];
        assert!((right_knee[2] + 300.0).abs() < 1e-6, "{right_knee:?}");
        assert_eq!(&s.torques_nm[6..9], &[0.0; 3], "not finite: no damping");
        assert_eq!(&s.torques_nm[9..12], &[0.0; 3], "not finite: no damping");
        assert!(s.torques_nm.iter().all(|t| t.is_finite()));
    }

    proptest! {
        #[test]
        fn any_state_gives_finite_torques_within_the_efforts_or_a_refusal(
            values in proptest::collection::vec(
                prop_oneof![
                    Just(f64::NAN), Just(f64::INFINITY), Just(-f64::INFINITY), Just(0.0),
                    -1e12f64..1e12, -3.0f64..3.0
                ],
                15 * 13,
            ),
            forces in proptest::array::uniform4(-1e6f64..1e6),
        ) {
            let mut bodies = standing();
            for (b, v) in bodies.iter_mut().zip(values.chunks_exact(13)) {
                b.com_m = [v[0], v[1], v[2]];
                b.orientation = [v[3], v[4], v[5], v[6]];
                b.velocity_m_s = [v[7], v[8], v[9]];
                b.angular_velocity_rad_s = [v[10], v[11], v[12]];
            }
            let mut w = walker(&[0.0, 0.2], &[0.5]).unwrap();
            let mut i = input(0.0, &bodies);
            i.plant.contact_normal_n = forces;
            for c in [w.tick(&i).ok(), Some(w.safe(&bodies))].into_iter().flatten() {
                for t in c.torques_nm.chunks_exact(3) {
                    let norm = libm::sqrt(t[0] * t[0] + t[1] * t[1] + t[2] * t[2]);
                    prop_assert!(norm.is_finite() && norm <= 300.0, "{t:?}");
                }
            }
        }
    }
}
