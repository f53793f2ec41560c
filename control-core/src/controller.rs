//! One interface for every controller of this crate: its input in, its command out, and what
//! limited the command.
//!
//! Each controller keeps its own input (what its law reads: a tree and a joint state, a
//! walker's bodies, a QP's contacts) and its own command (torques with everything the law
//! worked out), but all of them implement [`Controller`], so code that runs, records or
//! supervises a controller (a fixed-rate loop, a test harness, a no-allocation probe) is written
//! once. [`Limits`] is the part of every command's status that says what held it back: gains
//! clamped to the stable limit, arrivals no stable gain reaches on time, torques cut at their
//! effort, other bounds, or a fallback in place of the law.
//!
//! | controller | input | command |
//! |---|---|---|
//! | [`crate::arm::ArmController`] | [`crate::arm::ArmInput`] | [`crate::servo::ServoOutput`] |
//! | [`crate::articulated::TreeArrival`] | [`crate::articulated::TreeInput`] of [`crate::articulated::JointTarget`] | [`crate::articulated::TreeCommand`] |
//! | [`crate::keyframes::KeyframeServo`] | [`crate::keyframes::KeyframeInput`] | [`crate::keyframes::ServoTick`] |
//! | [`crate::beat::BeatServo`] | [`crate::articulated::TreeInput`] of [`crate::beat::BeatTarget`] | [`crate::articulated::TreeCommand`] |
//! | [`crate::reach::Reach`] | [`crate::reach::ReachTick`] | [`crate::reach::ReachCommand`] |
//! | [`crate::simbicon::Simbicon`] | [`crate::simbicon::WalkerState`] | [`crate::simbicon::WalkCommand`] |
//! | [`crate::simbicon3d::Simbicon3d`] | [`crate::simbicon3d::Walk3dInput`] | [`crate::simbicon3d::Walk3dCommand`] |
//! | [`crate::walker3d::Walker3d`] | [`crate::walker3d::Walker3dInput`] | [`crate::walker3d::Walker3dCommand`] |
//! | [`crate::dynamo::PoseServo`] | [`crate::dynamo::PoseInput`] | [`crate::dynamo::PoseCommand`] |
//! | [`crate::dynamo::humanoid::HumanoidPose`] | [`crate::dynamo::humanoid::HumanoidInput`] | [`crate::dynamo::humanoid::HumanoidCommand`] |
//! | [`crate::dynamo::RootSpring`] | [`crate::dynamo::RootSpringInput`] | [`crate::dynamo::RootSpringOut`] |
//! | [`crate::balance::Balance`] | [`crate::balance::BalanceInput`] | [`crate::balance::BalanceOutput`] |
//! | [`crate::balance::legged::LeggedBalance`] | [`crate::balance::legged::LeggedInput`] | [`crate::balance::BalanceOutput`] |
//! | [`crate::balance::legged::PdHold`] | [`crate::balance::legged::PdHoldInput`] | [`crate::balance::legged::PdHoldCommand`] |
//! | [`crate::contact_stabiliser::stance::StanceStabiliser`] | [`crate::contact_stabiliser::stance::StanceTickInput`] | [`crate::contact_stabiliser::stance::StanceCommand`] |
//! | [`crate::balance::humanoid::HumanoidBalance`] | [`crate::balance::humanoid::HumanoidBalanceInput`] | [`crate::balance::humanoid::HumanoidBalanceCommand`] |
//! | [`crate::contact_stabiliser::ContactStabiliser`] | [`crate::contact_stabiliser::StabiliserInput`] | [`crate::contact_stabiliser::StabiliserOutput`] |
//!
//! ```
//! use control_core::controller::{Controller, Limits};
//!
//! /// One tick of any controller, and whether anything held its command back.
//! fn tick_and_check<I, C: Controller<I>>(c: &mut C, input: &I) -> Option<(C::Command, Limits)> {
//!     let command = c.tick(input).ok()?;
//!     let limits = C::limits(&command);
//!     Some((command, limits))
//! }
//! ```
//!
//! Never allocates, blocks or panics: the trait adds nothing to the controllers' own ticks, and
//! [`Controller::limits`] only counts.

/// What held a tick's command back, counted over its joints (or torque groups).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limits {
    /// Joints whose gains were clamped to what the period integrates stably.
    pub gain_clamped: u32,
    /// Joints whose target no stable gain reaches on time (the closest arrival was used).
    pub infeasible: u32,
    /// Joints (or torque groups) whose torque was cut at its limit.
    pub torque_limited: u32,
    /// Other bounds that acted: a target bounded (a walker's swing hip), a fixed-point value
    /// saturated, a spring saturated.
    pub bounded: u32,
    /// The command is not the law's: a fallback took its place (a QP that did not solve, a
    /// refused state, a broken root spring that applies nothing).
    pub fallback: bool,
}

impl Limits {
    /// Nothing held the command back.
    pub fn is_clear(&self) -> bool {
        *self == Self::default()
    }
}

/// A controller: each tick, its input in, its command out (or why the input was refused), and
/// what limited the command. `Input` is what the law reads; a controller may implement it for
/// several inputs (a tree of any capacity).
pub trait Controller<Input: ?Sized> {
    /// What a tick returns: the torques and what the law worked out.
    type Command;
    /// Why a tick refused its input (`core::convert::Infallible` for a controller whose
    /// command carries its own status).
    type Error;

    /// One tick. Never allocates, blocks or panics.
    fn tick(&mut self, input: &Input) -> Result<Self::Command, Self::Error>;

    /// What held `command` back.
    fn limits(command: &Self::Command) -> Limits;
}

/// A count as u32, saturating (a controller has at most a few hundred joints).
pub(crate) fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::articulated::{
        ArrivalSettings, Coupling, JointStatus, JointTarget, LinkSpec, TreeArrival, TreeInput,
        serial_tree,
    };
    use crate::beat::{BeatConfig, BeatServo, BeatTarget};
    use crate::dynamo::{RootSpring, RootSpringConfig, RootSpringInput};
    use crate::tree::Tree;
    use nalgebra::{Isometry3, UnitQuaternion, Vector3};

    /// A tick through the trait, for any controller.
    fn through_trait<I, C: Controller<I>>(c: &mut C, input: &I) -> (C::Command, Limits)
    where
        C::Error: core::fmt::Debug,
    {
        let command = c.tick(input).unwrap();
        let limits = C::limits(&command);
        (command, limits)
    }

    fn rod(x: f64) -> LinkSpec {
        LinkSpec {
            origin_xyz_m: [x, 0.0, 0.0],
            origin_rpy_rad: [0.0; 3],
            axis: [0.0, 0.0, 1.0],
            mass_kg: 2.0,
            com_m: [0.5, 0.0, 0.0],
            inertia_kgm2: [0.003, 0.0, 0.0, 0.168, 0.0, 0.168],
        }
    }

    /// The trait's tick is the controller's own, and its limits count the joints' statuses.
    #[test]
    fn joint_space_controllers_through_the_trait() {
        let tree: Tree<3> = serial_tree(&[rod(0.0), rod(1.0), rod(1.0)]).unwrap();
        let base = Isometry3::identity();
        let g = Vector3::new(0.0, -9.81, 0.0);
        let q = [0.2, -0.4, 0.1];
        let v = [0.0; 3];
        // Far, with almost no time left: no stable gain arrives (or the gains are clamped).
        let rushed = [JointTarget {
            pose_rad: 2.0,
            time_to_go_s: 0.006,
        }; 3];
        let mut arrival =
            TreeArrival::new(ArrivalSettings::default(), Coupling::InverseDynamics).unwrap();
        let input = TreeInput {
            tree: &tree,
            base_pose: &base,
            q: &q,
            velocities: &v,
            targets: &rushed,
            gravity: &g,
        };
        let (command, limits) = through_trait(&mut arrival, &input);
        let direct = arrival.tick(&tree, &base, &q, &v, &rushed, &g).unwrap();
        assert_eq!(command.torques(), direct.torques());
        let clamped = direct
            .joints()
            .iter()
            .filter(|j| j.status == JointStatus::GainClamped)
            .count();
        let infeasible = direct
            .joints()
            .iter()
            .filter(|j| matches!(j.status, JointStatus::Infeasible(_)))
            .count();
        assert_eq!(clamped + infeasible, 3, "every joint rushed: {limits:?}");
        assert_eq!(limits.gain_clamped as usize, clamped);
        assert_eq!(limits.infeasible as usize, infeasible);
        assert!(!limits.is_clear() && !limits.fallback);
        // A target whose time is up is held: nothing limits it.
        let held = [JointTarget {
            pose_rad: 0.2,
            time_to_go_s: 0.0,
        }; 3];
        let (_, limits) = through_trait(
            &mut arrival,
            &TreeInput {
                targets: &held,
                ..input
            },
        );
        assert!(limits.is_clear(), "{limits:?}");

        let mut beat = BeatServo::new(BeatConfig::default()).unwrap();
        let beats = [BeatTarget {
            pose_rad: 0.5,
            velocity_rad_s: 0.0,
            segment_s: 0.5,
        }; 3];
        let (command, limits) = through_trait(
            &mut beat,
            &TreeInput {
                tree: &tree,
                base_pose: &base,
                q: &q,
                velocities: &v,
                targets: &beats,
                gravity: &g,
            },
        );
        let direct = beat.tick(&tree, &base, &q, &v, &beats, &g).unwrap();
        assert_eq!(command.torques(), direct.torques());
        assert_eq!(limits, direct.limits());
    }

    /// A broken root spring applies nothing: a fallback; a holding one is clear.
    #[test]
    fn the_root_spring_says_when_it_broke() {
        let mut spring = RootSpring::new(RootSpringConfig {
            stiffness_nm_per_rad: 690.0,
            damping_nms_per_rad: 69.0,
            max_torque_nm: 69.0,
            break_torque_nm: Some(138.0),
            break_tilt_rad: Some(0.5),
        })
        .unwrap();
        let w = Vector3::zeros();
        let upright = UnitQuaternion::identity();
        let (out, limits) = through_trait(
            &mut spring,
            &RootSpringInput {
                root_orientation: &upright,
                root_angular_velocity_rad_s: &w,
            },
        );
        assert!(limits.is_clear(), "{out:?}");
        let fallen = UnitQuaternion::from_euler_angles(1.2, 0.0, 0.0);
        let (_, limits) = through_trait(
            &mut spring,
            &RootSpringInput {
                root_orientation: &fallen,
                root_angular_velocity_rad_s: &w,
            },
        );
        assert!(limits.fallback, "{limits:?}");
    }
}
