//! A plant built from a robot description: an articulated chain read from a URDF file
//! (`rapier3d-urdf`), fixed at its root, stepped with one torque per joint, reporting its joint
//! states as wire [`StateFrame`]s through the same host loops as the arm ([`crate::host`]).
//!
//! The chain is described once, in URDF: this module builds the Rapier plant from it, and the
//! controller's side builds its model from the same file with `urdf-rs` (the parser
//! `rapier3d-urdf` itself uses). [`ChainScene`] is the JSON scene that names the file and says
//! what happens to the chain (gravity, the start state, external pushes); [`ChainPlant`] is the
//! Rapier world built from it.
//!
//! # What is built
//! - Every URDF joint becomes a **multibody** joint (reduced coordinates: joint angles and
//!   velocities are the multibody's own coordinates, exact, as for the arm; see
//!   [`crate::plant`] for why not impulse joints). Only `revolute` and `continuous` joints are
//!   accepted, 1 to [`MAX_CHAIN_JOINTS`] of them (the chain controllers' capacity). Revolute `<limit lower
//!   upper>` become Rapier joint limits (they push only while a joint is beyond them).
//! - The one root link (the link that is no joint's child) is fixed. Self-contacts are off: the
//!   chain's links never collide with each other. Collision shapes come from `<collision>`
//!   (boxes, cylinders, capsules, spheres; meshes are not loaded) and have no mass: masses,
//!   centres of mass and inertias come from `<inertial>` only: every moving link needs a mass
//!   greater than 0 (and at most [`crate::input::MAX_URDF_MASS_KG`]; inertia entries within
//!   ±[`crate::input::MAX_URDF_INERTIA_KG_M2`], origins within
//!   ±[`crate::input::MAX_URDF_LENGTH_M`]). The file is read by [`crate::input::read_urdf`] (a
//!   regular file, at most 16 MiB, nested at most 64 elements deep, at most 100 000 elements). `rapier3d-urdf` 0.36 ignores the
//!   rotation (`rpy`) of an `<inertial><origin>`; this module rotates such an inertia into the
//!   link frame itself and gives the body the corrected mass properties.
//! - Rapier's default damping of 0.1 on every angular multibody DoF is cleared: the only forces on
//!   the joints are gravity, the pushes and the joint torques.
//! - The frame's joints, the torque frame's torques and every per-joint list here are in **URDF
//!   joint order** (the order of the `<joint>` elements in the file); links are in URDF link
//!   order.
//!
//! # Torques and their limits
//! Joint i's torque τ_i is applied as body torques about the joint's world axis s_i, +τ_i s_i on
//! its child link and −τ_i s_i on its parent (ignored when the parent is the fixed root), so the
//! generalized force on joint i is τ_i and on every other joint 0. The axes are those of the state
//! the step starts from, and the torques are held (in world frame) for the whole step. Rapier's
//! user forces persist, so every link's forces and torques are reset before each step.
//!
//! Each joint's torque limit is its URDF `<limit effort>` (N·m, required: greater than 0 and at
//! most [`crate::scene::MAX_TORQUE_LIMIT_NM`]). [`ChainPlant::check_torques`] names the first
//! torque τ_i with |τ_i| > effort_i (NaN counts as beyond; a torque for a joint the chain does not
//! have is beyond unless it is exactly 0), and the host refuses such a frame whole, counted, never
//! clamped, exactly as for the arm. Stepping applies what it is given.
//!
//! # Walls and contact forces
//! A scene's `walls` are static boxes, axis-aligned in the world: one fixed collider each, with
//! no body, friction [`WALL_FRICTION`] (0.5; with the links' 0.5, combined by average: 0.5) and
//! no restitution. The links collide with them through their `<collision>` shapes (rapier3d-urdf
//! builds one collider per `<collision>`, massless; arm3 has one box per link); the links never
//! collide with each other. A wall that overlaps a link at the start is not refused: the solver
//! pushes them apart (at most its maximal corrective velocity).
//!
//! After every step, for each link, the force the walls put on it during the step: over every
//! contact pair between a wall collider and one of the link's colliders
//! (`NarrowPhase::contact_pairs_with` the wall), over the manifolds the solver saw
//! (`ContactPair::solver_manifolds`) and their solver contacts, the normal impulse plus the two
//! friction impulses, each summed by Rapier over the step's substeps (`ContactData::impulse`,
//! `tangent_impulse`), put in the world frame (see `impulse_on_first`), summed, and divided by
//! dt: the step's mean force, world frame, N. (`ContactPair::total_impulse` is the normal part
//! only.) A link is reported when that sum is not zero; a link near a wall but not pushed (a
//! speculative contact, impulse 0) is not. Friction along a direction the chain cannot move in
//! (z for arm3, whose joints all turn about z) is indeterminate for the solver and is reported
//! as it left it (measured −6.3 N out of plane, within the friction cone, after the impact in
//! `tests/chain.rs`).
//!
//! The state frames carry these forces (at most [`MAX_CONTACTS`], in URDF link order; the
//! links beyond are left out and counted, [`ChainPlant::contacts_left_out`]); a link's
//! [`BodyId`] is its index in URDF link order (the fixed root is 0 and is never pushed:
//! [`ChainPlant::link_body_id`]).
//!
//! # Pushes
//! A push is a constant world force on one link, applied at its centre of mass for the steps
//! k with round(start_s/dt) ≤ k < round(start_s/dt) + round(duration_s/dt).
//!
//! # The mass matrix
//! [`ChainPlant::mass_matrix`] is Rapier's own joint-space mass matrix M(q) at the current
//! configuration. Rapier 0.36 keeps it private (`Multibody::augmented_mass`, M plus
//! dt·damping, armature and dt²·stiffness on the diagonal, assembled as Σ_k J_kᵀ diag(m_k,
//! I_k) J_k from the links' body Jacobians) and exposes only its LU factorization
//! (`Multibody::inv_augmented_mass`). So: forward kinematics and the links' world mass properties
//! are refreshed for the current pose, `Multibody::dof_inverse_inertia` re-assembles the matrix
//! with dt = 0 (which leaves exactly M + armature; armature, damping and springs are all 0 here),
//! and M is rebuilt from that factorization as P⁻¹·L·U. In f32, like all of Rapier here: entries
//! carry a relative error of order 1e-7, and the rebuilt matrix is symmetric to that order, not
//! bit for bit. Calling it between steps does not change the simulation (tested bit for bit):
//! every step re-runs the same kinematics and assembly from the joint coordinates.
//!
//! [`ChainPlant::mass_matrix_at`] gives M(q) at any q without stepping
//! ([`ChainPlant::set_configuration`] then the same reading): for an offline replica built from
//! the same scene, posed along a recorded motion. Along a 1 s run of arm3 it matches the running
//! plant's own M at each recorded state within 7.5e-9 kg·m² (f32 rounding of the re-posed
//! coordinates).
//!
//! # Measured (`models/arm3.urdf`, dt = 5 ms; `tests/chain.rs`, `benches/plant_step.rs`)
//! - Step cost: medians of 12.8, 13.3 and 13.4 µs per step in three runs (criterion
//!   `plant_step/arm3_chain`; the one-link arm 5.1 µs in the first; 2-vCPU VM under a load
//!   average of 2–4 from other builds).
//! - Energy of the free chain (joint limits removed: a limit is an inelastic stop) over 2 s:
//!   within 3.4e-4 of M g L for a swing from rest at joint speeds up to 5.6 rad/s; a whip that
//!   takes the hand to 37 rad/s loses 2.7e-2 of M g L, first order in dt (5.9e-3 at dt = 1 ms):
//!   Rapier's multibody integration is dissipative at high joint speeds.
//! - The mass matrix against the URDF's own composite inertias (f64): within 1.3e-6 relative on
//!   the diagonal, and ½q̇ᵀMq̇ within 1.1e-6 of the links' kinetic energy.
//!
//! - Step cost in wall contact (criterion `plant_step/arm3_chain_wall_contact`: the upper arm
//!   resting on a wall's edge, pressed by 5 N·m, contact forces summed every step): medians of
//!   18.8 and 19.0 µs against 18.9 and 17.8 µs for `plant_step/arm3_chain` in the same two runs
//!   (load average 3.3–3.6): within the noise of this machine, no measurable extra cost.
//! - Contact force of the upper arm pressed onto a wall's edge by 5 N·m at the shoulder, at
//!   rest: its moment about the shoulder is 4.997 N·m (`tests/chain.rs`).
//!
//! Never does: accept a URDF or scene it cannot simulate (a joint type other than revolute or
//! continuous, a missing torque limit, more joints than a frame carries, a chain whose mass
//! matrix is singular at the start, a start state outside a joint's limits; each refused naming
//! the field or the URDF element), clamp or apply a torque beyond its joint's limit (the host's
//! check), read the wall clock for physics, or panic on a validated scene.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use control_core::frames::{
    BodyId, ContactForce, JointState, MAX_CONTACTS, MAX_JOINTS, StateFrame,
};
use rapier3d::glamx::EulerRot;
use rapier3d::na;
use rapier3d::prelude::*;
use rapier3d::utils::OrthonormalBasis;
use rapier3d_urdf::urdf_rs;
use rapier3d_urdf::{UrdfLoaderOptions, UrdfMultibodyOptions, UrdfRobot};
use serde::{Deserialize, Serialize};

use crate::input::{MAX_URDF_INERTIA_KG_M2, MAX_URDF_LENGTH_M, MAX_URDF_MASS_KG};
use crate::scene::{
    Checker, DEFAULT_DT_S, MAX_PUSH_FORCE_N, MAX_TORQUE_LIMIT_NM, SceneError, steps_for,
};

/// Most joints a chain has: 8 (the chain controllers' fixed capacity; a state frame carries up
/// to [`MAX_JOINTS`]).
pub const MAX_CHAIN_JOINTS: usize = 8;
const _: () = assert!(MAX_CHAIN_JOINTS <= MAX_JOINTS);

/// The value of a chain scene's required `kind` field: `"chain"`. It tells a chain scene from an
/// arm scene (which has no `kind`) in the same `--scene` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChainKind {
    /// `"chain"`.
    Chain,
}

/// A chain scene: which URDF, gravity, the start state and the pushes. The JSON form:
///
/// ```json
/// {
///   "kind": "chain",
///   "urdf": "../../models/arm3.urdf",
///   "dt_s": 0.005,
///   "end_time_s": 2.0,
///   "gravity_m_s2": [0.0, -9.81, 0.0],
///   "initial_positions_rad": [-1.0, 0.5, 0.2],
///   "initial_velocities_rad_s": [0.0, 0.0, 0.0],
///   "pushes": [
///     { "body": "hand", "force_n": [0.0, 20.0, 0.0], "start_s": 0.5, "duration_s": 0.1 }
///   ],
///   "walls": [
///     { "center_m": [0.15, -0.55, 0.0], "half_extents_m": [0.05, 0.45, 0.5] }
///   ]
/// }
/// ```
///
/// `kind`, `urdf`, `end_time_s` and `gravity_m_s2` are required; `dt_s` defaults to
/// [`DEFAULT_DT_S`], the start state to all joints at 0 and at rest, `pushes` and `walls` to
/// none. Unknown fields are refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainScene {
    /// Always [`ChainKind::Chain`] (`"chain"`).
    pub kind: ChainKind,
    /// The URDF file. A relative path in a scene file is resolved against the scene file's
    /// folder when the file is loaded ([`Self::load`], [`Self::from_json_str`]); in a scene built
    /// in memory it is relative to the working directory.
    pub urdf: PathBuf,
    /// Physics step, s (default 0.005).
    #[serde(default = "default_dt")]
    pub dt_s: f64,
    /// The plant stops after the step that reaches this simulated time, s (rounded to a whole
    /// number of steps).
    pub end_time_s: f64,
    /// Gravity, a world vector, m/s² (e.g. `[0, -9.81, 0]` for the project's y-up frame).
    #[serde(deserialize_with = "crate::input::exact")]
    pub gravity_m_s2: [f64; 3],
    /// Joint angles at t = 0, rad, one per joint in URDF joint order; empty (the default): all 0.
    /// Each must lie within its revolute joint's limits.
    #[serde(default)]
    pub initial_positions_rad: Vec<f64>,
    /// Joint velocities at t = 0, rad/s, one per joint in URDF joint order; empty (the default):
    /// all 0.
    #[serde(default)]
    pub initial_velocities_rad_s: Vec<f64>,
    /// External forces on links (at most [`MAX_PUSHES`]).
    #[serde(default)]
    pub pushes: Vec<Push>,
    /// Static boxes the links collide with (at most [`MAX_WALLS`]); the force each puts on the
    /// links is reported in every state frame (see the module doc, "Walls and contact forces").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub walls: Vec<Wall>,
}

/// Most walls a chain scene has.
pub const MAX_WALLS: usize = 8;
/// Most pushes a chain scene has.
pub const MAX_PUSHES: usize = 64;
/// Largest half extent of a wall, m.
pub const MAX_WALL_HALF_EXTENT_M: f64 = 100.0;
/// Friction coefficient of a wall's collider. Rapier combines it with a link collider's (0.5,
/// Rapier's default, which rapier3d-urdf keeps) by their average: 0.5 between a link and a wall.
/// Restitution is 0 on both (Rapier's default): a link that hits a wall does not bounce.
pub const WALL_FRICTION: f64 = 0.5;

/// A static box, axis-aligned in the world: a fixed collider with no body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wall {
    /// Centre of the box, world frame, m (each within ±1000 m).
    #[serde(deserialize_with = "crate::input::exact")]
    pub center_m: [f64; 3],
    /// Half the box's size along the world x, y and z axes, m (each greater than 0 and at most
    /// [`MAX_WALL_HALF_EXTENT_M`]).
    #[serde(deserialize_with = "crate::input::exact")]
    pub half_extents_m: [f64; 3],
}

fn default_dt() -> f64 {
    DEFAULT_DT_S
}

/// A constant world force on one link, at its centre of mass, for a while.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Push {
    /// The URDF name of the link pushed (not the fixed root).
    pub body: String,
    /// The force, world frame, N (each component within ±[`MAX_PUSH_FORCE_N`]).
    #[serde(deserialize_with = "crate::input::exact")]
    pub force_n: [f64; 3],
    /// When it starts, s (rounded to the nearest step).
    pub start_s: f64,
    /// How long it lasts, s (rounded to a whole number of steps; 0: not at all).
    pub duration_s: f64,
}

impl ChainScene {
    /// A scene of the chain in `urdf` under `gravity_m_s2` for `end_time_s`, starting at rest
    /// with every joint at 0, the default step, no pushes.
    pub fn new(urdf: impl Into<PathBuf>, end_time_s: f64, gravity_m_s2: [f64; 3]) -> Self {
        Self {
            kind: ChainKind::Chain,
            urdf: urdf.into(),
            dt_s: DEFAULT_DT_S,
            end_time_s,
            gravity_m_s2,
            initial_positions_rad: Vec::new(),
            initial_velocities_rad_s: Vec::new(),
            pushes: Vec::new(),
            walls: Vec::new(),
        }
    }

    /// Number of physics steps of the run: `end_time_s / dt_s`, rounded.
    pub fn total_steps(&self) -> u64 {
        steps_for(self.end_time_s, self.dt_s)
    }

    /// Reads and checks a chain scene file (the checks that need no URDF: [`Self::validate`]).
    pub fn load(path: &Path) -> Result<Self, SceneError> {
        Self::from_json_str(&crate::scene::read_scene_file(path)?, path)
    }

    /// Parses and checks a chain scene given as JSON text; `file` names it in errors, and a
    /// relative `urdf` is resolved against `file`'s folder.
    pub fn from_json_str(text: &str, file: &Path) -> Result<Self, SceneError> {
        let mut scene: Self = crate::scene::parse_scene_json(text, file)?;
        scene.urdf = crate::scene::urdf_beside(&scene.urdf, file);
        scene
            .validate()
            .map_err(|failed| SceneError::checked(file, failed))?;
        Ok(scene)
    }

    /// Every check that needs no URDF: every number finite and in range, the per-joint lists no
    /// longer than a frame carries, push bodies named. On failure returns the first failing
    /// field as a path in the serialized scene (`gravity_m_s2[1]`, `pushes[0].start_s`) and the
    /// reason. What needs the URDF (joint count, limits, link names) is checked by
    /// [`ChainPlant::new`], under the same field paths.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let mut c = Checker::default();
        c.timing(self.dt_s, self.end_time_s);
        if self.urdf.as_os_str().is_empty() {
            c.fail("urdf", String::from("must name a URDF file"));
        }
        for (k, g) in self.gravity_m_s2.into_iter().enumerate() {
            c.range(&format!("gravity_m_s2[{k}]"), g, -1000.0, 1000.0);
        }
        for (name, list) in [
            ("initial_positions_rad", &self.initial_positions_rad),
            ("initial_velocities_rad_s", &self.initial_velocities_rad_s),
        ] {
            if list.len() > MAX_CHAIN_JOINTS {
                c.fail(
                    name,
                    format!(
                        "{} values: a chain has at most {MAX_CHAIN_JOINTS} joints",
                        list.len()
                    ),
                );
            }
            for (i, &v) in list.iter().enumerate() {
                c.range(&format!("{name}[{i}]"), v, -1e3, 1e3);
            }
        }
        check_pushes(&mut c, &self.pushes, "chain");
        check_walls(&mut c, &self.walls, "chain");
        c.result()
    }
}

/// Checks a scene's `pushes` (a `noun` scene's, for the message): at most [`MAX_PUSHES`], each
/// naming a body, its force within ±[`MAX_PUSH_FORCE_N`] and its times in [0, 1e7] s. (The
/// chain's and the robot scene's check.)
pub(crate) fn check_pushes(c: &mut Checker, pushes: &[Push], noun: &str) {
    if pushes.len() > MAX_PUSHES {
        c.fail(
            "pushes",
            format!(
                "{} pushes: a {noun} scene has at most {MAX_PUSHES}",
                pushes.len()
            ),
        );
    }
    for (i, p) in pushes.iter().enumerate() {
        let f = |name: &str| format!("pushes[{i}].{name}");
        if p.body.is_empty() {
            c.fail(&f("body"), String::from("must name a link of the URDF"));
        }
        for (k, x) in p.force_n.into_iter().enumerate() {
            c.range(
                &format!("pushes[{i}].force_n[{k}]"),
                x,
                -MAX_PUSH_FORCE_N,
                MAX_PUSH_FORCE_N,
            );
        }
        c.range(&f("start_s"), p.start_s, 0.0, 1e7);
        c.range(&f("duration_s"), p.duration_s, 0.0, 1e7);
    }
}

/// Checks a scene's `walls` (a `noun` scene's, for the message): at most [`MAX_WALLS`], centres
/// within ±1 km, half extents in (0, [`MAX_WALL_HALF_EXTENT_M`]]. (The chain's and the robot
/// scene's check.)
pub(crate) fn check_walls(c: &mut Checker, walls: &[Wall], noun: &str) {
    if walls.len() > MAX_WALLS {
        c.fail(
            "walls",
            format!(
                "{} walls: a {noun} scene has at most {MAX_WALLS}",
                walls.len()
            ),
        );
    }
    for (i, w) in walls.iter().enumerate() {
        for k in 0..3 {
            c.range(
                &format!("walls[{i}].center_m[{k}]"),
                w.center_m[k],
                -1e3,
                1e3,
            );
            c.positive_up_to(
                &format!("walls[{i}].half_extents_m[{k}]"),
                w.half_extents_m[k],
                MAX_WALL_HALF_EXTENT_M,
            );
        }
    }
}

/// Why [`ChainPlant::set_configuration`] or [`ChainPlant::mass_matrix_at`] refused a joint
/// state.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum ConfigurationError {
    /// Not one value per joint.
    WrongLength {
        /// Which list (`q_rad`, `qd_rad_s`).
        what: &'static str,
        /// Values given.
        got: usize,
        /// Joints of the chain.
        joints: usize,
    },
    /// A NaN or infinite value.
    NonFinite {
        /// Which list (`q_rad`, `qd_rad_s`).
        what: &'static str,
        /// Joint index, URDF joint order.
        joint: usize,
        /// The value.
        value: f64,
    },
}

impl fmt::Display for ConfigurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::WrongLength { what, got, joints } => write!(
                f,
                "{what}: {got} values for a chain of {joints} joints (one per joint, in URDF order)"
            ),
            Self::NonFinite { what, joint, value } => {
                write!(f, "{what}[{joint}] is {value}: must be finite")
            }
        }
    }
}

impl std::error::Error for ConfigurationError {}

/// One joint of the chain.
#[derive(Debug, Clone)]
struct ChainJoint {
    name: String,
    handle: MultibodyJointHandle,
    parent: RigidBodyHandle,
    child: RigidBodyHandle,
    effort_nm: f64,
}

/// A push resolved to a body and steps (the chain's and the robot plant's).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ActivePush {
    body: RigidBodyHandle,
    force: Vector,
    first_step: u64,
    end_step: u64,
}

impl ActivePush {
    /// `force_n` (N, world) on `body` from the step nearest `start_s` for the steps nearest
    /// `duration_s`, at physics step `dt_s`.
    pub(crate) fn new(
        body: RigidBodyHandle,
        force_n: [f64; 3],
        start_s: f64,
        duration_s: f64,
        dt_s: f64,
    ) -> Self {
        let first_step = step_of(start_s, dt_s);
        Self {
            body,
            force: v3(force_n),
            first_step,
            end_step: first_step + step_of(duration_s, dt_s),
        }
    }
}

/// Adds the force of each push active at step `step` to its body (held for the whole step).
pub(crate) fn apply_pushes(pushes: &[ActivePush], bodies: &mut RigidBodySet, step: u64) {
    for p in pushes {
        if (p.first_step..p.end_step).contains(&step)
            && let Some(rb) = bodies.get_mut(p.body)
        {
            rb.add_force(p.force, true);
        }
    }
}

/// Clears the forces and torques added to the bodies `handles` (for the next step's).
pub(crate) fn reset_forces(bodies: &mut RigidBodySet, handles: &[(String, RigidBodyHandle)]) {
    for &(_, h) in handles {
        if let Some(rb) = bodies.get_mut(h) {
            rb.reset_torques(false);
            rb.reset_forces(false);
        }
    }
}

/// The chain of a [`ChainScene`], ready to step.
pub struct ChainPlant {
    world: PhysicsWorld,
    /// URDF joint order.
    joints: Vec<ChainJoint>,
    /// URDF link order: name and body.
    links: Vec<(String, RigidBodyHandle)>,
    /// Each link body's index in URDF link order (its [`BodyId`] on the wire).
    link_ids: Vec<(RigidBodyHandle, u16)>,
    /// The walls' colliders, in scene order.
    walls: Vec<ColliderHandle>,
    /// The contact forces of the last step, as the frames carry them.
    contacts: heapless::Vec<ContactForce, MAX_CONTACTS>,
    /// Per-link wall forces of the step being summed: link index, force (N).
    contact_sums: Vec<(u16, [f64; 3])>,
    contacts_left_out: u64,
    pushes: Vec<ActivePush>,
    dt_s: f64,
    step: u64,
    total_steps: u64,
    last_cost_ns: u64,
}

impl fmt::Debug for ChainPlant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChainPlant")
            .field("joints", &self.joint_names())
            .field("step", &self.step)
            .field("total_steps", &self.total_steps)
            .finish_non_exhaustive()
    }
}

fn v3(a: [f64; 3]) -> Vector {
    Vector::new(a[0] as Real, a[1] as Real, a[2] as Real)
}

fn to_f64(v: Vector) -> [f64; 3] {
    [f64::from(v.x), f64::from(v.y), f64::from(v.z)]
}

fn step_of(time_s: f64, dt_s: f64) -> u64 {
    // Validated finite and non-negative.
    (time_s / dt_s).round() as u64
}

/// Whether the pose has a rotation (any rpy angle not 0).
fn rotated(pose: &urdf_rs::Pose) -> bool {
    pose.rpy.0.iter().any(|&a| a != 0.0)
}

/// The first failing index of a Cholesky factorization of the symmetric `m` (its lower
/// triangle), or `None` when `m` is positive definite.
fn not_positive_definite(m: &[Vec<f64>]) -> Option<usize> {
    let n = m.len();
    let mut l = vec![vec![0.0; n]; n];
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| l[i][k] * l[j][k]).sum();
            let a = m[i][j] - s;
            if i == j {
                if a.is_nan() || a <= 0.0 || a.is_infinite() {
                    return Some(i);
                }
                l[i][i] = a.sqrt();
            } else {
                l[i][j] = a / l[j][j];
            }
        }
    }
    None
}

impl ChainPlant {
    /// Builds the chain of `scene`: checks the scene ([`ChainScene::validate`]), loads its URDF
    /// and checks it against what the plant can simulate and against the scene (one value per
    /// joint, start within the limits, pushed links that exist), builds the Rapier world and puts
    /// the chain in its start state. Errors name the file `(in memory)` (a caller that loaded
    /// the scene from a file substitutes its name) and the scene field: `urdf` for anything
    /// about the URDF itself, whose reason names the URDF file and element.
    pub fn new(scene: &ChainScene) -> Result<Self, SceneError> {
        let err = |field: &str, reason: String| SceneError {
            file: "(in memory)".into(),
            field: field.to_owned(),
            reason,
        };
        scene
            .validate()
            .map_err(|(field, reason)| err(&field, reason))?;
        let urdf_path = scene.urdf.as_path();
        let urdf_err = |reason: String| err("urdf", format!("{}: {reason}", urdf_path.display()));

        let options = UrdfLoaderOptions {
            make_roots_fixed: true,
            rigid_body_blueprint: RigidBodyBuilder::dynamic().can_sleep(false),
            ..UrdfLoaderOptions::default()
        };
        // Read by the one input reader (a regular file, size and nesting capped), parsed with
        // urdf-rs (the controller's parser too) and checked before rapier3d-urdf sees it: its
        // builder indexes links by the names joints give and would panic on a dangling one.
        let text = crate::input::read_urdf(urdf_path)
            .map_err(|e| urdf_err(format!("cannot load: {}", e.reason)))?;
        let urdf =
            urdf_rs::read_from_string(&text).map_err(|e| urdf_err(format!("cannot load: {e}")))?;
        check_robot(&urdf).map_err(urdf_err)?;
        let mesh_dir = urdf_path.parent().unwrap_or_else(|| Path::new("."));
        let mut robot = UrdfRobot::from_robot(&urdf, options, mesh_dir);

        let n = urdf.joints.len();
        for (name, list) in [
            ("initial_positions_rad", &scene.initial_positions_rad),
            ("initial_velocities_rad_s", &scene.initial_velocities_rad_s),
        ] {
            if !list.is_empty() && list.len() != n {
                return Err(err(
                    name,
                    format!(
                        "{} values for the {n} joints of {} (one per joint, in URDF order, or none)",
                        list.len(),
                        urdf_path.display()
                    ),
                ));
            }
        }
        let q0 = |i: usize| scene.initial_positions_rad.get(i).copied().unwrap_or(0.0);
        let v0 = |i: usize| {
            scene
                .initial_velocities_rad_s
                .get(i)
                .copied()
                .unwrap_or(0.0)
        };
        for (i, j) in urdf.joints.iter().enumerate() {
            let (lo, hi) = (j.limit.lower, j.limit.upper);
            if j.joint_type == urdf_rs::JointType::Revolute && !(lo..=hi).contains(&q0(i)) {
                return Err(err(
                    &format!("initial_positions_rad[{i}]"),
                    format!(
                        "joint `{}` is limited to [{lo}, {hi}] rad, got {}",
                        j.name,
                        q0(i)
                    ),
                ));
            }
        }

        // rapier3d-urdf 0.36 takes an <inertial> as if its frame were the link's: rotate a rotated
        // one into the link frame here.
        for link in &mut robot.links {
            let Some(l) = urdf.links.get(link.urdf_link_index) else {
                continue;
            };
            if rotated(&l.inertial.origin) {
                link.body
                    .set_additional_mass_properties(mass_properties(&l.inertial), false);
            }
        }
        // Joints and links of the loader, by their index in the file.
        let joint_slot: Vec<Option<usize>> = (0..n)
            .map(|i| robot.joints.iter().position(|j| j.urdf_joint_index == i))
            .collect();
        let link_slot: Vec<Option<usize>> = (0..urdf.links.len())
            .map(|i| robot.links.iter().position(|l| l.urdf_link_index == i))
            .collect();

        let mut world = PhysicsWorld::new();
        world.gravity = v3(scene.gravity_m_s2);
        world.integration_parameters.dt = scene.dt_s as Real;
        let handles = robot.insert_using_multibody_joints(
            &mut world.bodies,
            &mut world.colliders,
            &mut world.multibody_joints,
            UrdfMultibodyOptions::DISABLE_SELF_CONTACTS,
        );

        // Rapier folds a body's mass properties in at the next step; do it now, so that the
        // masses and the mass matrix are right before the first step.
        for link in &handles.links {
            if let Some(rb) = world.bodies.get_mut(link.body) {
                rb.recompute_mass_properties_from_colliders(&world.colliders);
            }
        }
        let mut joints = Vec::with_capacity(n);
        for (i, j) in urdf.joints.iter().enumerate() {
            let h = joint_slot[i]
                .and_then(|s| handles.joints.get(s))
                .and_then(|h| h.joint.map(|joint| (joint, h.link1, h.link2)));
            let Some((handle, parent, child)) = h else {
                return Err(urdf_err(format!(
                    "joint `{}` could not be built (its child link `{}` has no mass, shape or inertia?)",
                    j.name, j.child.link
                )));
            };
            joints.push(ChainJoint {
                name: j.name.clone(),
                handle,
                parent,
                child,
                effort_nm: j.limit.effort,
            });
        }
        let mut links = Vec::with_capacity(urdf.links.len());
        let mut link_ids = Vec::with_capacity(urdf.links.len());
        for (i, l) in urdf.links.iter().enumerate() {
            if let Some(h) = link_slot[i].and_then(|s| handles.links.get(s)) {
                links.push((l.name.clone(), h.body));
                // At most a few hundred links in any URDF the plant accepts (MAX_CHAIN_JOINTS + 1).
                link_ids.push((h.body, u16::try_from(i).unwrap_or(u16::MAX)));
            }
        }
        let walls = scene
            .walls
            .iter()
            .map(|w| {
                let [hx, hy, hz] = w.half_extents_m.map(|x| x as Real);
                world.colliders.insert(
                    ColliderBuilder::cuboid(hx, hy, hz)
                        .translation(v3(w.center_m))
                        .friction(WALL_FRICTION as Real),
                )
            })
            .collect();
        let Some(first) = joints.first().map(|j| j.handle) else {
            return Err(urdf_err(String::from("no joint")));
        };
        // One multibody: every joint on the first joint's.
        let mb_of = |w: &PhysicsWorld, body: RigidBodyHandle| {
            w.multibody_joints
                .rigid_body_link(body)
                .map(|l| l.multibody)
        };
        let root_mb = mb_of(&world, joints[0].child);
        if joints.iter().any(|j| mb_of(&world, j.child) != root_mb) {
            return Err(urdf_err(String::from(
                "the joints do not form one chain from one root",
            )));
        }

        let mut pushes = Vec::with_capacity(scene.pushes.len());
        let root_body = world
            .multibody_joints
            .get(first)
            .map(|(mb, _)| mb.root().rigid_body_handle());
        for (i, p) in scene.pushes.iter().enumerate() {
            let Some(&(_, body)) = links.iter().find(|(name, _)| *name == p.body) else {
                let names: Vec<&str> = links.iter().map(|(name, _)| name.as_str()).collect();
                return Err(err(
                    &format!("pushes[{i}].body"),
                    format!(
                        "no link `{}` in {} (links: {})",
                        p.body,
                        urdf_path.display(),
                        names.join(", ")
                    ),
                ));
            };
            if Some(body) == root_body {
                return Err(err(
                    &format!("pushes[{i}].body"),
                    format!("`{}` is the fixed root: a force on it does nothing", p.body),
                ));
            }
            pushes.push(ActivePush::new(
                body,
                p.force_n,
                p.start_s,
                p.duration_s,
                scene.dt_s,
            ));
        }

        let mut plant = Self {
            world,
            joints,
            links,
            link_ids,
            walls,
            contacts: heapless::Vec::new(),
            contact_sums: Vec::new(),
            contacts_left_out: 0,
            pushes,
            dt_s: scene.dt_s,
            step: 0,
            total_steps: scene.total_steps(),
            last_cost_ns: 0,
        };
        plant.set_start(&q0, &v0);
        let m = plant.mass_matrix();
        if m.len() != n {
            return Err(urdf_err(format!(
                "Rapier built {} degrees of freedom for {n} joints",
                m.len()
            )));
        }
        if let Some(i) = not_positive_definite(&m) {
            return Err(urdf_err(format!(
                "the mass matrix at the start is singular from joint `{}` on: a joint that moves no mass?",
                plant.joints[i].name
            )));
        }
        Ok(plant)
    }

    /// Puts joint i at `q(i)` with velocity `v(i)`, clears the default damping, and moves the
    /// links where the joints say.
    fn set_start(&mut self, q: &dyn Fn(usize) -> f64, v: &dyn Fn(usize) -> f64) {
        let bodies = &mut self.world.bodies;
        let Some(first) = self.joints.first().map(|j| j.handle) else {
            return;
        };
        if let Some((mb, _)) = self.world.multibody_joints.get_mut(first) {
            // Settle the root type first (a fixed root has no DoFs), so that the joints' DoFs are
            // the only generalized coordinates.
            mb.forward_kinematics(bodies, true);
            mb.damping_mut().fill(0.0);
        }
        for (i, j) in self.joints.iter().enumerate() {
            if let Some((mb, link_id)) = self.world.multibody_joints.get_mut(j.handle) {
                let mut assembly = None;
                if let Some(link) = mb.link_mut(link_id) {
                    let now = link.joint.coords()[3];
                    link.joint.apply_displacement(&[q(i) as Real - now]);
                    assembly = Some(link.assembly_id());
                }
                if let Some(a) = assembly
                    && let Some(slot) = mb.generalized_velocity_mut().get_mut(a)
                {
                    *slot = v(i) as Real;
                }
            }
        }
        if let Some((mb, _)) = self.world.multibody_joints.get_mut(first) {
            mb.forward_kinematics(bodies, true);
            mb.update_rigid_bodies(bodies, true);
        }
    }

    /// The joints' names, in URDF joint order (the order of the frame's joints and of the
    /// torques).
    pub fn joint_names(&self) -> Vec<&str> {
        self.joints.iter().map(|j| j.name.as_str()).collect()
    }

    /// Number of joints.
    pub fn joint_count(&self) -> usize {
        self.joints.len()
    }

    /// Each joint's torque limit, its URDF `<limit effort>`, N·m, in URDF joint order.
    pub fn torque_limits_nm(&self) -> Vec<f64> {
        self.joints.iter().map(|j| j.effort_nm).collect()
    }

    /// The links' names, in URDF link order (the order of [`Self::link_masses`]).
    pub fn link_names(&self) -> Vec<&str> {
        self.links.iter().map(|(name, _)| name.as_str()).collect()
    }

    /// Each link's mass as Rapier has it, kg, in URDF link order.
    pub fn link_masses(&self) -> Vec<f64> {
        self.links
            .iter()
            .map(|&(_, h)| {
                self.world
                    .bodies
                    .get(h)
                    .map_or(0.0, |b| f64::from(b.mass()))
            })
            .collect()
    }

    /// Each link's centre of mass in the world now, m, in URDF link order.
    pub fn link_coms_world(&self) -> Vec<[f64; 3]> {
        self.links
            .iter()
            .map(|&(_, h)| {
                self.world
                    .bodies
                    .get(h)
                    .map_or([0.0; 3], |b| to_f64(b.center_of_mass()))
            })
            .collect()
    }

    /// Each joint's axis in the world now (unit vector; positive angles and torques turn
    /// counter-clockwise about it), in URDF joint order: the parent link's rotation times the
    /// joint frame's x axis, as Rapier holds them.
    pub fn joint_axes_world(&self) -> Vec<[f64; 3]> {
        self.joints
            .iter()
            .map(|j| self.axis_world(j.handle).map_or([0.0; 3], to_f64))
            .collect()
    }

    fn axis_world(&self, handle: MultibodyJointHandle) -> Option<Vector> {
        let (mb, link_id) = self.world.multibody_joints.get(handle)?;
        let link = mb.link(link_id)?;
        let parent = mb.link(link.parent_id()?)?;
        Some(parent.local_to_world().rotation * link.joint().data.local_frame1.rotation * Vector::X)
    }

    /// Rapier's joint-space mass matrix M(q) at the current configuration, kg·m², rows and
    /// columns in URDF joint order (`m[i][j]`). How it is obtained: see the module doc. It
    /// allocates and refactorizes; it is for checks and models, not for every step.
    pub fn mass_matrix(&mut self) -> Vec<Vec<f64>> {
        let n = self.joints.len();
        let Some(first) = self.joints.first().map(|j| j.handle) else {
            return Vec::new();
        };
        // The assembly index (row of Rapier's matrix) of each joint, in URDF order.
        let order: Vec<Option<usize>> = self
            .joints
            .iter()
            .map(|j| {
                let (mb, link_id) = self.world.multibody_joints.get(j.handle)?;
                Some(mb.link(link_id)?.assembly_id())
            })
            .collect();
        let bodies = &mut self.world.bodies;
        let Some((mb, _)) = self.world.multibody_joints.get_mut(first) else {
            return Vec::new();
        };
        // The links' world inertias of the current pose (a step leaves those of its last
        // substep's start), then M + armature assembled at dt = 0.
        mb.forward_kinematics(bodies, false);
        mb.update_rigid_bodies(bodies, true);
        let _ = mb.dof_inverse_inertia(bodies);
        let (p, l, u) = mb.inv_augmented_mass().clone().unpack();
        let mut m = l * u;
        p.inv_permute_rows(&mut m);
        if m.nrows() != n || m.ncols() != n {
            // Kinematic DoFs (never built here) would be left out of Rapier's matrix.
            return vec![Vec::new(); m.nrows().min(n)];
        }
        (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| match (order[i], order[j]) {
                        (Some(a), Some(b)) => f64::from(m[(a, b)]),
                        _ => f64::NAN,
                    })
                    .collect()
            })
            .collect()
    }

    /// Puts the chain at joint angles `q_rad` with joint velocities `qd_rad_s` (one each per
    /// joint, URDF joint order), without stepping: the links are moved where the joints say, the
    /// step index and time stay as they were. Refuses (leaving the plant as it was) a list of
    /// the wrong length or a non-finite value. Angles beyond a revolute joint's limits are
    /// accepted (a recorded motion may sit slightly beyond a limit, which Rapier's limits only
    /// push back from); a later step would then start with the limit pushing.
    ///
    /// For an **offline replica**: a second plant built from the same scene
    /// ([`ChainPlant::new`]), posed along a recorded motion to read [`Self::mass_matrix`] or the
    /// links' poses. Used on the plant that is running, it would teleport the chain (contacts
    /// found at the last step are stale until the next one); nothing here touches any other
    /// plant instance.
    pub fn set_configuration(
        &mut self,
        q_rad: &[f64],
        qd_rad_s: &[f64],
    ) -> Result<(), ConfigurationError> {
        let n = self.joints.len();
        for (what, list) in [("q_rad", q_rad), ("qd_rad_s", qd_rad_s)] {
            if list.len() != n {
                return Err(ConfigurationError::WrongLength {
                    what,
                    got: list.len(),
                    joints: n,
                });
            }
            if let Some((joint, &value)) = list.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(ConfigurationError::NonFinite { what, joint, value });
            }
        }
        let q = |i: usize| q_rad.get(i).copied().unwrap_or(0.0);
        let v = |i: usize| qd_rad_s.get(i).copied().unwrap_or(0.0);
        self.set_start(&q, &v);
        Ok(())
    }

    /// Rapier's joint-space mass matrix M(q) at joint angles `q_rad` (one per joint, URDF joint
    /// order), without stepping: [`Self::set_configuration`] to `q_rad` at rest, then
    /// [`Self::mass_matrix`]. It leaves the plant at `q_rad` with every joint at rest, so it is
    /// for an offline replica built from the same scene (see [`Self::set_configuration`]), e.g.
    /// M along a recorded motion. Refuses a list of the wrong length or a non-finite angle.
    pub fn mass_matrix_at(&mut self, q_rad: &[f64]) -> Result<Vec<Vec<f64>>, ConfigurationError> {
        self.set_configuration(q_rad, &vec![0.0; q_rad.len()])?;
        Ok(self.mass_matrix())
    }

    /// The joints' angles and velocities now, in URDF joint order.
    pub fn joint_states(&self) -> Vec<JointState> {
        self.joints.iter().map(|j| self.joint_state(j)).collect()
    }

    fn joint_state(&self, j: &ChainJoint) -> JointState {
        crate::plant::revolute_state(&self.world.multibody_joints, j.handle)
    }

    /// Index of the current state (0 before the first step).
    pub const fn step_index(&self) -> u64 {
        self.step
    }

    /// Simulated time of the current state, s.
    pub fn time_s(&self) -> f64 {
        self.step as f64 * self.dt_s
    }

    /// Physics step, s.
    pub const fn dt_s(&self) -> f64 {
        self.dt_s
    }

    /// Steps of the whole run (the scene's end time over dt).
    pub const fn total_steps(&self) -> u64 {
        self.total_steps
    }

    /// Whether the run has reached the scene's end time.
    pub const fn is_finished(&self) -> bool {
        self.step >= self.total_steps
    }

    /// Checks torques against the joints' limits: `Err((joint, torque))` names the first torque
    /// with |τ_i| > effort_i (NaN counts as beyond), or the first entry beyond the chain's joints
    /// that is not exactly 0 (a torque for a joint the chain does not have). A torque of exactly
    /// the limit passes.
    pub fn check_torques(&self, torques_nm: &[f64]) -> Result<(), (usize, f64)> {
        let beyond = |(i, &t): (usize, &f64)| match self.joints.get(i) {
            Some(j) => t.is_nan() || t.abs() > j.effort_nm,
            None => t != 0.0,
        };
        match torques_nm.iter().enumerate().position(beyond) {
            Some(i) => Err((i, torques_nm.get(i).copied().unwrap_or(f64::NAN))),
            None => Ok(()),
        }
    }

    /// The state frame of the current state: sequence number = step index, the joints in URDF
    /// order, no events, the walls' forces on the links during the step that produced it (none
    /// for step 0), and that step's cost.
    pub fn state_frame(&mut self) -> StateFrame {
        let mut frame = StateFrame::new(self.step, self.step, self.time_s());
        frame.step_cost_ns = self.last_cost_ns;
        for j in &self.joints {
            // At most MAX_CHAIN_JOINTS joints (checked when built).
            let _ = frame.push_joint(self.joint_state(j));
        }
        frame.contacts = self.contacts.clone();
        frame
    }

    /// The walls' forces on the links during the last step (none before the first), as the
    /// state frames carry them: at most [`MAX_CONTACTS`], in URDF link order.
    pub fn wall_contacts(&self) -> &[ContactForce] {
        &self.contacts
    }

    /// Link forces left out of the frames so far: one per link and step when more than
    /// [`MAX_CONTACTS`] links were pushed by walls in one step (the links last in URDF order
    /// are left out).
    pub const fn contacts_left_out(&self) -> u64 {
        self.contacts_left_out
    }

    /// Each link's index in URDF link order, its [`BodyId`] in the frames' contact forces, by
    /// name; `None` for a name the URDF does not have.
    pub fn link_body_id(&self, name: &str) -> Option<BodyId> {
        let (_, h) = self.links.iter().find(|(n, _)| n == name)?;
        self.link_ids
            .iter()
            .find(|(b, _)| b == h)
            .map(|&(_, id)| BodyId(id))
    }

    /// Sums, over every contact between a wall and a link, the impulses the solver applied in
    /// the step just taken, and keeps the per-link forces (impulse / dt) for the frames.
    fn collect_wall_contacts(&mut self) {
        let link_ids = &self.link_ids;
        collect_contact_forces(
            &self.world,
            &self.walls,
            self.dt_s,
            |b| link_ids.iter().find(|(h, _)| *h == b).map(|&(_, id)| id),
            &mut self.contact_sums,
            &mut self.contacts,
            &mut self.contacts_left_out,
        );
    }

    /// Steps the world by dt with joint torques `torques_nm` (N·m, URDF joint order; a missing
    /// joint gets 0, extra entries are ignored) held for the whole step, and returns the new
    /// state's frame. Applies what it is given: the limits are the caller's to enforce
    /// ([`Self::check_torques`]).
    pub fn step(&mut self, torques_nm: &[f64]) -> StateFrame {
        self.step_driven_by(torques_nm, 0)
    }

    /// [`Self::step`] with the torques of the torque frame with sequence number
    /// `torque_sequence` (0: none), which the new state's frame names
    /// ([`StateFrame::applied_torque_sequence`], low 32 bits).
    pub fn step_driven_by(&mut self, torques_nm: &[f64], torque_sequence: u64) -> StateFrame {
        let t0 = Instant::now();
        reset_forces(&mut self.world.bodies, &self.links);
        for (i, j) in self.joints.iter().enumerate() {
            let tau = torques_nm.get(i).copied().unwrap_or(0.0) as Real;
            let Some(axis) = self.axis_world(j.handle) else {
                continue;
            };
            for (body, sign) in [(j.child, 1.0), (j.parent, -1.0)] {
                if let Some(rb) = self.world.bodies.get_mut(body) {
                    rb.add_torque(axis * (sign * tau), true);
                }
            }
        }
        apply_pushes(&self.pushes, &mut self.world.bodies, self.step);
        self.world.step();
        self.collect_wall_contacts();
        self.step += 1;
        self.last_cost_ns = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let mut frame = self.state_frame();
        // The low 32 bits, as the frame documents.
        frame.applied_torque_sequence = (torque_sequence & u64::from(u32::MAX)) as u32;
        frame
    }
}

/// The impulse the contacts of `pair` applied to its first collider's body during the step just
/// taken, world frame, N·s: over the manifolds the solver saw and their solver contacts, the
/// normal impulse λ along −n (n, the manifold normal, points from the first collider to the
/// second) plus the friction impulses (t₁, t₂) along the solver's tangent basis, which Rapier
/// 0.36 derives from −n alone: t₁ = (−n).orthonormal_vector(), t₂ = (−n) × t₁. λ and (t₁, t₂) are
/// each the sum over the step's substeps (`ContactData::impulse`, `tangent_impulse`, written back
/// by the solver after the last substep). The second collider's body got the opposite.
pub(crate) fn impulse_on_first(pair: &ContactPair) -> Vector {
    let mut total = Vector::ZERO;
    for m in pair.solver_manifolds() {
        let dir1 = -m.data.normal;
        let t1 = dir1.orthonormal_vector();
        let t2 = dir1.cross(t1);
        for sc in &m.data.solver_contacts {
            let [index] = sc.contact_indices();
            if let Some(pt) = usize::try_from(index).ok().and_then(|i| m.points.get(i)) {
                let d = &pt.data;
                total += dir1 * d.impulse + t1 * d.tangent_impulse.x + t2 * d.tangent_impulse.y;
            }
        }
    }
    total
}

/// Sums, over every contact between a collider of `environment` and a body that `body_id`
/// numbers, the impulses the solver applied in the step just taken ([`impulse_on_first`]), as
/// forces on that body (impulse / `dt_s`, N, world frame; a zero sum is no contact), and writes
/// them to `contacts` in id order: at most [`MAX_CONTACTS`], each body beyond counted in
/// `left_out`. `sums` is the scratch the sums are made in. (The chain's and the robot plant's
/// readout.)
pub(crate) fn collect_contact_forces(
    world: &PhysicsWorld,
    environment: &[ColliderHandle],
    dt_s: f64,
    body_id: impl Fn(RigidBodyHandle) -> Option<u16>,
    sums: &mut Vec<(u16, [f64; 3])>,
    contacts: &mut heapless::Vec<ContactForce, MAX_CONTACTS>,
    left_out: &mut u64,
) {
    sums.clear();
    for &env in environment {
        for pair in world.narrow_phase.contact_pairs_with(env) {
            let (other, body_is_first) = if pair.collider1 == env {
                (pair.collider2, false)
            } else {
                (pair.collider1, true)
            };
            let Some(id) = world
                .colliders
                .get(other)
                .and_then(|c| c.parent())
                .and_then(&body_id)
            else {
                continue;
            };
            let on_first = impulse_on_first(pair);
            let sign = if body_is_first { 1.0 } else { -1.0 };
            let f = to_f64(on_first).map(|x| sign * x / dt_s);
            if f.iter().all(|&x| x == 0.0) {
                continue;
            }
            match sums.iter_mut().find(|(i, _)| *i == id) {
                Some((_, sum)) => {
                    for (s, x) in sum.iter_mut().zip(f) {
                        *s += x;
                    }
                }
                None => sums.push((id, f)),
            }
        }
    }
    sums.sort_by_key(|&(id, _)| id);
    contacts.clear();
    for &(id, force_n) in sums.iter() {
        if contacts
            .push(ContactForce {
                body: BodyId(id),
                force_n,
            })
            .is_err()
        {
            *left_out = left_out.saturating_add(1);
        }
    }
}

/// The mass properties of an `<inertial>` in its link's frame: the inertia tensor rotated by the
/// origin's roll–pitch–yaw (R·I·Rᵀ, R = R_z(yaw)·R_y(pitch)·R_x(roll)).
fn mass_properties(inertial: &urdf_rs::Inertial) -> MassProperties {
    let i = &inertial.inertia;
    let tensor = [
        [i.ixx, i.ixy, i.ixz],
        [i.ixy, i.iyy, i.iyz],
        [i.ixz, i.iyz, i.izz],
    ];
    let [roll, pitch, yaw] = inertial.origin.rpy.0;
    let r = Rotation::from_euler(EulerRot::ZYX, yaw as Real, pitch as Real, roll as Real);
    let cols = [r * Vector::X, r * Vector::Y, r * Vector::Z].map(to_f64);
    // R[a][b] = cols[b][a].
    let rm = |a: usize, b: usize| cols[b][a];
    let mut out = [[0.0f64; 3]; 3];
    for (a, row) in out.iter_mut().enumerate() {
        for (b, x) in row.iter_mut().enumerate() {
            *x = (0..3)
                .flat_map(|k| (0..3).map(move |l| (k, l)))
                .map(|(k, l)| rm(a, k) * tensor[k][l] * rm(b, l))
                .sum();
        }
    }
    let o = out.map(|row| row.map(|x| x as Real));
    let matrix = na::Matrix3::new(
        o[0][0], o[0][1], o[0][2], o[1][0], o[1][1], o[1][2], o[2][0], o[2][1], o[2][2],
    );
    MassProperties::with_inertia_matrix(
        v3(inertial.origin.xyz.0),
        inertial.mass.value as Real,
        matrix.into(),
    )
}

/// What the plant needs of a URDF: 1 to MAX_CHAIN_JOINTS joints, revolute or continuous, each with a
/// torque limit, one root, finite masses (> 0 on every moving link, ≥ 0 on the fixed root, at most
/// [`MAX_URDF_MASS_KG`]), finite inertias (entries within ±[`MAX_URDF_INERTIA_KG_M2`]) and
/// origins within ±[`MAX_URDF_LENGTH_M`].
fn check_robot(urdf: &urdf_rs::Robot) -> Result<(), String> {
    let n = urdf.joints.len();
    if n == 0 || n > MAX_CHAIN_JOINTS {
        return Err(format!(
            "{n} joints: the plant simulates 1 to {MAX_CHAIN_JOINTS}"
        ));
    }
    for j in &urdf.joints {
        let name = &j.name;
        match j.joint_type {
            urdf_rs::JointType::Revolute | urdf_rs::JointType::Continuous => {}
            ref other => {
                return Err(format!(
                    "joint `{name}` is {other:?}: only revolute and continuous joints are supported"
                ));
            }
        }
        let e = j.limit.effort;
        if !(e > 0.0 && e <= MAX_TORQUE_LIMIT_NM) {
            return Err(format!(
                "joint `{name}`: <limit effort> (its torque limit) must be greater than 0 and at most {MAX_TORQUE_LIMIT_NM} N·m, got {e}"
            ));
        }
        if j.joint_type == urdf_rs::JointType::Revolute {
            let (lo, hi) = (j.limit.lower, j.limit.upper);
            if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
                return Err(format!(
                    "joint `{name}`: <limit lower upper> must be finite with lower <= upper, got [{lo}, {hi}]"
                ));
            }
        }
        if !j.axis.xyz.0.iter().all(|a| a.is_finite()) || j.axis.xyz.0.iter().all(|&a| a == 0.0) {
            return Err(format!(
                "joint `{name}`: <axis xyz> must be finite and non-zero"
            ));
        }
        if !j
            .origin
            .xyz
            .0
            .iter()
            .chain(&j.origin.rpy.0)
            .all(|a| a.is_finite())
        {
            return Err(format!("joint `{name}`: <origin> must be finite"));
        }
        if let Some(x) = j
            .origin
            .xyz
            .0
            .into_iter()
            .find(|x| x.abs() > MAX_URDF_LENGTH_M)
        {
            return Err(format!(
                "joint `{name}`: <origin xyz> must be within ±{MAX_URDF_LENGTH_M} m, got {x:?}"
            ));
        }
    }
    let mut names = HashSet::new();
    if let Some(l) = urdf.links.iter().find(|l| !names.insert(l.name.as_str())) {
        return Err(format!("two links named `{}`", l.name));
    }
    let mut joint_names = HashSet::new();
    if let Some(j) = urdf
        .joints
        .iter()
        .find(|j| !joint_names.insert(j.name.as_str()))
    {
        return Err(format!("two joints named `{}`", j.name));
    }
    let mut children = HashSet::new();
    for j in &urdf.joints {
        for link in [&j.parent.link, &j.child.link] {
            if !names.contains(link.as_str()) {
                return Err(format!(
                    "joint `{}` names a link `{link}` the file does not have",
                    j.name
                ));
            }
        }
        if !children.insert(j.child.link.as_str()) {
            return Err(format!(
                "link `{}` is the child of two joints: the links must form a tree",
                j.child.link
            ));
        }
    }
    let roots: Vec<&str> = urdf
        .links
        .iter()
        .map(|l| l.name.as_str())
        .filter(|name| !children.contains(name))
        .collect();
    if roots.len() != 1 {
        // The first few named: a file may hold many thousands.
        let shown = roots.get(..8).unwrap_or(&roots).join(", ");
        let more = if roots.len() > 8 { ", …" } else { "" };
        return Err(format!(
            "{} root links ({shown}{more}): the plant fixes exactly one",
            roots.len()
        ));
    }
    // One root and one parent per link: a link the root does not reach is on a loop.
    let mut reached: HashSet<&str> = roots.into_iter().collect();
    while let Some(j) = urdf.joints.iter().find(|j| {
        reached.contains(j.parent.link.as_str()) && !reached.contains(j.child.link.as_str())
    }) {
        reached.insert(j.child.link.as_str());
    }
    if let Some(l) = urdf
        .links
        .iter()
        .find(|l| !reached.contains(l.name.as_str()))
    {
        return Err(format!(
            "link `{}` is on a loop, not reached from the root",
            l.name
        ));
    }
    for l in &urdf.links {
        let m = l.inertial.mass.value;
        let i = &l.inertial.inertia;
        let finite = [i.ixx, i.ixy, i.ixz, i.iyy, i.iyz, i.izz]
            .iter()
            .chain(&l.inertial.origin.xyz.0)
            .chain(&l.inertial.origin.rpy.0)
            .all(|x| x.is_finite());
        if !(m.is_finite() && m >= 0.0 && finite) {
            return Err(format!(
                "link `{}`: <inertial> must have a finite mass >= 0 and finite inertia and origin",
                l.name
            ));
        }
        // The fixed root moves nothing: its mass may be 0 (no <inertial>); every other link's
        // is its weight and inertia, so it must have one.
        let root = !children.contains(l.name.as_str());
        if m > MAX_URDF_MASS_KG || (!root && m <= 0.0) {
            return Err(format!(
                "link `{}`: <inertial><mass value> must be greater than 0 and at most {MAX_URDF_MASS_KG} kg, got {m:?}{}",
                l.name,
                if root {
                    ""
                } else {
                    " (every moving link needs a mass)"
                }
            ));
        }
        if let Some(x) = [i.ixx, i.ixy, i.ixz, i.iyy, i.iyz, i.izz]
            .into_iter()
            .find(|x| x.abs() > MAX_URDF_INERTIA_KG_M2)
        {
            return Err(format!(
                "link `{}`: <inertial><inertia> entries must be within ±{MAX_URDF_INERTIA_KG_M2} kg·m², got {x:?}",
                l.name
            ));
        }
        if let Some(x) = l
            .inertial
            .origin
            .xyz
            .0
            .into_iter()
            .find(|x| x.abs() > MAX_URDF_LENGTH_M)
        {
            return Err(format!(
                "link `{}`: <inertial><origin xyz> must be within ±{MAX_URDF_LENGTH_M} m, got {x:?}",
                l.name
            ));
        }
        // Positive semi-definite: every principal minor >= 0 (to rounding).
        let t = [
            [i.ixx, i.ixy, i.ixz],
            [i.ixy, i.iyy, i.iyz],
            [i.ixz, i.iyz, i.izz],
        ];
        let big = t.iter().flatten().fold(0.0f64, |a, x| a.max(x.abs()));
        let minor2 = |a: usize, b: usize| t[a][a] * t[b][b] - t[a][b] * t[a][b];
        let det = t[0][0] * minor2(1, 2) - t[0][1] * (t[1][0] * t[2][2] - t[1][2] * t[2][0])
            + t[0][2] * (t[1][0] * t[2][1] - t[1][1] * t[2][0]);
        let eps = 1e-12;
        if [t[0][0], t[1][1], t[2][2]].iter().any(|&d| d < -eps * big)
            || [minor2(0, 1), minor2(0, 2), minor2(1, 2)]
                .iter()
                .any(|&d| d < -eps * big * big)
            || det < -eps * big * big * big
        {
            return Err(format!(
                "link `{}`: <inertia> is not a possible inertia tensor (not positive semi-definite)",
                l.name
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::PlantScene;

    fn arm3() -> PathBuf {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../models/arm3.urdf")).to_path_buf()
    }

    fn parse(json: &str) -> Result<ChainScene, SceneError> {
        ChainScene::from_json_str(json, Path::new("/scenes/s.json"))
    }

    fn build(scene: &ChainScene) -> SceneError {
        ChainPlant::new(scene).unwrap_err()
    }

    /// A URDF in a temporary file.
    fn urdf_file(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sim-host-chain-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    const MIN: &str =
        r#""kind": "chain", "urdf": "a.urdf", "end_time_s": 1, "gravity_m_s2": [0, -9.81, 0]"#;

    #[test]
    fn a_minimal_chain_scene_gets_the_defaults_and_its_urdf_is_resolved_against_the_file() {
        let s = parse(&format!("{{{MIN}}}")).unwrap();
        assert_eq!(s.kind, ChainKind::Chain);
        assert_eq!(s.urdf, Path::new("/scenes/a.urdf"));
        assert_eq!((s.dt_s, s.total_steps()), (0.005, 200));
        assert!(s.initial_positions_rad.is_empty() && s.pushes.is_empty());
        let s = parse(&format!("{{{}}}", MIN.replace("a.urdf", "/models/a.urdf"))).unwrap();
        assert_eq!(s.urdf, Path::new("/models/a.urdf"));
        // Round trip through JSON.
        let back =
            ChainScene::from_json_str(&serde_json::to_string(&s).unwrap(), Path::new("x")).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn chain_scene_errors_name_the_field_and_the_reason() {
        let cases: &[(&str, &str, &str)] = &[
            (r#", "dt_s": 0"#, "dt_s", "must be between"),
            (r#", "dt_s": "fast""#, "dt_s", "invalid type"),
            (
                r#", "initial_positions_rad": [0, 1e9]"#,
                "initial_positions_rad[1]",
                "got 1000000000",
            ),
            (
                r#", "initial_velocities_rad_s": [0,0,0,0,0,0,0,0,0]"#,
                "initial_velocities_rad_s",
                "at most 8 joints",
            ),
            (
                r#", "pushes": [{"body": "", "force_n": [0,0,0], "start_s": 0, "duration_s": 1}]"#,
                "pushes[0].body",
                "must name a link",
            ),
            (
                r#", "pushes": [{"body": "hand", "force_n": [0,1e7,0], "start_s": 0, "duration_s": 1}]"#,
                "pushes[0].force_n[1]",
                "must be between",
            ),
            (
                r#", "pushes": [{"body": "hand", "force_n": [0,0,0], "start_s": -1, "duration_s": 1}]"#,
                "pushes[0].start_s",
                "must be between",
            ),
            (
                r#", "pushes": [{"body": "hand", "force_n": [0,0,0], "start_s": 0}]"#,
                "pushes[0]",
                "missing field `duration_s`",
            ),
            (r#", "gravity": 3"#, "gravity", "unknown field `gravity`"),
            (
                r#", "walls": [{"center_m": [0,0,0], "half_extents_m": [1,0,1]}]"#,
                "walls[0].half_extents_m[1]",
                "must be greater than 0 and at most 100, got 0",
            ),
            (
                r#", "walls": [{"center_m": [0,0,0], "half_extents_m": [1,1,101]}]"#,
                "walls[0].half_extents_m[2]",
                "at most 100",
            ),
            (
                r#", "walls": [{"center_m": [0,0,0], "half_extents_m": [1,1,1]}, {"center_m": [0,2e3,0], "half_extents_m": [1,1,1]}]"#,
                "walls[1].center_m[1]",
                "must be between -1000 and 1000",
            ),
            (
                r#", "walls": [{"center_m": [0,0,0]}]"#,
                "walls[0]",
                "missing field `half_extents_m`",
            ),
            (
                r#", "walls": [{"center_m": [0,0,0], "half_extents_m": [1,1,1], "friction": 1}]"#,
                "walls[0].friction",
                "unknown field `friction`",
            ),
        ];
        for (extra, field, reason) in cases {
            let e = parse(&format!("{{{MIN}{extra}}}")).unwrap_err();
            assert_eq!(e.field, *field, "{extra}: {e}");
            assert!(e.reason.contains(reason), "{extra}: {e}");
        }
        let e = parse(&format!("{{{}}}", MIN.replace(": 1,", ": -1,"))).unwrap_err();
        assert_eq!(e.field, "end_time_s");
        let e = parse(&format!("{{{}}}", MIN.replace("-9.81", "-1e4"))).unwrap_err();
        assert_eq!(e.field, "gravity_m_s2[1]");
        let e = parse(r#"{"kind": "chain", "urdf": "a.urdf", "end_time_s": 1}"#).unwrap_err();
        assert!(e.reason.contains("missing field `gravity_m_s2`"), "{e}");
        let e = parse(&format!(
            "{{{}}}",
            MIN.replace(r#""kind": "chain""#, r#""kind": "arm""#)
        ))
        .unwrap_err();
        assert_eq!(e.field, "kind");
        let e = parse(&format!(
            "{{{}}}",
            MIN.replace(r#""urdf": "a.urdf""#, r#""urdf": """#)
        ))
        .unwrap_err();
        assert_eq!(e.field, "urdf");
        // Non-finite values built in memory.
        let mut s = ChainScene::new("a.urdf", 1.0, [0.0, f64::NAN, 0.0]);
        assert_eq!(s.validate().unwrap_err().0, "gravity_m_s2[1]");
        s.gravity_m_s2 = [0.0; 3];
        s.initial_velocities_rad_s = vec![f64::INFINITY];
        assert_eq!(s.validate().unwrap_err().0, "initial_velocities_rad_s[0]");
        s.initial_velocities_rad_s = vec![];
        s.walls = vec![
            Wall {
                center_m: [0.0; 3],
                half_extents_m: [1.0; 3],
            };
            MAX_WALLS + 1
        ];
        let (field, reason) = s.validate().unwrap_err();
        assert_eq!(field, "walls");
        assert!(reason.contains("at most 8"), "{reason}");
        s.walls.truncate(MAX_WALLS);
        assert!(s.validate().is_ok());
        s.walls[3].center_m[2] = f64::NAN;
        assert_eq!(s.validate().unwrap_err().0, "walls[3].center_m[2]");
        s.walls[3].center_m[2] = 0.0;
        s.walls[3].half_extents_m[0] = f64::INFINITY;
        assert_eq!(s.validate().unwrap_err().0, "walls[3].half_extents_m[0]");
    }

    #[test]
    fn a_scene_file_is_an_arm_scene_unless_its_kind_says_chain() {
        let arm = r#"{"end_time_s": 1, "arm": {"length_m": 1, "thickness_m": 0.1, "mass_kg": 2, "gravity_m_s2": 9.8, "torque_limit_nm": 100}}"#;
        let f = Path::new("/scenes/s.json");
        assert!(matches!(
            PlantScene::from_json_str(arm, f),
            Ok(PlantScene::Arm(_))
        ));
        assert!(matches!(
            PlantScene::from_json_str(&format!("{{{MIN}}}"), f),
            Ok(PlantScene::Chain(_))
        ));
        let e = PlantScene::from_json_str(
            &format!("{{{}}}", MIN.replace("\"chain\"", "\"rowboat\"")),
            f,
        )
        .unwrap_err();
        assert_eq!(e.field, "kind");
        assert!(e.reason.contains(r#"unknown scene kind "rowboat""#), "{e}");
        // Not an object, or broken: the arm scene's errors, as before.
        let e = PlantScene::from_json_str("{", f).unwrap_err();
        assert_eq!(e.field, "(document)");
        let e = PlantScene::from_json_str("[1]", f).unwrap_err();
        assert_eq!(e.field, "(document)");
        // The arm scene's checks still apply.
        let e = PlantScene::from_json_str(&arm.replace("\"mass_kg\": 2", "\"mass_kg\": -2"), f)
            .unwrap_err();
        assert_eq!(e.field, "arm.mass_kg");
        // The example files of both kinds load.
        for (name, chain) in [
            ("example.json", false),
            ("arm3.json", true),
            ("arm3_wall.json", true),
        ] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scenes")
                .join(name);
            let s = PlantScene::load(&path).unwrap();
            assert_eq!(matches!(s, PlantScene::Chain(_)), chain, "{name}");
        }
    }

    #[test]
    fn the_plant_checks_the_scene_against_the_urdf() {
        let mut s = ChainScene::new(arm3(), 1.0, [0.0, -9.81, 0.0]);
        assert!(ChainPlant::new(&s).is_ok());
        s.initial_positions_rad = vec![0.0, 0.5];
        let e = build(&s);
        assert_eq!(e.field, "initial_positions_rad");
        assert!(e.reason.contains("2 values for the 3 joints"), "{e}");
        s.initial_positions_rad = vec![0.0, -0.1, 0.0];
        let e = build(&s);
        assert_eq!(e.field, "initial_positions_rad[1]");
        assert!(
            e.reason
                .contains("joint `elbow` is limited to [0, 2.6179938779914944] rad, got -0.1"),
            "{e}"
        );
        s.initial_positions_rad = vec![];
        s.initial_velocities_rad_s = vec![1.0; 4];
        assert_eq!(build(&s).field, "initial_velocities_rad_s");
        s.initial_velocities_rad_s = vec![];
        s.pushes.push(Push {
            body: String::from("base"),
            force_n: [1.0, 0.0, 0.0],
            start_s: 0.0,
            duration_s: 1.0,
        });
        let e = build(&s);
        assert_eq!(e.field, "pushes[0].body");
        assert!(e.reason.contains("fixed root"), "{e}");
        s.pushes[0].body = String::from("hand");
        assert!(ChainPlant::new(&s).is_ok());
        s.urdf = PathBuf::from("/nonexistent/arm.urdf");
        let e = build(&s);
        assert_eq!(
            (e.file.to_str(), e.field.as_str()),
            (Some("(in memory)"), "urdf")
        );
        assert!(
            e.reason.starts_with("/nonexistent/arm.urdf: cannot load"),
            "{e}"
        );
    }

    /// What the plant refuses in a URDF, naming the element.
    #[test]
    fn urdfs_the_plant_cannot_simulate_are_refused() {
        let text = std::fs::read_to_string(arm3()).unwrap();
        let cases: &[(&str, &str, &str)] = &[
            (
                r#"<joint name="elbow" type="revolute">"#,
                r#"<joint name="elbow" type="prismatic">"#,
                "joint `elbow` is Prismatic: only revolute and continuous",
            ),
            (
                r#"effort="15""#,
                r#"effort="0""#,
                "joint `wrist`: <limit effort>",
            ),
            (
                r#"effort="80""#,
                r#"effort="2e6""#,
                "joint `shoulder`: <limit effort>",
            ),
            (
                r#"<limit lower="0" upper="2.6179938779914944""#,
                r#"<limit lower="1" upper="0""#,
                "joint `elbow`: <limit lower upper>",
            ),
            (
                r#"<mass value="1.2"/>"#,
                r#"<mass value="-1.2"/>"#,
                "link `forearm`: <inertial>",
            ),
            (
                r#"<mass value="1.2"/>"#,
                r#"<mass value="1e300"/>"#,
                "link `forearm`: <inertial><mass value> must be greater than 0 and at most 1000000 kg, got 1e300",
            ),
            (
                r#"<inertia ixx="0.0007938""#,
                r#"<inertia ixx="1e300""#,
                "link `forearm`: <inertial><inertia> entries must be within ±1000000 kg·m², got 1e300",
            ),
            (
                r#"<origin xyz="0.30 0 0" rpy="0 0 0"/>"#,
                r#"<origin xyz="1e308 0 0" rpy="0 0 0"/>"#,
                "joint `elbow`: <origin xyz> must be within ±1000 m, got 1e308",
            ),
            (
                r#"<link name="base"/>"#,
                r#"<link name="base"/><link name="extra"/>"#,
                "2 root links (base, extra)",
            ),
            ("<robot", "<rowboat", "cannot load"),
            (
                r#"<child link="hand"/>"#,
                r#"<child link="palm"/>"#,
                "joint `wrist` names a link `palm` the file does not have",
            ),
            (
                r#"<joint name="wrist""#,
                r#"<joint name="elbow""#,
                "two joints named `elbow`",
            ),
            (
                r#"<inertia ixx="0.0007938" ixy="0""#,
                r#"<inertia ixx="0.0007938" ixy="0.01""#,
                "link `forearm`: <inertia> is not a possible inertia tensor",
            ),
        ];
        for (i, (from, to, reason)) in cases.iter().enumerate() {
            assert!(text.contains(from), "{from}");
            let path = urdf_file(&format!("bad{i}.urdf"), &text.replacen(from, to, 1));
            let e = build(&ChainScene::new(&path, 1.0, [0.0; 3]));
            assert_eq!(e.field, "urdf");
            assert!(e.reason.contains(reason), "{to}: {e}");
            assert!(e.reason.starts_with(path.to_str().unwrap()), "{e}");
        }
        // A hand without mass at the end of the chain: the wrist moves nothing.
        let massless = text
            .replacen(r#"<mass value="0.45"/>"#, r#"<mass value="0"/>"#, 1)
            .replacen(
                r#"ixx="0.000294375" ixy="0" ixz="0"
               iyy="0.0016246875" iyz="0" izz="0.0013771875""#,
                r#"ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0""#,
                1,
            );
        let e = build(&ChainScene::new(
            urdf_file("massless.urdf", &massless),
            1.0,
            [0.0; 3],
        ));
        assert!(
            e.reason.contains(
                "link `hand`: <inertial><mass value> must be greater than 0 and at most 1000000 kg, got 0.0 (every moving link needs a mass)"
            ),
            "{e}"
        );
        // Massless but with an inertia (so that the mass matrix is not singular): refused too.
        let e = build(&ChainScene::new(
            urdf_file(
                "massless2.urdf",
                &text.replacen(r#"<mass value="0.45"/>"#, r#"<mass value="0"/>"#, 1),
            ),
            1.0,
            [0.0; 3],
        ));
        assert!(
            e.reason.contains("link `hand`: <inertial><mass value>"),
            "{e}"
        );
        // Nested 100 000 elements deep: refused before any parser sees it.
        let deep = text.replacen(
            "</robot>",
            &format!(
                "{}{}</robot>",
                "<x>".repeat(100_000),
                "</x>".repeat(100_000)
            ),
            1,
        );
        let e = build(&ChainScene::new(
            urdf_file("deep.urdf", &deep),
            1.0,
            [0.0; 3],
        ));
        assert!(e.reason.contains("nested deeper than 64 levels"), "{e}");
        // Nine joints: more than a frame carries.
        let mut nine = String::from(r#"<robot name="nine"><link name="l0"/>"#);
        for k in 1..=9 {
            nine += &format!(
                r#"<link name="l{k}"><inertial><origin xyz="0.05 0 0"/><mass value="1"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
                <joint name="j{k}" type="continuous"><parent link="l{}"/><child link="l{k}"/><origin xyz="0.1 0 0"/><axis xyz="0 0 1"/><limit effort="10" velocity="1"/></joint>"#,
                k - 1
            );
        }
        nine += "</robot>";
        let e = build(&ChainScene::new(
            urdf_file("nine.urdf", &nine),
            1.0,
            [0.0; 3],
        ));
        assert!(
            e.reason.contains("9 joints: the plant simulates 1 to 8"),
            "{e}"
        );
    }

    /// rapier3d-urdf 0.36 ignores an `<inertial><origin rpy>`; the plant rotates the inertia into
    /// the link frame itself. A one-link pendulum whose inertial frame is rolled 90° about x (its
    /// iyy of 0.05 becomes the link's izz) shows the corrected inertia about its z axis:
    /// M = 0.05 + m d² (unrotated it would be 0.01 + m d²).
    #[test]
    fn a_rotated_inertial_is_rotated_into_the_link_frame() {
        let urdf = |rpy: &str| {
            format!(
                r#"<robot name="one"><link name="base"/>
                <link name="bar"><inertial><origin xyz="0.2 0 0" rpy="{rpy}"/><mass value="2"/>
                <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.05" iyz="0" izz="0.01"/></inertial></link>
                <joint name="hinge" type="continuous"><parent link="base"/><child link="bar"/>
                <axis xyz="0 0 1"/><limit effort="10" velocity="1"/></joint></robot>"#
            )
        };
        let md2 = 2.0 * 0.2 * 0.2;
        for (name, rpy, izz) in [
            ("plain", "0 0 0", 0.01),
            ("rolled", "1.5707963267948966 0 0", 0.05),
        ] {
            let path = urdf_file(&format!("{name}.urdf"), &urdf(rpy));
            let mut p = ChainPlant::new(&ChainScene::new(&path, 1.0, [0.0; 3])).unwrap();
            let m = p.mass_matrix()[0][0];
            assert!(
                (m / (izz + md2) - 1.0).abs() < 1e-5,
                "{name}: {m} vs {}",
                izz + md2
            );
        }
    }

    /// Torques and pushes act as documented: a torque on the elbow alone turns the forearm and, by
    /// reaction, the upper arm the other way (the shoulder gets no torque of its own); a push along
    /// +y on the hand of the straight, weightless arm, from the step it starts, gives the chain the
    /// angular momentum about the shoulder of its angular impulse.
    #[test]
    fn joint_torques_are_equal_and_opposite_and_pushes_push() {
        let mut s = ChainScene::new(arm3(), 0.1, [0.0; 3]);
        s.initial_positions_rad = vec![0.0, 1.0, 0.0];
        let mut p = ChainPlant::new(&s).unwrap();
        let f = p.step(&[0.0, 2.0]);
        let v: Vec<f64> = f.joints.iter().map(|j| j.velocity_rad_s).collect();
        assert!(v[1] > 0.0 && v[0] < 0.0, "{v:?}");
        // The chain's angular momentum about the fixed shoulder, M[0]·q̇, comes from the shoulder
        // torque only: with none (and no gravity) it stays 0, up to the integration error
        // (measured 5e-6). Had the elbow's torque acted on the forearm alone, the shoulder would
        // have felt it too: τ·dt = 1e-2.
        let m = p.mass_matrix();
        let l0: f64 = (0..3).map(|j| m[0][j] * v[j]).sum();
        assert!(l0.abs() < 1e-3 * 2.0 * 0.005, "{l0}");

        let mut s = ChainScene::new(arm3(), 0.1, [0.0; 3]);
        s.pushes.push(Push {
            body: String::from("hand"),
            force_n: [0.0, 10.0, 0.0],
            start_s: 0.005,
            duration_s: 0.05,
        });
        let mut p = ChainPlant::new(&s).unwrap();
        let f = p.step(&[]);
        assert!(f.joints.iter().all(|j| j.velocity_rad_s == 0.0), "not yet");
        let mut f = p.step(&[]);
        assert!(f.joints[2].velocity_rad_s > 0.0, "{f:?}");
        while !p.is_finished() {
            f = p.step(&[]);
        }
        // After the push, momentum about the shoulder is what the push gave it: constant.
        let m = p.mass_matrix();
        let v: Vec<f64> = f.joints.iter().map(|j| j.velocity_rad_s).collect();
        let l: f64 = (0..3).map(|j| m[0][j] * v[j]).sum();
        // 10 N at 0.665 m for 0.05 s (the hand's centre, the arm nearly straight).
        println!(
            "angular momentum about the shoulder after the push: {l:.5} N·m·s, impulse 10 N × 0.665 m × 0.05 s = {:.5}",
            10.0 * 0.665 * 0.05
        );
        assert!((l / (10.0 * 0.665 * 0.05) - 1.0).abs() < 0.05, "{l}");
    }
}
