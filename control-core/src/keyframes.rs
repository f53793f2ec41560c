//! A robot's joints driven through keyframes, as a program runs them: one of the joint-space
//! laws ([`crate::beat::BeatServo`] or [`crate::articulated::TreeArrival`]) aimed at the
//! keyframe in force, with the joints' losses compensated, every torque held within its effort
//! (each cut reported), and the safe state's damping ([`JointSafety`]).
//!
//! A keyframe is (the instant it is due, a pose per joint). [`KeyframeServo::tick`] aims at the
//! first keyframe whose instant has not come (half a control period early: a tick at most that
//! close to an instant already aims past it), the last one from then on. The arrival law gets
//! the time to go until that instant, the beat law the keyframe's segment (from the previous
//! keyframe's instant, or 0). The keyframes are the caller's, passed every tick: a tour of
//! 10 000 poses need not fit in the servo.
//!
//! Never allocates, blocks or panics: capacity `N` joints in the types, every failure a
//! [`ModelError`] (the caller sends [`JointSafety::safe`] instead).
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

use nalgebra::{Isometry3, Vector3};

use crate::articulated::{
    JointLosses, JointStatus, JointTarget, ModelError, TreeArrival, TreeCommand,
};
use crate::beat::{BeatServo, BeatTarget};
use crate::controller::{Controller, Limits};
use crate::gains::{GainLimit, Integrator};
use crate::tree::Tree;

/// What one tick sends and how it was made, per joint (entries past the tree's joints are 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServoTick<const N: usize> {
    /// The torques, each within its joint's effort, N·m (N for a slider).
    pub torques_nm: [f64; N],
    /// The inertia each joint's gains were computed for, kg·m² (the safe state: its damping's).
    pub inertia_kgm2: [f64; N],
    /// The stiffness used, N·m/rad (0 in the safe state).
    pub stiffness: [f64; N],
    /// What each joint's law did (`None`: no law ran for it: the safe state, or a torque law
    /// without gains).
    pub status: [Option<JointStatus>; N],
    /// Joints whose torque was cut to its effort (bit j: joint j).
    pub torque_limited: u64,
}

impl<const N: usize> ServoTick<N> {
    /// Nothing sent yet.
    pub const EMPTY: Self = Self {
        torques_nm: [0.0; N],
        inertia_kgm2: [0.0; N],
        stiffness: [0.0; N],
        status: [None; N],
        torque_limited: 0,
    };
}

/// What holds a robot's joints within their limits: each joint's effort and losses, and the
/// safe state's damping.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JointSafety<const N: usize> {
    joints: usize,
    effort_nm: [f64; N],
    losses: [JointLosses; N],
    period_s: f64,
    margin: f64,
    hold_freq_rad_s: f64,
}

impl<const N: usize> JointSafety<N> {
    /// The limits of `joints` joints (at most `N`, at most 64): each one's `effort_nm` (≥ 0;
    /// 0: the joint gets no torque, every tick it asks for one counted as cut),
    /// its `losses` (0 past the slice), the control period `period_s` and the stability margin
    /// `margin` the safe state's damping must stay stable for, and that damping's natural
    /// frequency `hold_freq_rad_s` (γ = 2 m ω on each joint's composite inertia m). `None`
    /// when a count exceeds its capacity or a value is out of range.
    pub fn new(
        joints: usize,
        effort_nm: &[f64],
        losses: &[JointLosses],
        period_s: f64,
        margin: f64,
        hold_freq_rad_s: f64,
    ) -> Option<Self> {
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if joints > N
            || joints > 64
            || effort_nm.len() < joints
            || losses.len() > N
            || !positive(period_s)
            || !positive(margin)
            || !(hold_freq_rad_s.is_finite() && hold_freq_rad_s >= 0.0)
            || effort_nm
                .iter()
                .take(joints)
                .any(|&e| e.is_nan() || e < 0.0)
        {
            return None;
        }
        let mut effort = [0.0; N];
        for (e, &l) in effort.iter_mut().zip(effort_nm).take(joints) {
            *e = l;
        }
        let mut lost = [JointLosses::default(); N];
        for (l, &x) in lost.iter_mut().zip(losses) {
            *l = x;
        }
        Some(Self {
            joints,
            effort_nm: effort,
            losses: lost,
            period_s,
            margin,
            hold_freq_rad_s,
        })
    }

    /// The joints it holds.
    pub fn joints(&self) -> usize {
        self.joints
    }

    /// Each joint's effort, N·m.
    pub fn effort_nm(&self) -> &[f64] {
        self.effort_nm.get(..self.joints).unwrap_or(&[])
    }

    /// `cmd` with the joints' losses compensated at the velocities `qd`
    /// ([`TreeCommand::add_losses`]).
    pub fn with_losses(
        &self,
        mut cmd: TreeCommand<N>,
        qd: &[f64; N],
    ) -> Result<TreeCommand<N>, ModelError> {
        cmd.add_losses(&self.losses, qd, self.period_s)?;
        Ok(cmd)
    }

    /// `torques` (joint order) each clamped to its joint's effort into `out`, the cut joints
    /// flagged.
    pub fn limit_into(&self, out: &mut ServoTick<N>, torques: &[f64]) {
        for (j, &requested) in torques.iter().enumerate().take(self.joints) {
            let limit = self.effort_nm.get(j).copied().unwrap_or(0.0);
            let t = requested.clamp(-limit, limit);
            if t != requested {
                out.torque_limited |= 1 << j;
            }
            if let Some(slot) = out.torques_nm.get_mut(j) {
                *slot = t;
            }
        }
    }

    /// A law's command `cmd` sent within the efforts, with its gains and statuses.
    pub fn limited(&self, cmd: &TreeCommand<N>) -> ServoTick<N> {
        let mut out = ServoTick::EMPTY;
        self.limit_into(&mut out, &cmd.torques());
        for (j, jc) in cmd.joints().iter().enumerate() {
            if let Some(slot) = out.inertia_kgm2.get_mut(j) {
                *slot = jc.inertia_kgm2;
            }
            if let Some(slot) = out.stiffness.get_mut(j) {
                *slot = jc.gains.stiffness_nm_per_rad;
            }
            if let Some(slot) = out.status.get_mut(j) {
                *slot = Some(jc.status);
            }
        }
        out
    }

    /// The safe state at `(q, qd)` on `tree` (welded at `base_pose`): damping only,
    /// τ_j = −γ_j q̇_j with γ_j = 2 m_j ω_hold on the composite inertia m_j of the configuration,
    /// clamped to the stable limit for the period, within the joint's effort. Zero torque where
    /// the model cannot evaluate the state (not finite).
    pub fn safe(
        &self,
        tree: &Tree<N>,
        base_pose: &Isometry3<f64>,
        q: &[f64; N],
        qd: &[f64; N],
    ) -> ServoTick<N> {
        let mut out = ServoTick::EMPTY;
        let Some(inertia) = tree
            .kinematics(base_pose, q)
            .ok()
            .and_then(|k| k.composite().ok())
            .map(|c| c.axis_inertia())
        else {
            return out;
        };
        for j in 0..self.joints {
            let (Some(&m), Some(&w), Some(&limit)) =
                (inertia.get(j), qd.get(j), self.effort_nm.get(j))
            else {
                continue;
            };
            let gamma =
                GainLimit::new(m, self.period_s, Integrator::SemiImplicitEuler, self.margin)
                    .map_or(0.0, |l| {
                        (2.0 * m * self.hold_freq_rad_s).min(l.max_damping_nms_per_rad)
                    });
            let t = -gamma * w;
            let t = if t.is_finite() {
                t.clamp(-limit, limit)
            } else {
                0.0
            };
            if let Some(slot) = out.torques_nm.get_mut(j) {
                *slot = t;
            }
            if let Some(slot) = out.inertia_kgm2.get_mut(j) {
                *slot = m;
            }
        }
        out
    }
}

/// The joint-space law a [`KeyframeServo`] aims with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeyframeLaw {
    /// "On the Beat!"'s time-constant gains over each keyframe's segment.
    Beat(BeatServo),
    /// The Lambert-W arrival gains, arriving at each keyframe's instant.
    Arrival(TreeArrival),
}

/// A robot's joints through keyframes (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeyframeServo<const N: usize> {
    law: KeyframeLaw,
    safety: JointSafety<N>,
    gravity: Vector3<f64>,
    /// A keyframe's instant counts as come this long before it, s.
    lead_s: f64,
    current: usize,
}

impl<const N: usize> KeyframeServo<N> {
    /// The servo of `law` within `safety`, under `gravity` (world, m/s²); a keyframe's instant
    /// counts as come `lead_s` early (half the control period: the tick nearest the instant
    /// aims past it). `None` for a non-finite gravity or a negative or non-finite lead.
    pub fn new(
        law: KeyframeLaw,
        safety: JointSafety<N>,
        gravity: Vector3<f64>,
        lead_s: f64,
    ) -> Option<Self> {
        if !(gravity.iter().all(|g| g.is_finite()) && lead_s.is_finite() && lead_s >= 0.0) {
            return None;
        }
        Some(Self {
            law,
            safety,
            gravity,
            lead_s,
            current: 0,
        })
    }

    /// Its limits and safe state.
    pub fn safety(&self) -> &JointSafety<N> {
        &self.safety
    }

    /// The keyframe aimed at (by the last tick).
    pub fn current(&self) -> usize {
        self.current
    }

    /// One tick at time `now_s` in the state `(q, qd)` of `tree` (welded at `base_pose`), aiming
    /// at the keyframe in force of `keyframes` ((instant s, pose rad per joint), in time
    /// order). An empty `keyframes` or a state the law refuses is an error (the keyframe in
    /// force is still updated).
    #[allow(clippy::too_many_arguments)]
    pub fn tick(
        &mut self,
        tree: &Tree<N>,
        base_pose: &Isometry3<f64>,
        q: &[f64; N],
        qd: &[f64; N],
        keyframes: &[(f64, [f64; N])],
        now_s: f64,
    ) -> Result<ServoTick<N>, ModelError> {
        // Aim at the next keyframe once the current one's instant has come.
        while self.current + 1 < keyframes.len()
            && keyframes
                .get(self.current)
                .is_some_and(|k| now_s > k.0 - self.lead_s)
        {
            self.current += 1;
        }
        let Some(&(t_k, pose)) = keyframes.get(self.current) else {
            return Err(ModelError::OutOfRange);
        };
        let previous = match self.current.checked_sub(1) {
            Some(i) => keyframes.get(i).map_or(0.0, |k| k.0),
            None => 0.0,
        };
        self.aim(tree, base_pose, q, qd, &pose, t_k - now_s, t_k - previous)
    }

    /// Hold `pose` (rad per joint) now: the arrival law's critically damped hold (time to go
    /// 0), losses compensated, within the efforts; the beat law's over a zero segment (which
    /// it refuses when its gains need a segment).
    pub fn hold(
        &self,
        tree: &Tree<N>,
        base_pose: &Isometry3<f64>,
        q: &[f64; N],
        qd: &[f64; N],
        pose: &[f64; N],
    ) -> Result<ServoTick<N>, ModelError> {
        self.aim(tree, base_pose, q, qd, pose, 0.0, 0.0)
    }

    /// The law aimed at `pose`: the arrival law `time_to_go_s` ahead, the beat law over a
    /// segment of `segment_s`; losses compensated, within the efforts.
    #[allow(clippy::too_many_arguments)]
    fn aim(
        &self,
        tree: &Tree<N>,
        base_pose: &Isometry3<f64>,
        q: &[f64; N],
        qd: &[f64; N],
        pose: &[f64; N],
        time_to_go_s: f64,
        segment_s: f64,
    ) -> Result<ServoTick<N>, ModelError> {
        let cmd = match &self.law {
            KeyframeLaw::Beat(servo) => {
                let mut targets = [BeatTarget::default(); N];
                for (t, &p) in targets.iter_mut().zip(pose) {
                    *t = BeatTarget {
                        pose_rad: p,
                        velocity_rad_s: 0.0,
                        segment_s,
                    };
                }
                servo.tick(tree, base_pose, q, qd, &targets, &self.gravity)?
            }
            KeyframeLaw::Arrival(servo) => {
                let mut targets = [JointTarget::default(); N];
                for (t, &p) in targets.iter_mut().zip(pose) {
                    *t = JointTarget {
                        pose_rad: p,
                        time_to_go_s,
                    };
                }
                servo.tick(tree, base_pose, q, qd, &targets, &self.gravity)?
            }
        };
        let cmd = self.safety.with_losses(cmd, qd)?;
        Ok(self.safety.limited(&cmd))
    }
}

/// What a [`KeyframeServo`] tick reads, as one input (for [`Controller`]).
#[derive(Debug, Clone, Copy)]
pub struct KeyframeInput<'a, const N: usize> {
    /// The robot's fixed-base tree.
    pub tree: &'a Tree<N>,
    /// Where its base is welded, world.
    pub base_pose: &'a Isometry3<f64>,
    /// Joint positions, rad (m for a slider).
    pub q: &'a [f64; N],
    /// Joint velocities.
    pub qd: &'a [f64; N],
    /// The keyframes: (instant s, pose per joint), in time order.
    pub keyframes: &'a [(f64, [f64; N])],
    /// Now, s.
    pub now_s: f64,
}

impl<const N: usize> Controller<KeyframeInput<'_, N>> for KeyframeServo<N> {
    type Command = ServoTick<N>;
    type Error = ModelError;

    fn tick(&mut self, i: &KeyframeInput<'_, N>) -> Result<ServoTick<N>, ModelError> {
        KeyframeServo::tick(self, i.tree, i.base_pose, i.q, i.qd, i.keyframes, i.now_s)
    }

    fn limits(command: &ServoTick<N>) -> Limits {
        let count = |f: fn(&JointStatus) -> bool| {
            command.status.iter().flatten().filter(|s| f(s)).count() as u32
        };
        Limits {
            gain_clamped: count(|s| matches!(s, JointStatus::GainClamped)),
            infeasible: count(|s| matches!(s, JointStatus::Infeasible(_))),
            torque_limited: command.torque_limited.count_ones(),
            ..Limits::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::articulated::{ArrivalSettings, Coupling, LinkSpec, serial_tree};
    use crate::beat::{BeatConfig, InertiaModel};
    use proptest::prelude::*;

    const N: usize = 4;
    const PERIOD: f64 = 0.005;

    /// Two 1 m rods about z, gravity −y: a planar double pendulum.
    fn tree() -> Tree<N> {
        let rod = LinkSpec {
            origin_xyz_m: [0.0; 3],
            origin_rpy_rad: [0.0; 3],
            axis: [0.0, 0.0, 1.0],
            mass_kg: 1.0,
            com_m: [0.5, 0.0, 0.0],
            inertia_kgm2: [0.01, 0.0, 0.0, 0.09, 0.0, 0.09],
        };
        let second = LinkSpec {
            origin_xyz_m: [1.0, 0.0, 0.0],
            ..rod
        };
        serial_tree(&[rod, second]).unwrap()
    }

    fn safety(effort: f64) -> JointSafety<N> {
        let losses = [JointLosses {
            damping: 0.5,
            friction: 0.2,
        }; 2];
        JointSafety::new(2, &[effort; 2], &losses, PERIOD, 0.9, 20.0).unwrap()
    }

    fn arrival() -> TreeArrival {
        TreeArrival::new(
            ArrivalSettings {
                period_s: PERIOD,
                integrator: Integrator::SemiImplicitEuler,
                stability_margin: 0.9,
                hold_natural_freq_rad_s: 20.0,
                pose_tolerance_rad: 1e-3,
            },
            Coupling::InverseDynamics,
        )
        .unwrap()
    }

    fn servo(law: KeyframeLaw, effort: f64) -> KeyframeServo<N> {
        KeyframeServo::new(
            law,
            safety(effort),
            Vector3::new(0.0, -9.81, 0.0),
            PERIOD / 2.0,
        )
        .unwrap()
    }

    fn pose(a: f64, b: f64) -> [f64; N] {
        [a, b, 0.0, 0.0]
    }

    #[test]
    fn bad_limits_are_refused() {
        let ok = |j, e: &[f64], p, m, w| JointSafety::<N>::new(j, e, &[], p, m, w).is_some();
        assert!(ok(2, &[1.0, 0.0], PERIOD, 0.9, 20.0));
        assert!(!ok(5, &[1.0; 5], PERIOD, 0.9, 20.0), "beyond N");
        assert!(!ok(2, &[1.0], PERIOD, 0.9, 20.0), "an effort missing");
        assert!(!ok(2, &[1.0, f64::NAN], PERIOD, 0.9, 20.0));
        assert!(!ok(2, &[1.0, -1.0], PERIOD, 0.9, 20.0));
        assert!(!ok(2, &[1.0; 2], 0.0, 0.9, 20.0));
        assert!(!ok(2, &[1.0; 2], PERIOD, f64::INFINITY, 20.0));
        assert!(!ok(2, &[1.0; 2], PERIOD, 0.9, -1.0));
        let law = KeyframeLaw::Arrival(arrival());
        let g = Vector3::new(0.0, f64::NAN, 0.0);
        assert!(KeyframeServo::new(law, safety(10.0), g, 0.0).is_none());
        assert!(KeyframeServo::new(law, safety(10.0), Vector3::zeros(), -1.0).is_none());
    }

    #[test]
    fn the_arrival_tick_is_the_law_s_with_losses_within_the_efforts() {
        let t = tree();
        let base = Isometry3::identity();
        let (q, qd) = (pose(0.1, -0.2), pose(0.3, 0.4));
        let frames = [(1.0, pose(0.5, 0.5)), (2.0, pose(-0.5, 0.0))];
        let mut s = servo(KeyframeLaw::Arrival(arrival()), 1e6);
        let got = s.tick(&t, &base, &q, &qd, &frames, 0.25).unwrap();
        let mut targets = [JointTarget::default(); N];
        for (target, p) in targets.iter_mut().zip(frames[0].1) {
            *target = JointTarget {
                pose_rad: p,
                time_to_go_s: 0.75,
            };
        }
        let g = Vector3::new(0.0, -9.81, 0.0);
        let mut cmd = arrival().tick(&t, &base, &q, &qd, &targets, &g).unwrap();
        let losses = [JointLosses {
            damping: 0.5,
            friction: 0.2,
        }; N];
        let mut only_two = losses;
        only_two[2] = JointLosses::default();
        only_two[3] = JointLosses::default();
        cmd.add_losses(&only_two, &qd, PERIOD).unwrap();
        assert_eq!(got.torques_nm, cmd.torques());
        assert_eq!(got.torque_limited, 0);
        assert_eq!(got.status[0], Some(cmd.joints()[0].status));
        assert_eq!(got.status[2], None, "past the tree's joints");
        assert_eq!(got.stiffness[1], cmd.joints()[1].gains.stiffness_nm_per_rad);
        // Within 1 N·m each, both cut and flagged.
        let mut tight = servo(KeyframeLaw::Arrival(arrival()), 1.0);
        let cut = tight.tick(&t, &base, &q, &qd, &frames, 0.25).unwrap();
        assert_eq!(cut.torque_limited, 0b11);
        assert_eq!(KeyframeServo::limits(&cut).torque_limited, 2);
        assert!(cut.torques_nm.iter().all(|x| x.abs() <= 1.0));
    }

    #[test]
    fn keyframes_come_in_force_half_a_period_early_and_the_last_stays() {
        let t = tree();
        let base = Isometry3::identity();
        let (q, qd) = (pose(0.0, 0.0), pose(0.0, 0.0));
        let frames = [(1.0, pose(0.5, 0.5)), (2.0, pose(-0.5, 0.0))];
        let mut s = servo(KeyframeLaw::Arrival(arrival()), 1e6);
        for (now, current) in [(0.0, 0), (0.9974, 0), (0.9976, 1), (5.0, 1)] {
            s.tick(&t, &base, &q, &qd, &frames, now).unwrap();
            assert_eq!(s.current(), current, "at {now} s");
        }
        assert!(s.tick(&t, &base, &q, &qd, &[], 5.0).is_err(), "no keyframe");
        assert!(
            s.tick(&t, &base, &pose(f64::NAN, 0.0), &qd, &frames, 5.0)
                .is_err()
        );
    }

    #[test]
    fn the_beat_law_runs_each_keyframe_s_segment_and_holds() {
        let t = tree();
        let base = Isometry3::identity();
        let beat = BeatServo::new(BeatConfig {
            inertia: InertiaModel::Composite,
            parent_feedforward: false,
            time_constants: 4.0,
            period_s: PERIOD,
            integrator: Integrator::SemiImplicitEuler,
            stability_margin: 0.9,
        })
        .unwrap();
        let mut s = servo(KeyframeLaw::Beat(beat), 1e6);
        let (q, qd) = (pose(0.1, 0.0), pose(0.0, 0.0));
        let frames = [(1.0, pose(0.5, 0.5))];
        let out = s.tick(&t, &base, &q, &qd, &frames, 0.0).unwrap();
        assert!(out.stiffness[0] > 0.0 && out.torques_nm[0] > 0.0, "{out:?}");
        // The arrival law's hold pulls towards the pose held.
        let hold = servo(KeyframeLaw::Arrival(arrival()), 1e6);
        let held = hold.hold(&t, &base, &q, &qd, &pose(0.1, 0.0)).unwrap();
        assert_eq!(held.status[0], Some(JointStatus::Holding));
    }

    #[test]
    fn the_safe_state_damps_within_the_efforts() {
        let t = tree();
        let base = Isometry3::identity();
        let s = safety(2.0);
        let out = s.safe(&t, &base, &pose(0.0, 0.0), &pose(0.01, -1e6));
        assert!(
            out.torques_nm[0] < 0.0 && out.torques_nm[1] == 2.0,
            "{out:?}"
        );
        assert!(out.inertia_kgm2[0] > out.inertia_kgm2[1]);
        assert_eq!(out.status, [None; N]);
        let broken = s.safe(&t, &base, &pose(f64::NAN, 0.0), &pose(0.0, 0.0));
        assert_eq!(broken.torques_nm, [0.0; N]);
    }

    proptest! {
        #[test]
        fn any_state_gives_torques_within_the_efforts_or_a_refusal(
            q in proptest::array::uniform4(prop_oneof![
                Just(f64::NAN), Just(f64::INFINITY), -1e9f64..1e9, -3.0f64..3.0
            ]),
            qd in proptest::array::uniform4(prop_oneof![
                Just(f64::NAN), Just(-f64::INFINITY), -1e9f64..1e9, -30.0f64..30.0
            ]),
            now in prop_oneof![Just(f64::NAN), -10.0f64..10.0],
        ) {
            let t = tree();
            let base = Isometry3::identity();
            let frames = [(1.0, pose(0.5, 0.5)), (2.0, pose(-0.5, 0.0))];
            let mut s = servo(KeyframeLaw::Arrival(arrival()), 5.0);
            let ticked = s.tick(&t, &base, &q, &qd, &frames, now).ok();
            let safe = s.safety().safe(&t, &base, &q, &qd);
            for out in [ticked, Some(safe)].into_iter().flatten() {
                prop_assert!(out.torques_nm.iter().all(|x| x.is_finite() && x.abs() <= 5.0));
            }
        }
    }
}
