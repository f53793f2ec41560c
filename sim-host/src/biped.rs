//! The SIMBICON planar walker (Yin, Loken, van de Panne 2007) as a Rapier plant: a floating-base
//! 7-link biped in the x–y plane, stepped in process with six joint torques, reporting a plain
//! [`BipedState`] after every step (root pose and velocity, every body's pitch, every joint's
//! angle and rate, per-foot ground forces, the whole body's centre of mass, and whether anything
//! but a foot touches the ground).
//!
//! Hosted (`"kind": "biped"` in [`crate::scene::PlantScene`]) it speaks the wire frames like
//! the other plants: [`BipedPlant::state_frame`] carries the six joints, the seven bodies' world
//! motion and the ground's force on each foot (and on any other body that touches the ground).
//!
//! ```
//! use sim_host::biped::{BipedPlant, BipedScene};
//! let scene = BipedScene::new(1.0, [0.0, -9.81]);
//! let mut plant = BipedPlant::new(&scene).unwrap();
//! let s = plant.step(&[0.0; 6]).unwrap();
//! assert_eq!(s.step, 1);
//! assert!(s.feet[0].touching && s.feet[1].touching);
//! ```
//!
//! # Frame and sign conventions
//! The walking plane is x–y: y up, the biped walks towards +x, +z points out of the plane
//! towards the viewer. A body's **pitch** is its rotation about +z, counter-clockwise seen from
//! +z, wrapped to (−π, π]; 0 is the standing pose (torso and legs vertical, feet flat, toes
//! along +x). So a positive torso pitch leans the torso back (its top towards −x), a positive
//! thigh pitch swings the leg forward (its lower end towards +x).
//!
//! A **joint angle** is the child's pitch minus the parent's, wrapped to (−π, π]; its rate is
//! the child's angular velocity minus the parent's (rad/s). Positive hip: thigh forward of the
//! torso (flexion); negative knee: shin folded back (a human knee bends only this way); positive
//! ankle: toes up (dorsiflexion). These are SIMBICON's signs (its state table: swing hip +0.40,
//! swing knee −1.10, ankle +0.20).
//!
//! Joint order (the torque array, [`BipedState::joints`], [`JOINT_NAMES`]): left hip, left knee,
//! left ankle, right hip, right knee, right ankle (parent–child: torso–thigh, thigh–shin,
//! shin–foot). Body order ([`BipedState::bodies`], [`BODY_NAMES`]): torso, left thigh, left
//! shin, left foot, right thigh, right shin, right foot. Left and right lie in the same plane:
//! only their names tell them apart.
//!
//! # What is built
//! | body | mass | inertia about z | collision box (x × y) | centre of mass |
//! |---|---|---|---|---|
//! | torso | 70 kg | 1.475 kg·m² | 0.04 × 0.48 m | box centre, 0.24 m above the hip |
//! | thigh | 5 kg | 0.0885 | 0.04 × 0.45 | box centre, 0.225 m below the hip |
//! | shin | 4 kg | 0.0696 | 0.04 × 0.45 | box centre, 0.225 m below the knee |
//! | foot | 1 kg | 0.01 | 0.20 × 0.04 | box centre: 0.05 m ahead of and 0.02 m below the ankle |
//!
//! Total 90 kg. Masses, lengths and inertias are SIMBICON's (Yin, Loken, van de Panne 2007;
//! JSimbicon `Bip7.java`, nslo `biped7.h`); the boxes' 0.04 m thickness is nslo's. The hip is at the
//! torso's bottom end, the knee and the ankle at the ends of thigh and shin. The ankle sits on
//! the foot's top face, 0.05 m from its heel (0.15 m from its toe): a choice of this plant
//! (nslo puts it at the heel), so that a body balanced over its ankles stands inside its feet.
//! Standing, the feet's soles are at y = 0, the ankles at 0.04 m, the hips at 0.94 m, the
//! torso's centre of mass at 1.18 m.
//!
//! - Every body is dynamic (floating base: the torso is free), its pose the pose of its centre
//!   of mass. It is held in the plane by one more impulse joint to a fixed anchor body that
//!   locks its z translation and its x and y rotations (`GenericJointBuilder` with
//!   `JointAxesMask::LIN_Z | ANG_X | ANG_Y`: ODE's Plane2D joint, which the nslo port uses).
//!   **Not** `LockedAxes`: with `TRANSLATION_LOCKED_Z | ROTATION_LOCKED_X | ROTATION_LOCKED_Y`
//!   on every body, this biped standing on the ground with zero torques blew up within 0.1 s
//!   in Rapier 0.36.1 (bodies thrown tens of metres, at dt 5, 1 and 0.5 ms, with 4 to 50 solver
//!   iterations, with joint warm-starting, and with multibody joints too), while the same scene
//!   with plane joints, or with no plane constraint at all, falls as it should. A 1 kg foot
//!   under an 88 kg locked body on one revolute joint only jitters, so the fault needs the
//!   whole chain; not isolated further here. A planar root written instead as a fixed-base
//!   chain of two prismatic joints and a hinge (the robot plant's multibody, from a URDF of
//!   this table: `tests/robot.rs`) does not blow up: the walker falls under zero torques as
//!   here, at about 2.8 times this plant's step cost.
//! - Mass properties: the colliders have density 0 (no mass); each body's mass and inertia are
//!   given whole with `RigidBodyBuilder::additional_mass_properties(MassProperties::new(0,
//!   m, [I, I, I]))`: principal axes along the body's axes, the given planar inertia I about z.
//!   The x and y entries only resist the plane joints (which hold those rotations at 0), and
//!   with ω along z the gyroscopic term ω × Iω is 0. Rapier stores
//!   1/m and 1/I in f32: the masses and inertias it reports ([`BipedPlant::mass_properties`])
//!   are the given values to f32 rounding.
//! - Joints: six revolute **impulse** joints about +z (maximal coordinates: a floating base with
//!   ground contacts, as characters need), anchored at the hip, knee and ankle points above; no
//!   limits, no motors (SIMBICON enforces its joint limits in its controller), no damping (Rapier's bodies default to none).
//! - Self-collision is off: the biped's colliders are in [`Group::GROUP_2`] and only collide
//!   with [`Group::GROUP_1`], the ground's group. The ground is one static box whose top face is
//!   y = 0 (1000 m long, 1 m deep).
//! - Contacts: Coulomb friction, coefficient [`GROUND_FRICTION`] (0.8, SIMBICON's: nslo
//!   `simulator.cpp`) on the ground and on every body (Rapier averages the two: 0.8), no
//!   restitution; `FrictionModel::Coulomb` (one friction cone per contact point). Rapier's
//!   solver substeps each step [`SOLVER_ITERATIONS`] times (its default).
//!
//! # Torques
//! Joint i's torque τ_i (N·m) is applied as +τ_i about world +z on its child and −τ_i on its
//! parent, held for the whole step; every body's torques and forces are reset before each step
//! (Rapier's user forces persist). A torque with |τ| > [`TORQUE_LIMIT_NM`] (1000 N·m,
//! SIMBICON's) or NaN refuses the whole step ([`TorqueLimitError`], the plant untouched), as the
//! host refuses an over-limit torque frame; exactly ±1000 is applied.
//!
//! # Pushes
//! A push is a constant force in the plane on the torso's centre of mass, for the steps k with
//! round(start_s/dt) ≤ k < round(start_s/dt) + round(duration_s/dt).
//!
//! # Ground contact readout
//! After each step, for each body: over every contact pair between the ground and the body's
//! collider, over the solver's manifolds and contacts, the normal impulse and the friction
//! impulses in the world frame, summed over the step's substeps by Rapier, divided by dt: the
//! step's mean force of the ground on the body, N (as [`crate::environment`] reads walls). A body
//! **touches** the ground when that force's normal (y) part is greater than 0: a speculative
//! contact the solver did not push is not a touch. Per foot the state carries the force's
//! normal (y) and tangential (x) parts.
//!
//! # Measured (dt 5 ms; `tests/biped.rs`, `benches/plant_step.rs`)
//! - Step cost: median 27.4 µs standing on both feet (criterion `plant_step/biped_standing`;
//!   the 3-link arm 12.8 µs in the same run).
//! - Standing on SIMBICON's PDs: the torso's centre stays above 1.17 m for 2 s; the feet carry
//!   m·g within 0.74 % (0.5–1 s). The PD ankles (2 × 300 N·m/rad) are weaker than gravity's
//!   toppling stiffness about them (≈ 870 N·m/rad), so the body leans slowly and falls at about
//!   2.4 s even with the PDs on; with zero torques from 2 s a non-foot body touches at 2.515 s.
//! - A push of 90 N for 0.2 s in the air without gravity: COM speed 0.2000 m/s (impulse/mass).
//!
//! Never does: accept a scene it cannot simulate (each field refused by its path), apply a
//! torque beyond the limit, read the wall clock for physics (only to time a step), or panic on
//! a validated scene.

use std::fmt;
use std::time::Instant;

use control_core::frames::{BodyId, BodyMotion, ContactForce, JointState, StateFrame};
use rapier3d::prelude::*;
use serde::{Deserialize, Serialize};

use crate::clock::{PlantClock, steps_for};
use crate::environment::{ActivePush, apply_pushes, body_motion, quarantined, reset_forces};
use crate::scene::{Checker, DEFAULT_DT_S, MAX_PUSH_FORCE_N, SceneError};

/// Number of joints: hips, knees, ankles, left then right.
pub const JOINTS: usize = 6;
/// Number of bodies: torso, then left and right thigh, shin, foot.
pub const BODIES: usize = 7;
/// Joint names, in joint order.
pub const JOINT_NAMES: [&str; JOINTS] = [
    "left_hip",
    "left_knee",
    "left_ankle",
    "right_hip",
    "right_knee",
    "right_ankle",
];
/// Body names, in body order.
pub const BODY_NAMES: [&str; BODIES] = [
    "torso",
    "left_thigh",
    "left_shin",
    "left_foot",
    "right_thigh",
    "right_shin",
    "right_foot",
];
/// Index of the torso in body order.
pub const TORSO: usize = 0;
/// Index of the left foot in body order.
pub const LEFT_FOOT: usize = 3;
/// Index of the right foot in body order.
pub const RIGHT_FOOT: usize = 6;
/// Each joint's (parent, child) in body order.
pub const JOINT_BODIES: [(usize, usize); JOINTS] = [(0, 1), (1, 2), (2, 3), (0, 4), (4, 5), (5, 6)];

/// Masses, kg, body order.
pub const MASSES_KG: [f64; BODIES] = [70.0, 5.0, 4.0, 1.0, 5.0, 4.0, 1.0];
/// Inertias about z through each body's centre of mass, kg·m², body order.
pub const INERTIAS_KG_M2: [f64; BODIES] = [1.475, 0.0885, 0.0696, 0.01, 0.0885, 0.0696, 0.01];
/// Torso length, m (hip to top; centre of mass in the middle).
pub const TORSO_LENGTH_M: f64 = 0.48;
/// Thigh length, hip to knee, m.
pub const THIGH_LENGTH_M: f64 = 0.45;
/// Shin length, knee to ankle, m.
pub const SHIN_LENGTH_M: f64 = 0.45;
/// Foot length, heel to toe, m.
pub const FOOT_LENGTH_M: f64 = 0.2;
/// Thickness of every body's collision box in the plane, m.
pub const LINK_THICKNESS_M: f64 = 0.04;
/// Distance from the heel to the ankle, along the foot, m.
pub const ANKLE_FROM_HEEL_M: f64 = 0.05;
/// Largest joint torque applied, N·m (SIMBICON's limit).
pub const TORQUE_LIMIT_NM: f64 = 1000.0;
/// Coulomb friction coefficient of the ground and of the biped's bodies.
pub const GROUND_FRICTION: f64 = 0.8;
/// Rapier's solver substeps per step (`num_solver_iterations`).
pub const SOLVER_ITERATIONS: usize = 4;
/// Most pushes a scene has.
pub const MAX_PUSHES: usize = 64;

/// Depth (z) of every collision box, m: irrelevant to the planar motion.
pub const DEPTH_M: f64 = 0.1;

/// The value of a biped scene's required `kind` field: `"biped"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BipedKind {
    /// `"biped"`.
    Biped,
}

/// A biped scene: step, duration, gravity, the start state and the pushes. The JSON form:
///
/// ```json
/// {
///   "kind": "biped",
///   "dt_s": 0.005,
///   "end_time_s": 20.0,
///   "gravity_m_s2": [0.0, -9.81],
///   "initial_torso_height_m": null,
///   "initial_torso_pitch_rad": 0.0,
///   "initial_joint_angles_rad": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
///   "initial_forward_velocity_m_s": 0.0,
///   "pushes": [ { "force_n": [350.0, 0.0], "start_s": 5.0, "duration_s": 0.2 } ]
/// }
/// ```
///
/// `kind`, `end_time_s` and `gravity_m_s2` are required; the rest default to the values shown
/// (no pushes). Unknown fields are refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BipedScene {
    /// Always [`BipedKind::Biped`] (`"biped"`).
    pub kind: BipedKind,
    /// Physics step, s (default 0.005).
    #[serde(default = "default_dt")]
    pub dt_s: f64,
    /// The run ends after the step that reaches this time, s ([`PlantClock::is_finished`]).
    pub end_time_s: f64,
    /// Gravity in the plane, x and y, m/s² (`[0, -9.81]`: level ground).
    pub gravity_m_s2: [f64; 2],
    /// Height of the torso's centre of mass at t = 0, m; `null` or absent: the height that puts
    /// the lowest point of the feet on the ground (y = 0). A pose that puts any body below the
    /// ground by more than 1 mm is refused.
    #[serde(default)]
    pub initial_torso_height_m: Option<f64>,
    /// Torso pitch at t = 0, rad (positive: leaning back), within ±π/2.
    #[serde(default)]
    pub initial_torso_pitch_rad: f64,
    /// Joint angles at t = 0, rad, joint order, each within ±π.
    #[serde(default)]
    pub initial_joint_angles_rad: [f64; JOINTS],
    /// Velocity along +x of every body at t = 0, m/s (the bodies do not turn).
    #[serde(default)]
    pub initial_forward_velocity_m_s: f64,
    /// Forces on the torso (at most [`MAX_PUSHES`]).
    #[serde(default)]
    pub pushes: Vec<TorsoPush>,
}

fn default_dt() -> f64 {
    DEFAULT_DT_S
}

/// A constant force in the plane on the torso's centre of mass, for a while.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TorsoPush {
    /// The force, x and y, N (each within ±1e5).
    #[serde(deserialize_with = "crate::input::exact")]
    pub force_n: [f64; 2],
    /// When it starts, s (rounded to the nearest step).
    pub start_s: f64,
    /// How long it lasts, s (rounded to a whole number of steps; 0: not at all).
    pub duration_s: f64,
}

impl BipedScene {
    /// A scene of `end_time_s` under gravity `gravity_m_s2` (x, y), standing on the ground at
    /// rest in the standing pose (every angle 0), the default step, no pushes.
    pub fn new(end_time_s: f64, gravity_m_s2: [f64; 2]) -> Self {
        Self {
            kind: BipedKind::Biped,
            dt_s: DEFAULT_DT_S,
            end_time_s,
            gravity_m_s2,
            initial_torso_height_m: None,
            initial_torso_pitch_rad: 0.0,
            initial_joint_angles_rad: [0.0; JOINTS],
            initial_forward_velocity_m_s: 0.0,
            pushes: Vec::new(),
        }
    }

    /// Number of physics steps of the run: `end_time_s / dt_s`, rounded.
    pub fn total_steps(&self) -> u64 {
        steps_for(self.end_time_s, self.dt_s)
    }

    /// Every check of the scene's own values: every number finite and in range. On failure
    /// returns the first failing field as a path in the serialized scene
    /// (`initial_joint_angles_rad[4]`, `pushes[0].force_n[1]`) and the reason. Whether the
    /// start pose is above the ground is checked by [`BipedPlant::new`], under
    /// `initial_torso_height_m`.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let mut c = Checker::default();
        c.timing(self.dt_s, self.end_time_s);
        for (k, g) in self.gravity_m_s2.into_iter().enumerate() {
            c.range(&format!("gravity_m_s2[{k}]"), g, -1000.0, 1000.0);
        }
        if let Some(h) = self.initial_torso_height_m {
            c.positive_up_to("initial_torso_height_m", h, 100.0);
        }
        let half_pi = std::f64::consts::FRAC_PI_2;
        c.range(
            "initial_torso_pitch_rad",
            self.initial_torso_pitch_rad,
            -half_pi,
            half_pi,
        );
        let pi = std::f64::consts::PI;
        for (i, &q) in self.initial_joint_angles_rad.iter().enumerate() {
            c.range(&format!("initial_joint_angles_rad[{i}]"), q, -pi, pi);
        }
        c.range(
            "initial_forward_velocity_m_s",
            self.initial_forward_velocity_m_s,
            -100.0,
            100.0,
        );
        if self.pushes.len() > MAX_PUSHES {
            c.fail(
                "pushes",
                format!(
                    "{} pushes: a biped scene has at most {MAX_PUSHES}",
                    self.pushes.len()
                ),
            );
        }
        for (i, p) in self.pushes.iter().enumerate() {
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
        c.result()
    }
}

impl crate::scene::SceneFile for BipedScene {
    fn check(&self) -> Result<(), (String, String)> {
        self.validate()
    }
}

/// A step refused: a torque beyond [`TORQUE_LIMIT_NM`] (or NaN). The plant did not step.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct TorqueLimitError {
    /// The first such joint, joint order.
    pub joint: usize,
    /// Its torque, N·m.
    pub torque_nm: f64,
}

impl fmt::Display for TorqueLimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "torque {} N·m on joint {} ({}) is beyond the limit of ±{TORQUE_LIMIT_NM} N·m",
            self.torque_nm,
            self.joint,
            JOINT_NAMES.get(self.joint).copied().unwrap_or("?")
        )
    }
}

impl std::error::Error for TorqueLimitError {}

/// One body's state, world frame.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BodyState {
    /// Centre of mass, x and y, m.
    pub com_m: [f64; 2],
    /// Velocity of the centre of mass, x and y, m/s.
    pub com_velocity_m_s: [f64; 2],
    /// Pitch (rotation about +z from the standing pose), rad, in (−π, π].
    pub pitch_rad: f64,
    /// Angular velocity about +z, rad/s.
    pub angular_velocity_rad_s: f64,
    /// Whether the ground pushed this body during the last step (normal force > 0).
    pub touching_ground: bool,
}

/// One joint's state.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BipedJointState {
    /// Child pitch − parent pitch, rad, in (−π, π].
    pub angle_rad: f64,
    /// Child angular velocity − parent angular velocity, rad/s.
    pub rate_rad_s: f64,
    /// Where the joint is, x and y, m: its anchor on the child body (the parent's anchor
    /// coincides up to the impulse joint's drift).
    pub position_m: [f64; 2],
}

/// The ground's force on one foot during the last step (mean over the step).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FootContact {
    /// Normal part (world y, up), N; ≥ 0 up to the solver's rounding.
    pub normal_n: f64,
    /// Tangential part (world x, forward), N.
    pub tangential_n: f64,
    /// Whether the ground pushed the foot (`normal_n > 0`).
    pub touching: bool,
}

/// The state after a step (or at the start): everything a walking controller reads.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BipedState {
    /// Index of this state (0 at the start).
    pub step: u64,
    /// Simulated time, s (step × dt).
    pub time_s: f64,
    /// The torso (the root), as [`Self::bodies`]`[TORSO]`.
    pub root: BodyState,
    /// Every body, body order ([`BODY_NAMES`]).
    pub bodies: [BodyState; BODIES],
    /// Every joint, joint order ([`JOINT_NAMES`]).
    pub joints: [BipedJointState; JOINTS],
    /// The ground's force on the left foot (index 0) and on the right (1).
    pub feet: [FootContact; 2],
    /// Centre of mass of the whole biped, x and y, m.
    pub com_m: [f64; 2],
    /// Its velocity, x and y, m/s.
    pub com_velocity_m_s: [f64; 2],
    /// Whether a body other than a foot touched the ground during the last step (SIMBICON's
    /// "fell").
    pub non_foot_ground_contact: bool,
}

/// The biped of a [`BipedScene`], ready to step.
pub struct BipedPlant {
    world: PhysicsWorld,
    /// Body order.
    bodies: [RigidBodyHandle; BODIES],
    /// Body order: each body's collider.
    colliders: [ColliderHandle; BODIES],
    ground: ColliderHandle,
    pushes: Vec<ActivePush>,
    clock: PlantClock,
    state: BipedState,
    /// The ground's force on each body during the last step, x and y, N, body order.
    forces: [[f64; 2]; BODIES],
    contacts_left_out: u64,
}

impl fmt::Debug for BipedPlant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BipedPlant")
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

/// Half extents of body `body`'s collision box (body order, [`BODY_NAMES`]), x and y in its own
/// frame, m; its depth is [`DEPTH_M`].
pub fn half_extents(body: usize) -> [f64; 2] {
    let t = LINK_THICKNESS_M / 2.0;
    match body {
        TORSO => [t, TORSO_LENGTH_M / 2.0],
        1 | 4 => [t, THIGH_LENGTH_M / 2.0],
        2 | 5 => [t, SHIN_LENGTH_M / 2.0],
        _ => [FOOT_LENGTH_M / 2.0, t],
    }
}

/// Joint j's anchor on its parent and on its child, in their frames (relative to their centres
/// of mass), m.
fn anchors(joint: usize) -> ([f64; 2], [f64; 2]) {
    match joint % 3 {
        // Hip: bottom of the torso, top of the thigh.
        0 => ([0.0, -TORSO_LENGTH_M / 2.0], [0.0, THIGH_LENGTH_M / 2.0]),
        // Knee: bottom of the thigh, top of the shin.
        1 => ([0.0, -THIGH_LENGTH_M / 2.0], [0.0, SHIN_LENGTH_M / 2.0]),
        // Ankle: bottom of the shin; on the foot's top face, ANKLE_FROM_HEEL_M from the heel.
        _ => (
            [0.0, -SHIN_LENGTH_M / 2.0],
            [
                ANKLE_FROM_HEEL_M - FOOT_LENGTH_M / 2.0,
                LINK_THICKNESS_M / 2.0,
            ],
        ),
    }
}

/// Where the ankle joint sits on the foot, relative to the foot's centre of mass in the foot's
/// frame, x and y, m (0.05 m behind and 0.02 m above it).
pub fn ankle_on_foot_m() -> [f64; 2] {
    anchors(2).1
}

fn rot2(angle: f64, v: [f64; 2]) -> [f64; 2] {
    let (s, c) = angle.sin_cos();
    [c * v[0] - s * v[1], s * v[0] + c * v[1]]
}

fn add2(a: [f64; 2], b: [f64; 2]) -> [f64; 2] {
    [a[0] + b[0], a[1] + b[1]]
}

fn sub2(a: [f64; 2], b: [f64; 2]) -> [f64; 2] {
    [a[0] - b[0], a[1] - b[1]]
}

/// `a` wrapped to (−π, π].
fn wrap(a: f64) -> f64 {
    let two_pi = std::f64::consts::TAU;
    let w = a - two_pi * (a / two_pi).round();
    if w <= -std::f64::consts::PI {
        w + two_pi
    } else {
        w
    }
}

/// The pitch of a rotation about z, rad, in (−π, π].
fn pitch_of(r: &Rotation) -> f64 {
    wrap(2.0 * f64::from(r.z).atan2(f64::from(r.w)))
}

/// Every body's centre of mass and pitch for a torso at `torso_com` with pitch `torso_pitch`
/// and joint angles `q`: forward kinematics from the torso down each leg.
fn pose(torso_com: [f64; 2], torso_pitch: f64, q: &[f64; JOINTS]) -> [([f64; 2], f64); BODIES] {
    let mut out = [([0.0; 2], 0.0); BODIES];
    out[TORSO] = (torso_com, torso_pitch);
    for (j, &(parent, child)) in JOINT_BODIES.iter().enumerate() {
        let (p_com, p_pitch) = out[parent];
        let (a_parent, a_child) = anchors(j);
        let at = add2(p_com, rot2(p_pitch, a_parent));
        let pitch = p_pitch + q[j];
        out[child] = (sub2(at, rot2(pitch, a_child)), pitch);
    }
    out
}

/// The lowest point of any body's box in `pose`, m.
fn lowest_point(pose: &[([f64; 2], f64); BODIES]) -> f64 {
    pose.iter()
        .enumerate()
        .map(|(b, &(com, pitch))| lowest_point_of(b, com, pitch))
        .fold(f64::INFINITY, f64::min)
}

fn v2(a: [f64; 2]) -> Vector {
    Vector::new(a[0] as Real, a[1] as Real, 0.0)
}

impl BipedPlant {
    /// Builds the biped of `scene`: checks it ([`BipedScene::validate`]), poses the bodies
    /// (forward kinematics from the torso), refuses a pose that puts a body more than 1 mm into
    /// the ground (field `initial_torso_height_m`), and builds the Rapier world. Errors name the
    /// file `(in memory)` and the field.
    pub fn new(scene: &BipedScene) -> Result<Self, SceneError> {
        let err = |field: &str, reason: String| SceneError {
            file: "(in memory)".into(),
            field: field.to_owned(),
            reason,
        };
        scene
            .validate()
            .map_err(|(field, reason)| err(&field, reason))?;
        let q = scene.initial_joint_angles_rad;
        let pitch0 = scene.initial_torso_pitch_rad;
        let at_zero = pose([0.0, 0.0], pitch0, &q);
        let height = scene
            .initial_torso_height_m
            .unwrap_or(-lowest_point(&at_zero));
        let start = pose([0.0, height], pitch0, &q);
        let low = lowest_point(&start);
        if low < -1e-3 {
            return Err(err(
                "initial_torso_height_m",
                format!(
                    "the start pose puts a body {:.4} m below the ground (y = 0): raise the torso or leave the height out",
                    -low
                ),
            ));
        }

        let mut world = PhysicsWorld::new();
        world.gravity = v2(scene.gravity_m_s2);
        world.integration_parameters.dt = scene.dt_s as Real;
        world.integration_parameters.num_solver_iterations = SOLVER_ITERATIONS;
        world.integration_parameters.friction_model = FrictionModel::Coulomb;
        let ground = world.insert_collider(
            ColliderBuilder::cuboid(500.0, 0.5, 0.5)
                .translation(Vector::new(0.0, -0.5, 0.0))
                .friction(GROUND_FRICTION as Real)
                .collision_groups(InteractionGroups::new(
                    Group::GROUP_1,
                    Group::GROUP_2,
                    InteractionTestMode::And,
                )),
            None,
        );
        let v0 = Vector::new(scene.initial_forward_velocity_m_s as Real, 0.0, 0.0);
        let mut bodies = [RigidBodyHandle::invalid(); BODIES];
        let mut colliders = [ColliderHandle::invalid(); BODIES];
        for b in 0..BODIES {
            let (com, pitch) = start[b];
            let inertia = INERTIAS_KG_M2[b] as Real;
            let body = RigidBodyBuilder::dynamic()
                .translation(v2(com))
                .rotation(Vector::new(0.0, 0.0, pitch as Real))
                .linvel(v0)
                .can_sleep(false)
                .additional_mass_properties(MassProperties::new(
                    Vector::ZERO,
                    MASSES_KG[b] as Real,
                    Vector::splat(inertia),
                ));
            let [hx, hy] = half_extents(b);
            let collider = ColliderBuilder::cuboid(hx as Real, hy as Real, (DEPTH_M / 2.0) as Real)
                .density(0.0)
                .friction(GROUND_FRICTION as Real)
                .collision_groups(InteractionGroups::new(
                    Group::GROUP_2,
                    Group::GROUP_1,
                    InteractionTestMode::And,
                ));
            let (h, c) = world.insert(body, collider);
            bodies[b] = h;
            colliders[b] = c;
        }
        for (j, &(parent, child)) in JOINT_BODIES.iter().enumerate() {
            let (a1, a2) = anchors(j);
            let joint = RevoluteJointBuilder::new(Vector::Z)
                .local_anchor1(v2(a1))
                .local_anchor2(v2(a2))
                .contacts_enabled(false);
            world.insert_impulse_joint(bodies[parent], bodies[child], joint);
        }
        // The plane: every body held by a joint to a fixed anchor that locks its z translation and
        // its x and y rotations (ODE's Plane2D, as the nslo port does).
        let anchor = world.insert_body(RigidBodyBuilder::fixed());
        for &h in &bodies {
            world.insert_impulse_joint(
                anchor,
                h,
                GenericJointBuilder::new(
                    JointAxesMask::LIN_Z | JointAxesMask::ANG_X | JointAxesMask::ANG_Y,
                )
                .contacts_enabled(false),
            );
        }
        // Fold the mass properties in now, so that they read right before the first step.
        for &h in &bodies {
            if let Some(rb) = world.bodies.get_mut(h) {
                rb.recompute_mass_properties_from_colliders(&world.colliders);
            }
        }
        let pushes = scene
            .pushes
            .iter()
            .map(|p| {
                // In the plane: the force's z is 0.
                let [x, y] = p.force_n;
                ActivePush::new(
                    bodies[TORSO],
                    [x, y, 0.0],
                    p.start_s,
                    p.duration_s,
                    scene.dt_s,
                )
            })
            .collect();
        let mut plant = Self {
            world,
            bodies,
            colliders,
            ground,
            pushes,
            clock: PlantClock::new(scene.dt_s, scene.total_steps()),
            state: BipedState::default(),
            forces: [[0.0; 2]; BODIES],
            contacts_left_out: 0,
        };
        plant.read_state(&[[0.0; 2]; BODIES]);
        // Before the first step nothing has been solved: contacts are those of the start pose,
        // unknown to the solver. Report the feet that start on the ground as touching.
        for (k, foot) in [LEFT_FOOT, RIGHT_FOOT].into_iter().enumerate() {
            let (com, pitch) = start[foot];
            let touching = lowest_point_of(foot, com, pitch) <= 1e-3;
            plant.state.feet[k].touching = touching;
            plant.state.bodies[foot].touching_ground = touching;
        }
        Ok(plant)
    }

    /// The state now: after the last step, or the start state before the first (whose contact
    /// forces are 0; a foot whose sole starts within 1 mm of the ground is reported touching).
    pub const fn state(&self) -> &BipedState {
        &self.state
    }

    /// Checks torques against [`TORQUE_LIMIT_NM`]: the first |τ_i| > 1000 N·m, or NaN.
    pub fn check_torques(torques_nm: &[f64; JOINTS]) -> Result<(), TorqueLimitError> {
        Self::check_torque_slice(torques_nm)
            .map_err(|(joint, torque_nm)| TorqueLimitError { joint, torque_nm })
    }

    /// Steps the world by dt with joint torques `torques_nm` (N·m, joint order: left hip, left
    /// knee, left ankle, right hip, right knee, right ankle; +τ on the child about world +z, −τ
    /// on the parent) held for the whole step, and returns the new state. Refuses the whole
    /// step, leaving the plant untouched, when a torque is beyond ±[`TORQUE_LIMIT_NM`] or NaN.
    /// Stepping past the scene's end is allowed ([`PlantClock::is_finished`] says when it is reached).
    pub fn step(&mut self, torques_nm: &[f64; JOINTS]) -> Result<BipedState, TorqueLimitError> {
        Self::check_torques(torques_nm)?;
        let t0 = Instant::now();
        reset_forces(&mut self.world.bodies, &self.bodies);
        for (j, &(parent, child)) in JOINT_BODIES.iter().enumerate() {
            let tau = Vector::Z * (torques_nm[j] as Real);
            for (body, t) in [(child, tau), (parent, -tau)] {
                if let Some(rb) = self.world.bodies.get_mut(self.bodies[body]) {
                    rb.add_torque(t, true);
                }
            }
        }
        apply_pushes(
            &self.pushes,
            &mut self.world.bodies,
            self.clock.step_index(),
        );
        self.world.step();
        self.clock.advance();
        self.forces = self.ground_forces();
        let forces = self.forces;
        self.read_state(&forces);
        self.clock.finish_step(t0);
        Ok(self.state)
    }

    /// The ground's force on each body during the step just taken, x and y, N, body order.
    fn ground_forces(&self) -> [[f64; 2]; BODIES] {
        let mut out = [[0.0; 2]; BODIES];
        for pair in self.world.narrow_phase.contact_pairs_with(self.ground) {
            let (other, body_is_first) = if pair.collider1 == self.ground {
                (pair.collider2, false)
            } else {
                (pair.collider1, true)
            };
            let Some(b) = self.colliders.iter().position(|&c| c == other) else {
                continue;
            };
            let on_first = crate::environment::impulse_on_first(pair);
            let sign = if body_is_first { 1.0 } else { -1.0 };
            out[b][0] += sign * f64::from(on_first.x) / self.clock.dt_s();
            out[b][1] += sign * f64::from(on_first.y) / self.clock.dt_s();
        }
        out
    }

    /// Reads every body from Rapier into [`Self::state`], with the ground forces `forces`.
    fn read_state(&mut self, forces: &[[f64; 2]; BODIES]) {
        let mut s = BipedState {
            step: self.clock.step_index(),
            time_s: self.clock.time_s(),
            ..BipedState::default()
        };
        let mut total_m = 0.0;
        let mut mx = [0.0; 2];
        let mut mv = [0.0; 2];
        for b in 0..BODIES {
            let Some(rb) = self.world.bodies.get(self.bodies[b]) else {
                continue;
            };
            let com = rb.center_of_mass();
            let v = rb.linvel();
            let body = BodyState {
                com_m: [f64::from(com.x), f64::from(com.y)],
                com_velocity_m_s: [f64::from(v.x), f64::from(v.y)],
                pitch_rad: pitch_of(rb.rotation()),
                angular_velocity_rad_s: f64::from(rb.angvel().z),
                touching_ground: forces[b][1] > 0.0,
            };
            let m = MASSES_KG[b];
            total_m += m;
            for k in 0..2 {
                mx[k] += m * body.com_m[k];
                mv[k] += m * body.com_velocity_m_s[k];
            }
            s.bodies[b] = body;
        }
        s.com_m = mx.map(|x| x / total_m);
        s.com_velocity_m_s = mv.map(|x| x / total_m);
        s.root = s.bodies[TORSO];
        for (j, &(parent, child)) in JOINT_BODIES.iter().enumerate() {
            let (p, c) = (s.bodies[parent], s.bodies[child]);
            let (_, a_child) = anchors(j);
            s.joints[j] = BipedJointState {
                angle_rad: wrap(c.pitch_rad - p.pitch_rad),
                rate_rad_s: c.angular_velocity_rad_s - p.angular_velocity_rad_s,
                position_m: add2(c.com_m, rot2(c.pitch_rad, a_child)),
            };
        }
        for (k, foot) in [LEFT_FOOT, RIGHT_FOOT].into_iter().enumerate() {
            s.feet[k] = FootContact {
                normal_n: forces[foot][1],
                tangential_n: forces[foot][0],
                touching: s.bodies[foot].touching_ground,
            };
        }
        s.non_foot_ground_contact = s
            .bodies
            .iter()
            .enumerate()
            .any(|(b, body)| b != LEFT_FOOT && b != RIGHT_FOOT && body.touching_ground);
        self.state = s;
    }

    /// The state frame of the current state: sequence number = step index; the six joints
    /// (angle, rate), joint order; the seven bodies' world motion, body order (Rapier's centre
    /// of mass, its rotation quaternion as Rapier holds it in f32, normalised to about 1e-7,
    /// velocity and angular velocity); the contact forces: the ground's force on the left foot
    /// and on the right foot (always, in that order: zero in the air), then on each other body
    /// the ground pushed during the step, body order, while the frame has room (two more: a
    /// third is left out, counted in [`Self::contacts_left_out`]); the last step's cost.
    pub fn state_frame(&mut self) -> StateFrame {
        let mut frame = self.clock.new_frame();
        for j in &self.state.joints {
            // Six joints: within MAX_JOINTS.
            let _ = frame.push_joint(JointState {
                position_rad: j.angle_rad,
                velocity_rad_s: j.rate_rad_s,
            });
        }
        for &h in &self.bodies {
            let motion = self
                .world
                .bodies
                .get(h)
                .map_or_else(BodyMotion::default, body_motion);
            // Seven bodies: within MAX_BODIES.
            let _ = frame.push_body(motion);
        }
        let others =
            (0..BODIES).filter(|&b| b != LEFT_FOOT && b != RIGHT_FOOT && self.forces[b][1] > 0.0);
        for b in [LEFT_FOOT, RIGHT_FOOT].into_iter().chain(others) {
            let [fx, fy] = self.forces[b];
            let contact = ContactForce {
                point: 0,
                body: BodyId(b as u16),
                force_n: [fx, fy, 0.0],
            };
            if frame.push_contact(contact).is_err() {
                self.contacts_left_out += 1;
            }
        }
        frame
    }

    /// Body forces left out of the state frames so far (a step in which more than two bodies
    /// other than the feet touched the ground: the walker had long fallen).
    pub const fn contacts_left_out(&self) -> u64 {
        self.contacts_left_out
    }

    /// One step with `torques_nm` (joint order; missing joints get 0), returning the new state's
    /// frame. A torque beyond the limit is not applied: the host refuses such a frame before
    /// ([`Self::check_torque_slice`]); should one reach here, the step runs with zero torques.
    pub fn advance(&mut self, torques_nm: &[f64]) -> StateFrame {
        let mut torques = [0.0; JOINTS];
        for (t, &x) in torques.iter_mut().zip(torques_nm) {
            *t = x;
        }
        if self.step(&torques).is_err() {
            let _ = self.step(&[0.0; JOINTS]);
        }
        self.state_frame()
    }

    /// The host's check of a torque frame's torques: `Err((index, torque))` for the first one
    /// beyond ±[`TORQUE_LIMIT_NM`] or NaN, or a non-zero torque for a joint the biped does not
    /// have (index ≥ 6).
    pub fn check_torque_slice(torques_nm: &[f64]) -> Result<(), (usize, f64)> {
        crate::host::first_refused_torque(torques_nm, |i| (i < JOINTS).then_some(TORQUE_LIMIT_NM))
    }

    /// Each body's mass (kg) and inertia about z (kg·m²) as Rapier holds them, body order.
    pub fn mass_properties(&self) -> [(f64, f64); BODIES] {
        let mut out = [(0.0, 0.0); BODIES];
        for (o, &h) in out.iter_mut().zip(&self.bodies) {
            if let Some(rb) = self.world.bodies.get(h) {
                let m = &rb.mass_properties().local_mprops;
                *o = (f64::from(m.mass()), f64::from(m.principal_inertia().z));
            }
        }
        out
    }

    /// The plant's clock: the current state's index and time, the step, the run's length, the
    /// last step's cost.
    pub const fn clock(&self) -> &PlantClock {
        &self.clock
    }

    /// Bodies Rapier has quarantined (non-finite state, rolled back and disabled) so far: 0 in
    /// a healthy run. A controller that drives the biped to infinity shows here.
    pub fn quarantined_bodies(&self) -> usize {
        quarantined(&self.world, &self.bodies)
    }
}

/// The lowest point of body `b`'s box with centre `com` and pitch `pitch`, m.
fn lowest_point_of(b: usize, com: [f64; 2], pitch: f64) -> f64 {
    let [hx, hy] = half_extents(b);
    [[hx, hy], [hx, -hy], [-hx, hy], [-hx, -hy]]
        .into_iter()
        .map(|c| add2(com, rot2(pitch, c))[1])
        .fold(f64::INFINITY, f64::min)
}
