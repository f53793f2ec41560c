//! A 15-body humanoid with a floating root as a Rapier plant: the body described by a URDF file
//! (`models/humanoid15.urdf`, after Cartwheel-3d's "Bip"), read by [`HumanoidModel::load`]
//! (robot-model's; the controller reads the same file with the same function), stepped
//! with a torque vector per joint plus an external torque on the root, reporting every body's
//! world motion, the ground's force on the feet and toes, and the other bodies' ground contacts
//! as events. Hosted as `"kind": "humanoid"` scenes ([`HumanoidScene`]).
//!
//! ```
//! use sim_host::humanoid::{HumanoidPlant, HumanoidScene};
//! let urdf = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/humanoid15.urdf");
//! let mut plant = HumanoidPlant::new(&HumanoidScene::new(urdf, 1.0, [0.0, -9.81, 0.0])).unwrap();
//! assert_eq!(plant.model().bodies.len(), 15);
//! let torques = vec![0.0; plant.model().torque_len()]; // 14 joints × 3 + root 3 = 45
//! let frame = plant.step(&torques).unwrap();
//! assert_eq!((frame.step, frame.bodies.len(), frame.contacts.len()), (1, 15, 12));
//! assert!(frame.contacts[0].force_n[1] > 0.0); // the left foot stands on the ground
//! ```
//!
//! # The description
//! [`HumanoidModel`] and its reader are robot-model's ([`robot_model::humanoid`]), whose docs
//! give the URDF conventions: y up, link frames parallel to the world in the zero pose, ball
//! (`spherical`), hinge and two-axis joints with per-axis limits, principal inertias. The plant
//! and the controllers read the file with the same function.
//!
//! # What is built
//! - Every body dynamic, its Rapier pose the pose of its centre of mass (body axes = link axes),
//!   `can_sleep(false)`. Mass properties exact: colliders of density 0, each body's mass and
//!   principal inertia given whole by `additional_mass_properties` (Rapier holds 1/m and 1/I in
//!   f32: [`HumanoidPlant::mass_properties`] reads back the given values to f32 rounding).
//! - Impulse joints (maximal coordinates: a floating base with ground contact): balls as
//!   spherical joints with the three per-axis limits; hinges as revolute joints with their limit;
//!   two-axis joints as generic joints with the linear axes and the locked angular axis locked
//!   and the two free axes limited. No motors, no damping.
//! - Self-collision off: the bodies' colliders are in [`Group::GROUP_2`] and collide only with
//!   [`Group::GROUP_1`], the ground's: one static box whose top face is y = 0 (1000 × 1000 m).
//!   Thrown balls ([`HumanoidScene::balls`]) are in groups 1 and 3: they hit the bodies, the
//!   ground and each other, and their touches of the bodies are events (ids from
//!   [`FIRST_BALL_ID`]), never ground contacts.
//!   Coulomb friction [`FRICTION`] (0.8) on the ground and on every shape, no restitution,
//!   `FrictionModel::Coulomb`; [`SOLVER_ITERATIONS`] substeps per step (Rapier's default, as the
//!   biped).
//! - Ground contacts stiffer than Rapier's: `static_contact_softness` [`STATIC_CONTACT_HZ`]
//!   (300 Hz) with damping ratio [`STATIC_CONTACT_DAMPING_RATIO`] (1), not 60 Hz and 10. Rapier
//!   scales a contact's stiffness by the effective mass it sees, here a 1 kg foot under a 68 kg
//!   body: at its default a standing foot's heel sank 3.5 mm under the body's weight and the
//!   foot rocked back with it, and the body on the standing PD of `tests/humanoid.rs` (its
//!   centre of mass held above the ankles) rolled back over its heels and fell within 4 s, as a
//!   tower on soft soil; at 300 Hz and ζ = 1 the heel sinks about 0.1 mm and the same PD stands.
//!   At dt 5 ms, ζ = 10 at 300 Hz made the feet's load jump between 0.1 and 1.9 m·g from step to
//!   step, and 1000 Hz at ζ = 1 between 0.3 and 1.7.
//! - Start: [`InitialPose::Standing`]: every joint at zero unless the scene rotates it, the root
//!   at x = z = 0 and not rotated, at the height that puts the lowest point of any shape on the
//!   ground (y = 0): with every joint at zero the soles are flat on it. At rest.
//!
//! # Wire conventions
//! - **State frame** ([`HumanoidPlant::state_frame`]): sequence = step index; no joints; the
//!   bodies' world motion in body order ([`BodyMotion`]: Rapier's centre of mass, its rotation
//!   as Rapier holds it in f32 converted to f64 (unit to about 1e-7), velocity, angular
//!   velocity); contacts: always twelve: first the ground's force on the left foot, right foot,
//!   left toes and right toes, in that order ([`CONTACT_BODY_NAMES`], `BodyId` = body index,
//!   point 0; zero when not touching), then the part of it at each bottom corner of the left
//!   and then the right foot's sole box (points 1 to 4 in [`SOLE_CORNERS`] order: every solver
//!   contact point of the box counted at the corner on its side of the box's x and z); events: [`Event::ContactBegan`] / [`Event::ContactEnded`] when any other body
//!   starts or stops touching the ground (its normal force > 0), so a controller can tell a
//!   fall (more than [`MAX_EVENTS`] in a step: the rest in the following frames); the step's
//!   cost; `applied_torque_sequence` (low 32 bits; 0 when none was applied).
//! - **Torque frame**: for each joint, URDF joint order, 3 values: the joint's torque as a world
//!   vector (x, y, z), N·m, applied +τ on the child and −τ on the parent (a hinge's or a two-axis
//!   joint's constraint takes the part its locked axes carry); then 3 values: an external torque
//!   on the root only, world x, y, z, N·m (Dynamo's root spring, "hand of god"). 45 values for
//!   the 14 joints; fewer is fine (missing = 0). Every body's forces and torques are reset before
//!   each step and the given ones held for the whole step. Refused
//!   ([`HumanoidPlant::check_torque_slice`]): a non-finite value; a joint torque whose norm
//!   exceeds the joint's effort; a root torque whose norm exceeds the scene's
//!   `root_torque_limit_nm` or whose vertical (y) part exceeds 1e-9·max(1, |τ|) (the root spring
//!   never acts about the vertical); any non-zero value beyond the last root value.
//! - Pushes: a constant world force at a body's centre of mass for the steps k with
//!   round(start_s/dt) ≤ k < round(start_s/dt) + round(duration_s/dt).
//! - Ground forces: for each body, over every contact pair between the ground and its shapes,
//!   the solver's normal and friction impulses in the world frame, summed over the step's
//!   substeps, divided by dt (as [`crate::environment`] reads them): the step's mean force.
//!
//! # Measured (`models/humanoid15.urdf`, dt 5 ms; `tests/humanoid.rs`, `benches/plant_step.rs`)
//! - Step cost: 44.9 µs standing on both feet under a PD (criterion
//!   `plant_step/humanoid_standing`, [43.2, 46.6] µs; `biped_standing` 29.4 µs in the same run,
//!   on a loaded 2-vCPU VM); the plant's own [`PlantClock::last_step_cost_ns`] (with the
//!   readout) median 51.7 µs, p99 179 µs over a 4 s stand.
//! - Zero torques: the body collapses; the right lower arm touches the ground at 0.645 s.
//! - Standing on a parent-space PD (kp 1000 / kd 2 sagittal on trunk and legs, the ankles
//!   leaning the body 0.015 rad forward so that its centre of mass is above them, lighter gains
//!   on light limbs): stays up 4 s; after 1.5 s the feet and toes carry m·g within 1.1 % at every
//!   step (±6 % while it settles in the first 0.5 s). With the zero pose's centre of mass 1.6 cm
//!   behind the ankles (Cartwheel's anchors) the same PD without the lean rolls back and falls.
//! - A push of (150, 700, −100) N for 0.1 s on the torso in zero gravity: the centre of mass
//!   moves at impulse/mass to within 1e-6 (relative).
//!
//! Never does: accept a description or a scene it cannot simulate (each refused naming the
//! element or the field), apply a torque frame that fails the check, read the wall clock for
//! physics (only to time a step), or panic on a validated scene.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use control_core::frames::{BodyId, BodyMotion, ContactForce, Event, MAX_EVENTS, StateFrame};
use rapier3d::parry::glamx::glam::{DQuat, DVec3};
use rapier3d::prelude::*;
use serde::{Deserialize, Serialize};

use crate::clock::PlantClock;
use crate::environment::{
    ActivePush, PROP_GROUPS, PropMaterial, Props, Push, apply_pushes, body_motion, check_props,
    quarantined, queue_contact, reset_forces,
};
use crate::scene::{
    BallSpawn, Checker, DEFAULT_DT_S, MAX_PUSH_FORCE_N, MAX_TORQUE_LIMIT_NM, SceneError, steps_for,
};

// The description (its types, its reader, its conventions) is robot-model's: one reader for
// the plant and the controllers.
pub use robot_model::humanoid::{
    BodyModel, BodyPose, CONTACT_BODY_NAMES, Geometry, HumanoidModel, JointKind, JointModel,
    MAX_HUMANOID_JOINTS, ShapeModel, per_axis_angles_rad,
};

/// Coulomb friction coefficient of the ground and of every shape of the humanoid.
pub const FRICTION: f64 = 0.8;
/// The order of a sole's bottom corners in [`HumanoidPlant::sole_corner_forces_n`] and on the
/// wire (contact point k + 1 of the foot): by the signs of the corner's x and z in the sole
/// box's frame (the link's axes).
pub const SOLE_CORNERS: [[i8; 2]; 4] = [[-1, -1], [-1, 1], [1, -1], [1, 1]];
/// The largest component of a scene's `initial_velocity_m_s`, m/s.
pub const MAX_INITIAL_SPEED_M_S: f64 = 20.0;
/// Rapier's solver substeps per step (`num_solver_iterations`).
pub const SOLVER_ITERATIONS: usize = 4;
/// Natural frequency of the ground contacts' softness, Hz (Rapier's
/// `static_contact_softness`; its default is 60 Hz).
pub const STATIC_CONTACT_HZ: f64 = 300.0;
/// Damping ratio of the ground contacts' softness (Rapier's default is 10).
pub const STATIC_CONTACT_DAMPING_RATIO: f64 = 1.0;
/// Most pushes a scene has.
pub const MAX_PUSHES: usize = 64;
/// Most balls a scene has.
pub const MAX_BALLS: usize = crate::environment::MAX_PROPS;
/// The smallest id a ball may have: ids below are the humanoid's body indices, which the
/// ground-contact events name.
pub const FIRST_BALL_ID: u16 = crate::environment::FIRST_PROP_ID;
/// A root torque's vertical part is refused beyond this times max(1, |τ|).
pub const ROOT_TORQUE_VERTICAL_TOLERANCE: f64 = 1e-9;

// ---------------------------------------------------------------------------------------------
// The scene

/// The value of a humanoid scene's required `kind` field: `"humanoid"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HumanoidKind {
    /// `"humanoid"`.
    Humanoid,
}

/// How the humanoid starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InitialPose {
    /// `"standing"`: every joint at zero (or as `initial_joint_rotations_rad` says), the root not
    /// rotated at x = z = 0, at the height that puts the lowest shape on the ground (y = 0), at
    /// rest.
    #[default]
    Standing,
}

/// A humanoid scene: which URDF, step, duration, gravity, the start pose, the pushes and the
/// largest root torque. The JSON form:
///
/// ```json
/// {
///   "kind": "humanoid",
///   "urdf": "../../models/humanoid15.urdf",
///   "dt_s": 0.005,
///   "end_time_s": 10.0,
///   "gravity_m_s2": [0.0, -9.81, 0.0],
///   "initial_pose": "standing",
///   "initial_joint_rotations_rad": { "left_knee": [0.0, 0.0, -0.3] },
///   "pushes": [
///     { "body": "torso", "force_n": [200.0, 0.0, 0.0], "start_s": 2.0, "duration_s": 0.2 }
///   ],
///   "root_torque_limit_nm": 0.0
/// }
/// ```
///
/// `kind`, `urdf`, `end_time_s` and `gravity_m_s2` are required; the rest default to the values
/// shown (no rotations, no pushes, no root torque accepted). Unknown fields are refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HumanoidScene {
    /// Always [`HumanoidKind::Humanoid`] (`"humanoid"`).
    pub kind: HumanoidKind,
    /// The URDF file. A relative path in a scene file is resolved against the scene file's
    /// folder when the file is loaded ([`crate::scene::SceneFile`]); in a scene built
    /// in memory it is relative to the working directory.
    pub urdf: PathBuf,
    /// Physics step, s (default 0.005).
    #[serde(default = "default_dt")]
    pub dt_s: f64,
    /// The run ends after the step that reaches this time, s.
    pub end_time_s: f64,
    /// Gravity, a world vector, m/s² (`[0, -9.81, 0]`: y up).
    #[serde(deserialize_with = "crate::input::exact")]
    pub gravity_m_s2: [f64; 3],
    /// The start pose (default: standing).
    #[serde(default)]
    pub initial_pose: InitialPose,
    /// Joint rotations at t = 0 by joint name: each the child's rotation relative to its
    /// parent as an axis-angle vector in the parent's axes, rad (norm: the angle, at most π). A
    /// hinge's along its axis; a two-axis joint's without a part along its locked axis; within
    /// the joint's limits. Joints not named: 0.
    #[serde(default)]
    pub initial_joint_rotations_rad: BTreeMap<String, [f64; 3]>,
    /// Every body's velocity at t = 0, world, m/s (default at rest; each component within
    /// ±[`MAX_INITIAL_SPEED_M_S`]): a walk starts moving, as Cartwheel's saved walking states.
    #[serde(default, skip_serializing_if = "is_at_rest")]
    pub initial_velocity_m_s: [f64; 3],
    /// Forces on bodies (at most [`MAX_PUSHES`]).
    #[serde(default)]
    pub pushes: Vec<Push>,
    /// Balls thrown at the humanoid (at most [`MAX_BALLS`]; ids from [`FIRST_BALL_ID`], each
    /// once). A ball's first touch of the humanoid in a step is the event
    /// `ContactBegan { body: its id }`, the end of its touch `ContactEnded`; balls never count
    /// as ground contacts.
    #[serde(default)]
    pub balls: Vec<BallSpawn>,
    /// The largest norm of the external torque on the root the plant accepts, N·m (default 0:
    /// none; a torque frame asking for more is refused).
    #[serde(default)]
    pub root_torque_limit_nm: f64,
}

fn default_dt() -> f64 {
    DEFAULT_DT_S
}

/// Whether a scene's initial velocity is zero (then left out of its JSON).
fn is_at_rest(v: &[f64; 3]) -> bool {
    v.iter().all(|c| *c == 0.0)
}

impl HumanoidScene {
    /// A scene of the humanoid in `urdf` under `gravity_m_s2` for `end_time_s`, standing at
    /// rest with every joint at zero, the default step, no pushes, no root torque.
    pub fn new(urdf: impl Into<PathBuf>, end_time_s: f64, gravity_m_s2: [f64; 3]) -> Self {
        Self {
            kind: HumanoidKind::Humanoid,
            urdf: urdf.into(),
            dt_s: DEFAULT_DT_S,
            end_time_s,
            gravity_m_s2,
            initial_pose: InitialPose::Standing,
            initial_joint_rotations_rad: BTreeMap::new(),
            initial_velocity_m_s: [0.0; 3],
            pushes: Vec::new(),
            balls: Vec::new(),
            root_torque_limit_nm: 0.0,
        }
    }

    /// Number of physics steps of the run: `end_time_s / dt_s`, rounded.
    pub fn total_steps(&self) -> u64 {
        steps_for(self.end_time_s, self.dt_s)
    }

    /// Every check that needs no URDF: every number finite and in range, at most
    /// [`MAX_PUSHES`] pushes, each naming a body. On failure returns the first failing field as
    /// a path in the serialized scene (`gravity_m_s2[1]`,
    /// `initial_joint_rotations_rad.left_knee`, `pushes[0].start_s`) and the reason. What needs
    /// the URDF (joint and body names, limits) is checked by [`HumanoidPlant::new`] under the
    /// same paths.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let mut c = Checker::default();
        c.timing(self.dt_s, self.end_time_s);
        if self.urdf.as_os_str().is_empty() {
            c.fail("urdf", String::from("must name a URDF file"));
        }
        for (k, g) in self.gravity_m_s2.into_iter().enumerate() {
            c.range(&format!("gravity_m_s2[{k}]"), g, -1000.0, 1000.0);
        }
        for (k, v) in self.initial_velocity_m_s.into_iter().enumerate() {
            c.range(
                &format!("initial_velocity_m_s[{k}]"),
                v,
                -MAX_INITIAL_SPEED_M_S,
                MAX_INITIAL_SPEED_M_S,
            );
        }
        let pi = std::f64::consts::PI;
        for (name, v) in &self.initial_joint_rotations_rad {
            let field = format!("initial_joint_rotations_rad.{name}");
            for (k, &x) in v.iter().enumerate() {
                c.range(&format!("{field}[{k}]"), x, -pi, pi);
            }
            let angle = DVec3::from_array(*v).length();
            if c.ok() && angle > pi {
                c.fail(
                    &field,
                    format!("the rotation's angle (its norm) must be at most π, got {angle}"),
                );
            }
        }
        if self.pushes.len() > MAX_PUSHES {
            c.fail(
                "pushes",
                format!(
                    "{} pushes: a humanoid scene has at most {MAX_PUSHES}",
                    self.pushes.len()
                ),
            );
        }
        for (i, p) in self.pushes.iter().enumerate() {
            if p.body.is_empty() {
                c.fail(
                    &format!("pushes[{i}].body"),
                    String::from("must name a body"),
                );
            }
            for (k, f) in p.force_n.into_iter().enumerate() {
                c.range(
                    &format!("pushes[{i}].force_n[{k}]"),
                    f,
                    -MAX_PUSH_FORCE_N,
                    MAX_PUSH_FORCE_N,
                );
            }
            c.range(&format!("pushes[{i}].start_s"), p.start_s, 0.0, 1e7);
            c.range(&format!("pushes[{i}].duration_s"), p.duration_s, 0.0, 1e7);
        }
        c.range(
            "root_torque_limit_nm",
            self.root_torque_limit_nm,
            0.0,
            MAX_TORQUE_LIMIT_NM,
        );
        check_props(
            &mut c,
            &self.balls,
            &[],
            FIRST_BALL_ID,
            Some(MAX_BALLS),
            "humanoid",
        );
        c.result()
    }
}

impl crate::scene::SceneFile for HumanoidScene {
    fn check(&self) -> Result<(), (String, String)> {
        self.validate()
    }

    fn resolve_beside(&mut self, file: &Path) {
        self.urdf = crate::scene::urdf_beside(&self.urdf, file);
    }
}

// ---------------------------------------------------------------------------------------------
// The plant

/// A torque frame the plant refuses ([`HumanoidPlant::step`]); the plant did not step.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TorqueRefused {
    /// The value's index in the frame.
    pub index: usize,
    /// The value, N·m.
    pub value_nm: f64,
    /// Why.
    pub reason: String,
}

impl fmt::Display for TorqueRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "torque value {} ({} N·m) refused: {}",
            self.index, self.value_nm, self.reason
        )
    }
}

impl std::error::Error for TorqueRefused {}

/// The humanoid of a [`HumanoidScene`], ready to step.
pub struct HumanoidPlant {
    model: HumanoidModel,
    world: PhysicsWorld,
    /// Body order.
    bodies: Vec<RigidBodyHandle>,
    /// Every shape's collider and its body index.
    colliders: Vec<(ColliderHandle, usize)>,
    /// The left and right feet's sole boxes (their first box), whose contact points are read
    /// per corner.
    sole_colliders: [Option<ColliderHandle>; 2],
    ground: ColliderHandle,
    pushes: Vec<ActivePush>,
    /// The thrown balls: members of the ground's group (the humanoid's shapes see them) and of
    /// their own; they hit the humanoid, the ground and each other.
    balls: Props,
    root_torque_limit_nm: f64,
    clock: PlantClock,
    /// The ground's force on each body during the last step, world frame, N, body order.
    forces: Vec<[f64; 3]>,
    /// The ground's force at each bottom corner of the left and right soles during the last
    /// step ([`SOLE_CORNERS`] order), world frame, N.
    corner_forces: [[[f64; 3]; 4]; 2],
    /// Whether each body touched the ground during the last step (normal force > 0).
    touching: Vec<bool>,
    /// Ground-contact events not yet past a frame; the first [`MAX_EVENTS`] are the current
    /// frame's.
    pending: VecDeque<Event>,
    events_left_out: u64,
}

impl fmt::Debug for HumanoidPlant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HumanoidPlant")
            .field("model", &self.model.name)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

fn v3(a: [f64; 3]) -> Vector {
    Vector::new(a[0] as Real, a[1] as Real, a[2] as Real)
}

fn rot(q: [f64; 4]) -> Rotation {
    Rotation::from_xyzw(q[1] as Real, q[2] as Real, q[3] as Real, q[0] as Real).normalize()
}

const ANG_AXES: [JointAxis; 3] = [JointAxis::AngX, JointAxis::AngY, JointAxis::AngZ];
const ANG_MASKS: [JointAxesMask; 3] = [
    JointAxesMask::ANG_X,
    JointAxesMask::ANG_Y,
    JointAxesMask::ANG_Z,
];

/// The relative rotation of `joint` for the scene's axis-angle vector `v`, checked against the
/// joint's kind and limits.
fn start_rotation(joint: &JointModel, v: [f64; 3]) -> Result<DQuat, String> {
    let v = DVec3::from_array(v);
    let q = DQuat::from_scaled_axis(v);
    let tol = 1e-9;
    let within = |a: f64, [lo, hi]: [f64; 2]| a >= lo - tol && a <= hi + tol;
    let angles = per_axis_angles_rad([q.w, q.x, q.y, q.z]);
    match joint.kind {
        JointKind::Hinge { axis, limits_rad } => {
            let a = DVec3::from_array(axis);
            let along = v.dot(a);
            if (v - a * along).length() > tol {
                return Err(format!(
                    "joint `{}` is a hinge about {axis:?}: its rotation must lie along that axis",
                    joint.name
                ));
            }
            if !within(along, limits_rad) {
                return Err(format!(
                    "{along} rad is beyond joint `{}`'s range {limits_rad:?}",
                    joint.name
                ));
            }
        }
        JointKind::Ball { limits_rad } => {
            for k in 0..3 {
                if !within(angles[k], limits_rad[k]) {
                    return Err(format!(
                        "{} rad about {} is beyond joint `{}`'s range {:?}",
                        angles[k],
                        ["x", "y", "z"][k],
                        joint.name,
                        limits_rad[k]
                    ));
                }
            }
        }
        JointKind::TwoAxis { axes, limits_rad } => {
            let locked = locked_axis(&axes);
            if v.to_array()[locked].abs() > tol {
                return Err(format!(
                    "joint `{}` has its {} axis locked: its rotation must have no part along it",
                    joint.name,
                    ["x", "y", "z"][locked]
                ));
            }
            for (axis, limits) in axes.iter().zip(limits_rad) {
                let k = axis_index(axis);
                if !within(angles[k], limits) {
                    return Err(format!(
                        "{} rad about {} is beyond joint `{}`'s range {limits:?}",
                        angles[k],
                        ["x", "y", "z"][k],
                        joint.name
                    ));
                }
            }
        }
    }
    Ok(q)
}

/// Which coordinate axis (0, 1, 2) the unit coordinate vector `axis` is.
fn axis_index(axis: &[f64; 3]) -> usize {
    (0..3).find(|&k| axis[k] != 0.0).unwrap_or(0)
}

/// The coordinate axis a two-axis joint with free `axes` locks.
fn locked_axis(axes: &[[f64; 3]; 2]) -> usize {
    let free = [axis_index(&axes[0]), axis_index(&axes[1])];
    (0..3).find(|k| !free.contains(k)).unwrap_or(1)
}

impl HumanoidPlant {
    /// Builds the humanoid of `scene`: checks the scene ([`HumanoidScene::validate`]), reads its
    /// URDF ([`HumanoidModel::load`]), checks the start rotations and the pushed bodies against
    /// it, poses the bodies standing and builds the Rapier world. Errors name the file
    /// `(in memory)` (a caller that loaded the scene from a file substitutes its name) and the
    /// scene field: `urdf` for anything about the URDF itself, whose reason names the URDF file
    /// and element.
    pub fn new(scene: &HumanoidScene) -> Result<Self, SceneError> {
        let err = |field: &str, reason: String| SceneError {
            file: "(in memory)".into(),
            field: field.to_owned(),
            reason,
        };
        scene
            .validate()
            .map_err(|(field, reason)| err(&field, reason))?;
        let model = HumanoidModel::load(&scene.urdf).map_err(|e| err("urdf", e.to_string()))?;
        let mut rotations = vec![[1.0, 0.0, 0.0, 0.0]; model.joints.len()];
        for (name, &v) in &scene.initial_joint_rotations_rad {
            let field = format!("initial_joint_rotations_rad.{name}");
            let Some(j) = model.joint_index(name) else {
                let names: Vec<&str> = model.joints.iter().map(|j| j.name.as_str()).collect();
                return Err(err(
                    &field,
                    format!(
                        "no joint `{name}` in {} (joints: {})",
                        scene.urdf.display(),
                        names.join(", ")
                    ),
                ));
            };
            let q = start_rotation(&model.joints[j], v).map_err(|reason| err(&field, reason))?;
            rotations[j] = [q.w, q.x, q.y, q.z];
        }
        let mut pushes = Vec::with_capacity(scene.pushes.len());
        for (i, p) in scene.pushes.iter().enumerate() {
            let Some(body) = model.body_index(&p.body) else {
                let names: Vec<&str> = model.bodies.iter().map(|b| b.name.as_str()).collect();
                return Err(err(
                    &format!("pushes[{i}].body"),
                    format!(
                        "no body `{}` in {} (bodies: {})",
                        p.body,
                        scene.urdf.display(),
                        names.join(", ")
                    ),
                ));
            };
            pushes.push((body, p));
        }
        let upright = BodyPose {
            com_m: [0.0; 3],
            orientation: [1.0, 0.0, 0.0, 0.0],
        };
        let at_zero = model.pose(upright, &rotations);
        let height = -model.lowest_point_m(&at_zero);
        let start = model.pose(
            BodyPose {
                com_m: [0.0, height, 0.0],
                ..upright
            },
            &rotations,
        );

        let mut world = PhysicsWorld::new();
        world.gravity = v3(scene.gravity_m_s2);
        world.integration_parameters.dt = scene.dt_s as Real;
        world.integration_parameters.num_solver_iterations = SOLVER_ITERATIONS;
        world.integration_parameters.friction_model = FrictionModel::Coulomb;
        // Stiffer, less damped ground contacts than Rapier's default (60 Hz, ζ = 10): see the
        // module doc, "What is built".
        world.integration_parameters.static_contact_softness = SpringCoefficients::new(
            STATIC_CONTACT_HZ as Real,
            STATIC_CONTACT_DAMPING_RATIO as Real,
        );
        let ground = world.insert_collider(
            ColliderBuilder::cuboid(500.0, 0.5, 500.0)
                .translation(Vector::new(0.0, -0.5, 0.0))
                .friction(FRICTION as Real)
                .collision_groups(InteractionGroups::new(
                    Group::GROUP_1,
                    Group::GROUP_2 | Group::GROUP_3,
                    InteractionTestMode::And,
                )),
            None,
        );
        let mut bodies = Vec::with_capacity(model.bodies.len());
        let mut colliders = Vec::new();
        let mut sole_colliders = [None; 2];
        for (b, (body, pose)) in model.bodies.iter().zip(&start).enumerate() {
            let h = world.insert_body(
                RigidBodyBuilder::dynamic()
                    .pose(Pose::from_parts(v3(pose.com_m), rot(pose.orientation)))
                    .linvel(v3(scene.initial_velocity_m_s))
                    .can_sleep(false)
                    .additional_mass_properties(MassProperties::new(
                        Vector::ZERO,
                        body.mass_kg as Real,
                        v3(body.inertia_kg_m2),
                    )),
            );
            for s in &body.shapes {
                let builder = match s.geometry {
                    Geometry::Box { half_extents_m: e } => {
                        ColliderBuilder::cuboid(e[0] as Real, e[1] as Real, e[2] as Real)
                    }
                    Geometry::Sphere { radius_m } => ColliderBuilder::ball(radius_m as Real),
                    Geometry::Capsule {
                        radius_m,
                        half_length_m,
                    } => ColliderBuilder::capsule_z(half_length_m as Real, radius_m as Real),
                };
                let c = world.insert_collider(
                    builder
                        .position(Pose::from_parts(v3(s.center_m), rot(s.orientation)))
                        .density(0.0)
                        .friction(FRICTION as Real)
                        .collision_groups(InteractionGroups::new(
                            Group::GROUP_2,
                            Group::GROUP_1,
                            InteractionTestMode::And,
                        )),
                    Some(h),
                );
                if let Geometry::Box { .. } = s.geometry
                    && let Some(k) = model.ground_contact_bodies[..2]
                        .iter()
                        .position(|&f| f == b)
                    && sole_colliders[k].is_none()
                {
                    sole_colliders[k] = Some(c);
                }
                colliders.push((c, b));
            }
            bodies.push(h);
        }
        for j in &model.joints {
            let (a1, a2) = (v3(j.anchor_in_parent_m), v3(j.anchor_in_child_m));
            let joint: GenericJoint = match j.kind {
                JointKind::Ball { limits_rad } => {
                    let mut b = SphericalJointBuilder::new()
                        .local_anchor1(a1)
                        .local_anchor2(a2)
                        .contacts_enabled(false);
                    for (axis, [lo, hi]) in ANG_AXES.into_iter().zip(limits_rad) {
                        b = b.limits(axis, [lo as Real, hi as Real]);
                    }
                    b.build().into()
                }
                JointKind::Hinge {
                    axis,
                    limits_rad: [lo, hi],
                } => RevoluteJointBuilder::new(v3(axis))
                    .local_anchor1(a1)
                    .local_anchor2(a2)
                    .limits([lo as Real, hi as Real])
                    .contacts_enabled(false)
                    .build()
                    .into(),
                JointKind::TwoAxis { axes, limits_rad } => {
                    let mut b = GenericJointBuilder::new(
                        JointAxesMask::LIN_AXES | ANG_MASKS[locked_axis(&axes)],
                    )
                    .local_anchor1(a1)
                    .local_anchor2(a2)
                    .contacts_enabled(false);
                    for (axis, [lo, hi]) in axes.iter().zip(limits_rad) {
                        b = b.limits(ANG_AXES[axis_index(axis)], [lo as Real, hi as Real]);
                    }
                    b.build()
                }
            };
            world.insert_impulse_joint(bodies[j.parent], bodies[j.child], joint);
        }
        // Fold the mass properties in now, so that they read right before the first step.
        for &h in &bodies {
            if let Some(rb) = world.bodies.get_mut(h) {
                rb.recompute_mass_properties_from_colliders(&world.colliders);
            }
        }
        let n = model.bodies.len();
        // Each push on its body's handle.
        let pushes = pushes
            .into_iter()
            .map(|(b, p)| {
                ActivePush::new(bodies[b], p.force_n, p.start_s, p.duration_s, scene.dt_s)
            })
            .collect();
        Ok(Self {
            model,
            world,
            bodies,
            colliders,
            sole_colliders,
            ground,
            pushes,
            balls: Props::new(
                &scene.balls,
                &[],
                scene.dt_s,
                PropMaterial {
                    friction: Some(FRICTION as Real),
                    friction_combine_rule: None,
                    groups: Some(PROP_GROUPS),
                },
            ),
            root_torque_limit_nm: scene.root_torque_limit_nm,
            clock: PlantClock::new(scene.dt_s, scene.total_steps()),
            forces: vec![[0.0; 3]; n],
            corner_forces: [[[0.0; 3]; 4]; 2],
            touching: vec![false; n],
            pending: VecDeque::new(),
            events_left_out: 0,
        })
    }

    /// The model the plant was built from.
    pub const fn model(&self) -> &HumanoidModel {
        &self.model
    }

    /// The largest root torque norm the plant accepts, N·m (the scene's).
    pub const fn root_torque_limit_nm(&self) -> f64 {
        self.root_torque_limit_nm
    }

    /// Why `torques_nm` would be refused, if it would: the first non-finite value; then, joint
    /// by joint, a torque whose norm exceeds the joint's effort (reported at its component of
    /// largest magnitude); then the root torque's norm beyond the limit (likewise) or its
    /// vertical part; then the first non-zero value beyond the root's.
    fn torque_fault(&self, torques_nm: &[f64]) -> Option<TorqueRefused> {
        let refused = |index: usize, reason: String| TorqueRefused {
            index,
            value_nm: torques_nm.get(index).copied().unwrap_or(0.0),
            reason,
        };
        if let Some(i) = torques_nm.iter().position(|t| !t.is_finite()) {
            return Some(refused(i, String::from("not a finite number")));
        }
        let triple = |first: usize| -> [f64; 3] {
            [0, 1, 2].map(|k| torques_nm.get(first + k).copied().unwrap_or(0.0))
        };
        let largest = |first: usize, v: [f64; 3]| {
            first
                + (0..3).fold(
                    0,
                    |best, k| if v[k].abs() > v[best].abs() { k } else { best },
                )
        };
        for (j, joint) in self.model.joints.iter().enumerate() {
            let v = triple(3 * j);
            let norm = DVec3::from_array(v).length();
            if norm > joint.effort_nm {
                return Some(refused(
                    largest(3 * j, v),
                    format!(
                        "joint `{}`'s torque has norm {norm} N·m, beyond its effort {} N·m",
                        joint.name, joint.effort_nm
                    ),
                ));
            }
        }
        let root = 3 * self.model.joints.len();
        let v = triple(root);
        let norm = DVec3::from_array(v).length();
        if norm > self.root_torque_limit_nm {
            return Some(refused(
                largest(root, v),
                format!(
                    "the root torque has norm {norm} N·m, beyond the scene's root_torque_limit_nm {}",
                    self.root_torque_limit_nm
                ),
            ));
        }
        if v[1].abs() > ROOT_TORQUE_VERTICAL_TOLERANCE * norm.max(1.0) {
            return Some(refused(
                root + 1,
                String::from("the root torque must have no vertical (y) part"),
            ));
        }
        if let Some(i) = torques_nm
            .iter()
            .enumerate()
            .skip(root + 3)
            .find(|(_, t)| **t != 0.0)
            .map(|(i, _)| i)
        {
            return Some(refused(
                i,
                format!(
                    "beyond the {} values of this humanoid ({} joints × 3, root 3)",
                    root + 3,
                    self.model.joints.len()
                ),
            ));
        }
        None
    }

    /// The host's check of a torque frame's values: `Err((index, value))` for the first refused
    /// (module doc, "Wire conventions": a non-finite value, a joint torque norm beyond its
    /// effort, a root torque beyond the scene's limit or with a vertical part, a non-zero value
    /// beyond the root's). A norm of exactly the limit passes; fewer values are fine.
    pub fn check_torque_slice(&self, torques_nm: &[f64]) -> Result<(), (usize, f64)> {
        match self.torque_fault(torques_nm) {
            Some(r) => Err((r.index, r.value_nm)),
            None => Ok(()),
        }
    }

    /// Steps the world by dt with `torques_nm` (the torque frame's values, module doc; missing
    /// ones 0) held for the whole step, and returns the new state's frame. Refuses the whole
    /// step, leaving the plant untouched, when the check refuses them.
    pub fn step(&mut self, torques_nm: &[f64]) -> Result<StateFrame, TorqueRefused> {
        if let Some(r) = self.torque_fault(torques_nm) {
            return Err(r);
        }
        Ok(self.advance(torques_nm))
    }

    /// One step with `torques_nm` (the torque frame's values, module doc; missing ones 0) held
    /// for the whole step, returning the new state's frame. Applies what it is given: the
    /// host checks a frame first ([`Self::check_torque_slice`], as
    /// [`crate::host::HostedPlant::step_driven_by`] does).
    pub fn advance(&mut self, torques_nm: &[f64]) -> StateFrame {
        let t0 = Instant::now();
        // The events the last frame carried are past.
        let sent = self.pending.len().min(MAX_EVENTS);
        self.pending.drain(..sent);
        reset_forces(&mut self.world.bodies, &self.bodies);
        let value = |i: usize| torques_nm.get(i).copied().unwrap_or(0.0) as Real;
        let triple = |first: usize| Vector::new(value(first), value(first + 1), value(first + 2));
        for (j, joint) in self.model.joints.iter().enumerate() {
            let tau = triple(3 * j);
            if tau == Vector::ZERO {
                continue;
            }
            for (body, t) in [(joint.child, tau), (joint.parent, -tau)] {
                if let Some(rb) = self.world.bodies.get_mut(self.bodies[body]) {
                    rb.add_torque(t, true);
                }
            }
        }
        let root_tau = triple(3 * self.model.joints.len());
        if root_tau != Vector::ZERO
            && let Some(rb) = self.world.bodies.get_mut(self.bodies[0])
        {
            rb.add_torque(root_tau, true);
        }
        apply_pushes(
            &self.pushes,
            &mut self.world.bodies,
            self.clock.step_index(),
        );
        self.balls
            .spawn_due(&mut self.world, self.clock.step_index());
        self.world.step();
        self.clock.advance();
        self.read_ground_forces();
        let (colliders, pending, left_out) = (
            &self.colliders,
            &mut self.pending,
            &mut self.events_left_out,
        );
        self.balls.read_touches(
            &self.world,
            |c| colliders.iter().any(|(h, _)| *h == c),
            |body, now| queue_contact(pending, left_out, body, now),
        );
        for b in 0..self.bodies.len() {
            let now = self.forces[b][1] > 0.0;
            if now == self.touching[b] {
                continue;
            }
            self.touching[b] = now;
            if self.model.ground_contact_bodies.contains(&b) {
                continue;
            }
            // At most 16 bodies: the id fits.
            queue_contact(
                &mut self.pending,
                &mut self.events_left_out,
                BodyId(b as u16),
                now,
            );
        }
        self.clock.finish_step(t0);
        self.state_frame()
    }

    /// The ground's force on each body during the step just taken.
    fn read_ground_forces(&mut self) {
        for f in &mut self.forces {
            *f = [0.0; 3];
        }
        self.corner_forces = [[[0.0; 3]; 4]; 2];
        for pair in self.world.narrow_phase.contact_pairs_with(self.ground) {
            let (other, body_is_first) = if pair.collider1 == self.ground {
                (pair.collider2, false)
            } else {
                (pair.collider1, true)
            };
            let Some(&(_, b)) = self.colliders.iter().find(|(c, _)| *c == other) else {
                continue;
            };
            let on_first = crate::environment::impulse_on_first(pair);
            let sign = if body_is_first { 1.0 } else { -1.0 };
            for (f, i) in self.forces[b].iter_mut().zip(on_first.to_array()) {
                *f += sign * f64::from(i) / self.clock.dt_s();
            }
            if let Some(k) = self.sole_colliders.iter().position(|c| *c == Some(other)) {
                let sole = &mut self.corner_forces[k];
                for m in pair.solver_manifolds() {
                    crate::environment::for_each_point_impulse(
                        m,
                        |point, local_first, local_second| {
                            // The point in the sole box's own frame: its corner by the signs of x
                            // (back, front) and z.
                            let local = if body_is_first {
                                local_first
                            } else {
                                local_second
                            };
                            let corner =
                                2 * usize::from(local.x > 0.0) + usize::from(local.z > 0.0);
                            for (f, i) in sole[corner].iter_mut().zip(point.to_array()) {
                                *f += sign * f64::from(i) / self.clock.dt_s();
                            }
                        },
                    );
                }
            }
        }
    }

    /// The state frame of the current state (module doc, "Wire conventions"): every body's
    /// motion, the ground's force on the feet and toes, the ground-contact events of the last
    /// step (none before the first), its cost. `applied_torque_sequence` is 0 here; the step
    /// functions set it.
    pub fn state_frame(&self) -> StateFrame {
        let mut frame = self.clock.new_frame();
        for &h in &self.bodies {
            let motion = self
                .world
                .bodies
                .get(h)
                .map_or_else(BodyMotion::default, body_motion);
            // At most MAX_BODIES bodies (checked when read).
            let _ = frame.push_body(motion);
        }
        for b in self.model.ground_contact_bodies {
            // Four, then eight corners: 12 ≤ MAX_CONTACTS.
            let _ = frame.push_contact(ContactForce {
                body: BodyId(b as u16),
                point: 0,
                force_n: self.forces[b],
            });
        }
        for (foot, corners) in self.corner_forces.iter().enumerate() {
            let b = self.model.ground_contact_bodies[foot];
            for (point, f) in (1u8..).zip(corners) {
                let _ = frame.push_contact(ContactForce {
                    body: BodyId(b as u16),
                    point,
                    force_n: *f,
                });
            }
        }
        for &e in self.pending.iter().take(MAX_EVENTS) {
            let _ = frame.push_event(e);
        }
        frame
    }

    /// The ground's force on every body during the last step (zero before the first), world
    /// frame, N, body order.
    pub fn ground_forces_n(&self) -> &[[f64; 3]] {
        &self.forces
    }

    /// The ground's force at each bottom corner of the left and right soles during the last
    /// step ([`SOLE_CORNERS`] order; zero before the first), world frame, N.
    pub const fn sole_corner_forces_n(&self) -> &[[[f64; 3]; 4]; 2] {
        &self.corner_forces
    }

    /// Ground-contact events dropped so far: more than 256 waiting for frames (a body
    /// chattering on the ground for a long time). 0 in any sane run.
    pub const fn events_left_out(&self) -> u64 {
        self.events_left_out
    }

    /// Each body's mass (kg) and moments of inertia about its x, y, z axes through its centre of
    /// mass (kg·m²: the diagonal of the inertia tensor Rapier holds, in body axes), body order.
    /// Rapier keeps 1/m and the principal moments, sorted, with their axes as a rotation, all in
    /// f32: these are the URDF's values to f32 rounding.
    pub fn mass_properties(&self) -> Vec<(f64, [f64; 3])> {
        self.bodies
            .iter()
            .map(|&h| {
                self.world.bodies.get(h).map_or((0.0, [0.0; 3]), |rb| {
                    let m = &rb.mass_properties().local_mprops;
                    let i = m.reconstruct_inertia_matrix();
                    (
                        f64::from(m.mass()),
                        [i.x_axis.x, i.y_axis.y, i.z_axis.z].map(f64::from),
                    )
                })
            })
            .collect()
    }

    /// The plant's clock: the current state's index and time, the step, the run's length, the
    /// last step's cost.
    pub const fn clock(&self) -> &PlantClock {
        &self.clock
    }

    /// Bodies Rapier has quarantined (non-finite state, rolled back and disabled) so far: 0 in
    /// a healthy run.
    pub fn quarantined_bodies(&self) -> usize {
        quarantined(&self.world, &self.bodies)
    }
}
