//! One Rapier plant for any robot: built from the shared robot model (`robot_model::RobotModel`,
//! the same value the controller builds its `control_core::tree::Tree` from), stepped with one
//! generalized force per joint, reporting joint states, the bodies' world motion and the
//! environment's contact forces as wire [`StateFrame`]s through the host loops
//! ([`crate::host`]). Hosted as `"kind": "robot"` scenes ([`RobotScene`]).
//!
//! The description is read once, by `robot_model::load` (fixed joints merged, meshes resolved,
//! mimic joints, missing meshes and a floating base as the scene's loading options say): this
//! module builds the Rapier plant from that [`RobotModel`], and the controller builds its tree
//! from the same value ([`RobotModel::tree`]), so the two share every number.
//!
//! ```
//! use sim_host::robot::{RobotPlant, RobotScene};
//! let urdf = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/arm3.urdf");
//! let mut scene = RobotScene::new(urdf, 1.0);
//! scene.gravity_m_s2 = [0.0, -9.81, 0.0]; // arm3 is described y-up
//! let mut plant = RobotPlant::new(&scene).unwrap();
//! assert_eq!(plant.joint_names(), ["shoulder", "elbow", "wrist"]);
//! let frame = plant.step(&[1.0, 0.0, 0.0]);
//! assert_eq!((frame.joints.len(), frame.bodies.len()), (3, 4));
//! ```
//!
//! # What is built
//! - **Bodies**: one Rapier rigid body per model body (body 0 the base, body k + 1 joint k's
//!   child), `can_sleep(false)`. Its mass, centre of mass and inertia are the body's merged
//!   `Inertial`, given whole (`additional_mass_properties`, f32 as all of Rapier here); its
//!   colliders have density 0. Every moving body needs a mass > 0 (refused naming the link
//!   otherwise), or none at all, no inertia either, while it carries a body that has mass (a
//!   massless frame between chained joints: a zero-mass link of Rapier's multibody, whose mass
//!   matrix is then singular where the chained axes line up, gimbal lock). A moving body's **Rapier frame is its principal inertia frame**: origin at its
//!   centre of mass, axes its principal axes with the smallest moment on x (the inertia
//!   decomposed here, in f64, cyclic Jacobi), so Rapier holds `MassProperties::new(0, m,
//!   moments)`; a fixed base's is its model frame. Everything the plant takes or gives is in
//!   the model's frames: it converts (colliders, joint frames, base pose, body orientations).
//! - **Why** (Rapier 0.36 / parry 0.31 / glamx 0.3): parry's
//!   `MassProperties::with_inertia_matrix`, which Rapier also runs on every body whenever it
//!   sums its colliders' mass properties (`recompute_mass_properties_from_colliders`, via
//!   `impl Add for MassProperties`), takes its eigenvectors from glamx's `SymmetricEigen3`, whose
//!   `eigenvector1` returns x as the axis of the **smallest** eigenvalue whenever its largest
//!   squared cross product is below an absolute 1e-20 (meant for a triple eigenvalue; glamx
//!   0.3.1 `src/eigen3.rs`, `if d_max < 1e-20 { return X }`). That is ((λ₂ − λ₁)(λ₃ − λ₁))² <
//!   1e-20 for a diagonal inertia: any link of some grams (inertias ~1e-5 kg·m²). The smallest
//!   moment then goes about x whatever its axis: SO-100's jaw (diagonal, descending: ixx 1.11e-5,
//!   izz 3.0e-6) came back with ixx and izz swapped, its gripper joint (about its z) seeing
//!   ixx + m·d² = 2.98e-5 instead of Pinocchio's 2.17e-5 kg·m² (Panda's fingers, ixx = iyy =
//!   2.4e-6 and izz 7.5e-7: 4.9e-4 off on joint 7's diagonal). Given a diagonal, ascending inertia at the frame's origin, every decomposition
//!   Rapier makes finds it exactly (the sum with the massless colliders stays exactly diagonal;
//!   x is right for the smallest). Unit test
//!   `a_descending_inertia_on_a_turned_joint_is_about_the_right_axis`; after: Panda, UR5, Talos's
//!   left arm and SO-100 within 2.5e-6 of the tree (measured below).
//! - **Shapes**: one collider per `<collision>` shape, at its placement on the body: boxes,
//!   spheres, capsules (`capsule_z`, URDF's axis) and cylinders (Rapier's cylinder is along y:
//!   turned +90° about x to lie along z). A mesh, with `collision: "convex_hull"` (the default),
//!   is the **convex hull of its vertices** scaled by its `scale` (`SharedShape::convex_hull`,
//!   parry's `try_convex_hull`): STL binary (read here: some exporters start a binary file's
//!   header with `solid`, which mesh-loader takes for ASCII) and ASCII, Collada `.dae` (node
//!   transforms and `<unit>` applied; an `<up_axis>` other than `Z_UP` does not rotate the
//!   geometry, as RViz and MoveIt read it, and the notes name the file) and Wavefront `.obj`
//!   (materials not read), read with `mesh-loader`
//!   0.1.13 through `rapier3d-meshloader` 0.36 (Rapier's mesh loader, with its `stl`,
//!   `collada` and `wavefront` features). A mesh that cannot be read, is larger than
//!   [`MAX_MESH_BYTES`], holds more than [`MAX_MESH_VERTICES`] vertices or a non-finite one, or
//!   whose hull has no volume (flat) refuses the scene, naming the link and the file; a reader or
//!   hull computation that panics is caught and refused the same way. With `collision:
//!   "primitives_only"` meshes are not loaded, and [`RobotPlant::notes`] lists them.
//! - **Joints**: Rapier **multibody** joints (reduced coordinates: joint
//!   positions and velocities are the multibody's own coordinates, exact), inserted parents first: a
//!   generic joint with every axis locked but one, angular x (revolute) or linear x (prismatic),
//!   its frame on the parent the joint's origin turned so that x is the joint's axis
//!   (`local_frame1` = F_p⁻¹·origin·U, `local_frame2` = F_c⁻¹·U, U taking x to the unit axis,
//!   F_p and F_c the parent's and the child's Rapier frames in their model frames). Position
//!   limits are Rapier multibody limits on that axis (`GenericJointBuilder::limits`; they push
//!   only while a joint is beyond them; continuous joints have none); `<limit velocity>` is not
//!   enforced (a controller's business). Bodies joined by a joint never collide
//!   (`contacts_enabled(false)`).
//! - **Damping and friction**: Rapier's default damping of every multibody DoF (0.1 on angular
//!   ones, the floating root's included) is cleared, then each joint's URDF `<dynamics damping>`
//!   is set as that DoF's damping (`Multibody::damping_mut`: a generalized force −d·q̇, implicit:
//!   d·dt on the mass matrix's diagonal, in each of the solver's 4 substeps) and its `<dynamics
//!   friction>` as that DoF's dry friction (`Multibody::frictions_mut`, Rapier 0.36's MuJoCo-like
//!   `frictionloss`: a velocity constraint towards 0 whose impulse is bounded by friction·dt, so
//!   a generalized force up to the friction holds the joint and a larger one moves it against
//!   exactly that much: Coulomb friction). Nothing else acts on the joints. A scene may leave the
//!   friction out (`ignore_joint_friction: true`), and the notes say on which joints.
//! - **Base**: a **fixed** base is a fixed rigid body, the multibody's root, welded at the
//!   scene's `base_xyz_m`/`base_rpy_rad` composed with the model's `base_placement` (the pose a
//!   URDF `world` joint gives). A **floating** base is a dynamic root (Rapier's free root joint,
//!   6 DoFs) starting at the scene's pose. Its Rapier body frame (its principal frame, as every
//!   moving body's) is **at the base's centre of mass**, which a free root needs: Rapier 0.36
//!   integrates a free root's position as if its
//!   generalized linear velocity were that of the root body's frame origin while its dynamics
//!   take it for that of its centre of mass, so with the two apart a freely spinning base drags
//!   its centre of mass around its origin (measured 0.5 m off after 1 s for a centre 0.5 m from
//!   the origin); with the frame at the centre of mass the two agree (the unit test
//!   `a_floating_base_spinning_freely_keeps_its_momentum`: 2.2e-5 m off a straight line after
//!   1 s). Every readout converts back to the base frame.
//! - **Environment**: `ground`, a static half-space z ≤ `height_m` with its friction; `walls`,
//!   static axis-aligned boxes with friction [`WALL_FRICTION`] (0.5). The robot's colliders have
//!   friction 1 and the friction combine rule `Multiply` on both sides, so the coefficient
//!   between the robot and the ground (a wall) is the ground's (the wall's). No restitution;
//!   Rapier's default contact softness and 4 solver substeps. Self-collision is off unless the
//!   scene's `self_collision` (robot colliders in group 2 colliding with group 1, the
//!   environment's; and with group 2 too when on).
//! - **Props**: `balls` and `weights`, built as the arm's and the humanoid's: dynamic spheres
//!   and boxes, continuous collision detection on, appearing at their spawn step with their
//!   velocity, friction [`PROP_FRICTION`] (0.5, by product). They are in the environment's
//!   group 1 and their own group 3 and collide with everything (the ground and walls filter
//!   groups 2 and 3). Never removed.
//! - **Start**: the joints at the scene's `initial_q` (by name; others at 0, which must lie
//!   within their limits: a joint whose limits exclude 0 must be named, or the scene is refused
//!   naming it), at rest. The mass matrix must be positive definite there, every Cholesky
//!   pivot above 1e-6 of its diagonal entry (a joint whose motion the ones before it already
//!   make, through massless links, is refused naming it).
//!
//! # Conventions
//! - Joint order (frames, torques, every per-joint list) is the model's: depth first from the
//!   base, parents first ([`RobotPlant::joint_names`]). Body order is the model's body order
//!   ([`RobotPlant::body_names`]); a URDF link merged into a body names that body
//!   ([`RobotPlant::link_body_id`]).
//! - The world is the scene's: URDF is z-up, gravity defaults to (0, 0, −9.81).
//! - Generalized velocities: the plant's accessors that take or give them do so in **Pinocchio's
//!   convention** (the controller's tree's): for a floating base, (v, ω), the linear velocity of
//!   the base frame's origin and the angular velocity, both in the base frame, then the joints.
//!   Rapier's own generalized velocity of a floating base is (the world velocity of the base's
//!   centre of mass, the world angular velocity): v_rapier = T·v_pinocchio with
//!   T = `[[R, −R·[c]×], [0, R]]` on the base block and the identity on the joints, R the base's
//!   world rotation and c the base body's centre of mass in the base frame
//!   ([`RobotPlant::velocity_transform`]). So M_pinocchio = Tᵀ·M_rapier·T
//!   ([`RobotPlant::mass_matrix_base_frame`]) and generalized forces τ_pinocchio =
//!   Tᵀ·τ_rapier.
//!
//! # Wire
//! - **State frame**: sequence = step index; the joints' positions and velocities (rad, rad/s;
//!   m, m/s for a prismatic joint), model order, at most [`MAX_ROBOT_JOINTS`] (48, a frame's
//!   capacity: more is refused at load); the bodies' world motion, the first [`MAX_BODIES`] (16)
//!   in body order, the base first ([`BodyMotion`]: the body's centre of mass, its frame's
//!   orientation body → world, its centre of mass's velocity and its **angular velocity, world
//!   frame**; for a floating base, body 0 is its pose and velocity; the base origin is
//!   com − R·c; an orientation is Rapier's f32 quaternion, renormalized only once its drift would
//!   leave a frame's `UNIT_QUATERNION_TOLERANCE`); bodies beyond 16 are left out of every frame ([`RobotPlant::bodies_left_out`],
//!   named in the notes); contact forces: for each body, the environment's (ground's and walls';
//!   not the props') force on it during the step, summed over its contacts from the solver's normal and friction
//!   impulses ([`crate::environment`]) over dt, world frame, N; at most
//!   [`MAX_CONTACTS`] (4), in body order, the rest counted ([`RobotPlant::contacts_left_out`]);
//!   events: `ContactBegan` / `ContactEnded` when a prop starts or stops touching the robot (its
//!   id; at most [`MAX_EVENTS`] a frame, the rest in the following frames, beyond 256 waiting
//!   dropped and counted: [`RobotPlant::events_left_out`]).
//!   Rapier leaves a multibody's bodies a substep behind at the end of a step (their centres of
//!   mass and velocities are refreshed at the start of the next); the plant refreshes them after
//!   each step from the multibody's coordinates, so what it reports is the state the step ended
//!   in.
//! - **Torque frame**: one generalized force per joint, model order (N·m, or N for a prismatic
//!   joint), held for the step. Revolute joint k: +τ s on its child and −τ s on its parent (none
//!   on a fixed base), s the joint's world axis at the step's start. Prismatic joint k: +f s on
//!   the child and −f s on the parent, both at the same world point (the joint frame's origin on
//!   the parent), so no couple: the generalized force is f on joint k and 0 on every other
//!   joint and on a floating base (measured below). Each joint's limit is its URDF `<limit
//!   effort>`, required (greater than 0, at most [`MAX_TORQUE_LIMIT_NM`]) for every joint:
//!   [`RobotPlant::check_torques`] names the first value with |τ| > effort (NaN counts as
//!   beyond; a non-zero value past the last joint too), and the host refuses such a frame whole,
//!   counted; never clamped. Stepping applies what it is given.
//! - Pushes: a constant world force at a body's centre of mass for the steps k with
//!   round(start_s/dt) ≤ k < round(start_s/dt) + round(duration_s/dt).
//!
//! # Reading the dynamics (for tests and the harness's checks)
//! - [`RobotPlant::mass_matrix`]: Rapier's own joint-space mass matrix (floating base DoFs
//!   included): forward kinematics and world inertias
//!   refreshed, `Multibody::dof_inverse_inertia` re-assembles it at dt = 0 (M plus armature,
//!   which is 0), M rebuilt from the LU factorization (`inv_augmented_mass`) as P⁻¹·L·U; in
//!   Rapier's convention. [`RobotPlant::mass_matrix_base_frame`]: in Pinocchio's.
//! - [`RobotPlant::generalized_gravity`]: Pinocchio's g(q) (what holds the robot still) from
//!   Rapier's bodies: −Tᵀ·Σ_b J_bᵀ·(m_b g, 0), J_b Rapier's body Jacobian.
//! - [`RobotPlant::centre_of_mass`]: Σ m_b c_b / Σ m_b over Rapier's moving bodies (a fixed
//!   base left out, as the tree does).
//! - [`RobotPlant::set_state`] / [`RobotPlant::set_configuration`]: a base pose and joint
//!   positions (and velocities), for an offline replica posed along a recorded motion.
//!
//! # Measured (`tests/robot.rs`, unit tests here; dt 5 ms unless said)
//! Against the controller's tree (`control_core::tree::Tree`, f64) built from the same model, at
//! 20 random poses each (random base poses for the floating ones; relative errors are the
//! largest entry difference over the largest entry; Rapier is f32):
//! - a hand-written fixed-base tree (prismatic, revolute, continuous, a fixed joint merged, a
//!   branch, a binary and an ASCII STL hull): mass matrix 7.7e-8 (diagonal entries 1.1e-6 each),
//!   centre of mass 9.5e-8 m, gravity 1.5e-7;
//! - a hand-written floating tree (prismatic and revolute joints, a merged link off-centre):
//!   mass matrix 7.8e-7 (diagonal 1.2e-6), centre of mass 4.1e-8 m, gravity 2.5e-7;
//! - Solo-12 (floating, 18 DoFs, convex hulls of its 17 STL meshes, built in 80–160 ms): mass
//!   matrix 4.7e-7 (diagonal 4.5e-6), centre of mass 3.5e-8 m, gravity 2.1e-7;
//! - fixed-base arms, STL hulls (before the principal frames, in parentheses): Panda (9
//!   joints, mimic finger independent) mass matrix 2.4e-6 (4.5e-6), diagonal 2.8e-6 (4.9e-4),
//!   gravity 1.4e-6; UR5 2.5e-6 (2.1e-6), diagonal 2.6e-6 (3.9e-6), gravity 1.8e-6; Talos's
//!   left arm 1.8e-6 (1.9e-6), diagonal 4.0e-6 (6.8e-6), gravity 8.7e-7; SO-100 2.4e-6
//!   (4.1e-3), diagonal 4.5e-6 (0.37), gravity 1.2e-6 (gravity never depended on the axes);
//!   SO-100's diagonal at q = 0 is Pinocchio's to its 5 digits.
//! - A generalized force on one joint (sized for 1e-3 rad/s in one step, dt 1 ms, from rest,
//!   zero gravity), measured as M·Δv/dt: 1 ± 1e-6 of it on the joint, at most 6.5e-6 of it on
//!   any other joint (fixed base; 4.5e-8 for the prismatic one) and 1.6e-5 on any other joint or
//!   base DoF (floating base; 4.2e-7 for the prismatic one).
//! - Gravity compensation by the tree's g(q), 1 s: Panda (9 joints, mimic finger independent,
//!   STL hulls) drifts 1.4e-6 rad, speeds up to 1.9e-5 rad/s (joint 6 at 1.571 rad, where one
//!   f32 step of its position is 1.2e-7 rad: 2.4e-5 rad/s over a step; torques up to 25 % of
//!   the limits); Talos's left arm (7 joints, URDF damping 1 and friction 1 applied; its 6
//!   gripper mimics are on fixed joints, ignored by the loader with notes) does not move (speeds
//!   up to 1.2e-8 rad/s; 4.9e-6 rad/s with its friction left out, below one f32 step of its
//!   positions per step); both fall without the compensation.
//! - Solo-12 standing on the ground (friction 1) in its nominal pose under a joint PD (kp 6,
//!   kd 0.15, no feed-forward, dt 1 ms) for 2 s: the base settles 1.1 cm (0.2320 → 0.2212 m,
//!   never below 0.2185 m), the joints within 0.086 rad of the pose after 1 s, the four feet's
//!   ground forces sum to the weight (24.53 N) within 0.1 %. Step cost: median 0.26–0.40 ms per
//!   1 ms step on a loaded 2-vCPU VM (0.27 ms in the air, 0.24 ms on the ground with primitive
//!   shapes only): Rapier's dense 18-DoF multibody, 4 substeps.
//! - Joint friction 2 N·m: held under 1.9 N·m; under 3 N·m the speed after 0.5 s is (3 − 2)/I·t
//!   within 1e-5. Damping 0.4 on I = 0.1: the speed decays as (1 + dt/4·d/I)^(−4k) to 1e-4.
//!   A limit pushed by 1 N·m for 1 s: 0.50002 rad for 0.5.
//!
//! Never does: build a robot it cannot simulate (each refusal names the file, the field, and the
//! joint, link or mesh), silently drop a mesh (it is hulled, or the scene refused, or the opt-out
//! listed in the notes), ignore a joint's damping or friction (applied, or the friction's
//! opt-out listed), clamp a torque or apply one beyond its limit (the host's check), read the
//! wall clock for physics (only to time a step), or panic on a validated scene.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use control_core::frames::{
    BodyId, BodyMotion, ContactForce, Event, JointState, MAX_BODIES, MAX_CONTACTS, MAX_EVENTS,
    MAX_JOINTS, StateFrame,
};
use control_core::tree::{BaseKind, JointType, Placement};
use rapier3d::parry::glamx::glam::{DMat3, DQuat, DVec3};
use rapier3d::prelude::*;
use robot_model::{Geometry, RobotModel};
use serde::{Deserialize, Serialize};

use crate::clock::{PlantClock, steps_for};
use crate::environment::{
    ActivePush, FIRST_PROP_ID, MAX_PROPS, PROP_GROUPS, PropMaterial, Props, Push, WALL_FRICTION,
    Wall, apply_pushes, body_motion, check_props, check_pushes, check_walls,
    collect_contact_forces, queue_contact, queue_event, reset_forces,
};
use crate::input::{MAX_URDF_INERTIA_KG_M2, MAX_URDF_LENGTH_M, MAX_URDF_MASS_KG};
use crate::scene::{BallSpawn, Checker, DEFAULT_DT_S, MAX_TORQUE_LIMIT_NM, SceneError, WeightDrop};

/// Most joints a robot has: as many as a state frame carries ([`MAX_JOINTS`], 48).
pub const MAX_ROBOT_JOINTS: usize = MAX_JOINTS;
/// Most walls a robot scene has.
pub const MAX_WALLS: usize = crate::environment::MAX_WALLS;
/// Most pushes a robot scene has.
pub const MAX_PUSHES: usize = crate::environment::MAX_PUSHES;
/// Friction coefficient of a ball's or weight's collider (Rapier's default), combined with the
/// other collider's by product (the robot's colliders have 1, the ground its scene's).
pub const PROP_FRICTION: f64 = 0.5;
/// Largest mesh file read for a collision hull, bytes: 64 MiB (the collision meshes of the
/// robots in example-robot-data are under 2 MiB each).
pub const MAX_MESH_BYTES: u64 = 64 << 20;
/// Most vertices one mesh file may hold (all its meshes together): 2 000 000.
pub const MAX_MESH_VERTICES: usize = 2_000_000;
/// The default gravity: (0, 0, −9.81) m/s², URDF's z-up world.
pub const DEFAULT_GRAVITY_M_S2: [f64; 3] = [0.0, 0.0, -9.81];
/// Largest joint `<dynamics damping>` accepted, N·m·s/rad or N·s/m.
pub const MAX_JOINT_DAMPING: f64 = 1e6;
/// Rapier's solver substeps per step (`num_solver_iterations`, its default, set explicitly).
pub const SOLVER_ITERATIONS: usize = 4;

/// The value of a robot scene's required `kind` field: `"robot"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RobotKind {
    /// `"robot"`.
    Robot,
}

/// How collision shapes are built from the model's `<collision>` geometry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CollisionMode {
    /// `"convex_hull"` (the default): boxes, cylinders, spheres and capsules as themselves, and
    /// each mesh as the convex hull of its vertices (scaled); a mesh that cannot be read or
    /// hulled refuses the scene.
    #[default]
    ConvexHull,
    /// `"primitives_only"`: meshes are not loaded (the opt-out; listed in
    /// [`RobotPlant::notes`]), the other shapes are built as above.
    PrimitivesOnly,
}

/// The ground: a static half-space, z ≤ `height_m` in the world.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ground {
    /// Height of its surface, m (default 0; within ±1000).
    #[serde(default)]
    pub height_m: f64,
    /// Coulomb friction coefficient between the ground and the robot (in [0, 10]).
    pub friction: f64,
}

/// A robot scene: which URDF and how to load it, the base's pose, gravity, the start
/// configuration and the environment. The JSON form:
///
/// ```json
/// {
///   "kind": "robot",
///   "urdf": "../../models/solo12.urdf",
///   "floating_base": true,
///   "dt_s": 0.001,
///   "end_time_s": 2.0,
///   "base_xyz_m": [0.0, 0.0, 0.3],
///   "initial_q": { "FL_KFE": -1.6, "FL_HFE": 0.8 },
///   "ground": { "height_m": 0.0, "friction": 0.9 }
/// }
/// ```
///
/// `kind`, `urdf` and `end_time_s` are required; every other field has a default (below).
/// Unknown fields are refused; so is a joint named twice in `initial_q`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RobotScene {
    /// Always [`RobotKind::Robot`] (`"robot"`).
    pub kind: RobotKind,
    /// The URDF file. A relative path in a scene file is resolved against the scene file's
    /// folder when the file is loaded; in a scene built in memory it is relative to the working
    /// directory.
    pub urdf: PathBuf,
    /// Load `<mimic>` joints as independent joints (listed in [`RobotPlant::notes`]); default
    /// false: a URDF with a mimic joint is refused by the loader.
    #[serde(default)]
    pub mimic_as_independent: bool,
    /// The loader's `floating_base` option (default false): the root link is a floating base
    /// (a URDF cannot say whether a robot is bolted down); the loader refuses it for a file that
    /// welds its robot to a `world` link. A file whose root `world` has a floating joint is
    /// floating without it.
    #[serde(default)]
    pub floating_base: bool,
    /// The loader's `skip_missing_meshes` option: a mesh file that does not exist is left out
    /// (listed in [`RobotPlant::notes`]) instead of refusing the URDF (default false).
    #[serde(default)]
    pub skip_missing_meshes: bool,
    /// How collision shapes are built (default `"convex_hull"`).
    #[serde(default)]
    pub collision: CollisionMode,
    /// Physics step, s (default 0.005).
    #[serde(default = "default_dt")]
    pub dt_s: f64,
    /// The plant stops after the step that reaches this simulated time, s (rounded to a whole
    /// number of steps).
    pub end_time_s: f64,
    /// Gravity, a world vector, m/s² (default (0, 0, −9.81): URDF is z-up, and so is this
    /// plant's world unless the scene rotates the base).
    #[serde(default = "default_gravity", deserialize_with = "crate::input::exact")]
    pub gravity_m_s2: [f64; 3],
    /// The base's world position, m (default 0): where a fixed base is welded (composed with the
    /// model's own base placement), or where a floating base starts.
    #[serde(default, deserialize_with = "crate::input::exact")]
    pub base_xyz_m: [f64; 3],
    /// The base's world orientation, URDF roll–pitch–yaw, rad (default 0).
    #[serde(default, deserialize_with = "crate::input::exact")]
    pub base_rpy_rad: [f64; 3],
    /// Joint positions at t = 0, rad or m, by joint name. A joint not named starts at 0, which
    /// must lie within its limits: a joint whose limits exclude 0 must be named (the scene is
    /// refused otherwise, naming the joint). Everything starts at rest.
    #[serde(default, deserialize_with = "unique_map")]
    pub initial_q: BTreeMap<String, f64>,
    /// The ground, if any (default none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ground: Option<Ground>,
    /// Static boxes the robot collides with (at most [`MAX_WALLS`]); the force each puts on the
    /// bodies is reported in every state frame ([`crate::environment`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub walls: Vec<Wall>,
    /// External forces on bodies (at most [`MAX_PUSHES`]), `body` names a
    /// URDF link (a link merged into a body pushes that body).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pushes: Vec<Push>,
    /// Balls thrown into the scene (at most [`MAX_PROPS`]; ids from [`FIRST_PROP_ID`], unique
    /// across balls and weights): each a dynamic sphere that appears at its spawn time with its
    /// velocity. Props hit the robot, the ground, the walls and each other; each prop's first
    /// touch of the robot (the solver pushed on a contact of the pair during the step) is the
    /// event `ContactBegan { body: its id }`, the end of its touch `ContactEnded` (their forces
    /// are not in the frames' contacts, which stay the ground's and the walls'). Never removed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub balls: Vec<BallSpawn>,
    /// Weights dropped into the scene (at most [`MAX_PROPS`]): spheres or boxes, as
    /// [`Self::balls`] otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub weights: Vec<WeightDrop>,
    /// Whether the robot's bodies collide with each other (default false). Bodies joined by a
    /// joint never do.
    #[serde(default)]
    pub self_collision: bool,
    /// Leave every joint's URDF `<dynamics friction>` out (listed in [`RobotPlant::notes`]);
    /// default false: it is applied (see the module doc, "What is built").
    #[serde(default)]
    pub ignore_joint_friction: bool,
    /// Flat soles added under feet (at most [`MAX_SOLE_BOXES`]; listed in
    /// [`RobotPlant::notes`]): each a box collider of the body of `link`, beside its own shapes.
    /// Rapier (parry 0.31) touches the ground with one face of a convex hull, at most four of
    /// its vertices, so a foot whose collision mesh has a slightly domed sole (Talos's: its
    /// lowest millimetre is a curved patch of small faces) stands on one small triangle that
    /// jumps as the foot tilts; a box stands on its four corners.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sole_boxes: Vec<SoleBox>,
}

/// Most [`RobotScene::sole_boxes`].
pub const MAX_SOLE_BOXES: usize = 8;

/// A box fixed in a link's frame (a flat sole): the axis-aligned box from `min_m` to `max_m` in
/// that frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SoleBox {
    /// The URDF link (a body, or a link merged into one).
    pub link: String,
    /// The box's lowest corner in the link's frame, m.
    #[serde(deserialize_with = "crate::input::exact")]
    pub min_m: [f64; 3],
    /// Its highest corner, m (each coordinate above `min_m`'s, by at most 2 m).
    #[serde(deserialize_with = "crate::input::exact")]
    pub max_m: [f64; 3],
}

fn default_dt() -> f64 {
    DEFAULT_DT_S
}

fn default_gravity() -> [f64; 3] {
    DEFAULT_GRAVITY_M_S2
}

/// Serde `deserialize_with` helper: a JSON object of numbers by name, a name given twice refused
/// (serde_json would keep the last one silently).
fn unique_map<'de, D>(deserializer: D) -> Result<BTreeMap<String, f64>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct Unique;
    impl<'de> serde::de::Visitor<'de> for Unique {
        type Value = BTreeMap<String, f64>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object of joint name → number")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((k, v)) = map.next_entry::<String, f64>()? {
                if out.contains_key(&k) {
                    return Err(serde::de::Error::custom(format!("joint `{k}` named twice")));
                }
                out.insert(k, v);
            }
            Ok(out)
        }
    }
    deserializer.deserialize_map(Unique)
}

impl RobotScene {
    /// A scene of the robot in `urdf` for `end_time_s`: fixed-base loading, convex-hull meshes,
    /// default step and gravity, the base at the world origin, every joint at 0 and at rest, no
    /// ground, walls or pushes.
    pub fn new(urdf: impl Into<PathBuf>, end_time_s: f64) -> Self {
        Self {
            kind: RobotKind::Robot,
            urdf: urdf.into(),
            mimic_as_independent: false,
            floating_base: false,
            skip_missing_meshes: false,
            collision: CollisionMode::ConvexHull,
            dt_s: DEFAULT_DT_S,
            end_time_s,
            gravity_m_s2: DEFAULT_GRAVITY_M_S2,
            base_xyz_m: [0.0; 3],
            base_rpy_rad: [0.0; 3],
            initial_q: BTreeMap::new(),
            ground: None,
            walls: Vec::new(),
            pushes: Vec::new(),
            balls: Vec::new(),
            weights: Vec::new(),
            self_collision: false,
            ignore_joint_friction: false,
            sole_boxes: Vec::new(),
        }
    }

    /// Number of physics steps of the run: `end_time_s / dt_s`, rounded.
    pub fn total_steps(&self) -> u64 {
        steps_for(self.end_time_s, self.dt_s)
    }

    /// The loader's options this scene asks for.
    pub fn load_options(&self) -> robot_model::LoadOptions {
        robot_model::LoadOptions {
            mimic_as_independent: self.mimic_as_independent,
            floating_base: self.floating_base,
            skip_missing_meshes: self.skip_missing_meshes,
        }
    }

    /// The base's world pose the scene gives (`base_xyz_m`, `base_rpy_rad`).
    pub fn base_pose(&self) -> Placement {
        Placement::from_xyz_rpy(self.base_xyz_m, self.base_rpy_rad)
    }

    /// Every check that needs no URDF: every number finite and in range, names not empty,
    /// the lists within their caps. On failure returns the first failing field as a path in the
    /// serialized scene (`gravity_m_s2[2]`, `initial_q.elbow`, `pushes[0].start_s`) and the
    /// reason. What needs the model (joint names, limits, efforts, meshes, link names) is checked
    /// by [`RobotPlant::new`] under the same paths (`urdf` for the description itself).
    pub fn validate(&self) -> Result<(), (String, String)> {
        let mut c = Checker::default();
        c.timing(self.dt_s, self.end_time_s);
        if self.urdf.as_os_str().is_empty() {
            c.fail("urdf", String::from("must name a URDF file"));
        }
        for (k, g) in self.gravity_m_s2.into_iter().enumerate() {
            c.range(&format!("gravity_m_s2[{k}]"), g, -1000.0, 1000.0);
        }
        for (k, x) in self.base_xyz_m.into_iter().enumerate() {
            c.range(&format!("base_xyz_m[{k}]"), x, -1000.0, 1000.0);
        }
        for (k, a) in self.base_rpy_rad.into_iter().enumerate() {
            c.range(&format!("base_rpy_rad[{k}]"), a, -100.0, 100.0);
        }
        if self.initial_q.len() > MAX_ROBOT_JOINTS {
            c.fail(
                "initial_q",
                format!(
                    "{} joints named: a robot has at most {MAX_ROBOT_JOINTS}",
                    self.initial_q.len()
                ),
            );
        }
        for (name, &q) in &self.initial_q {
            if name.is_empty() {
                c.fail("initial_q", String::from("a joint name is empty"));
            }
            c.range(&format!("initial_q.{name}"), q, -1e3, 1e3);
        }
        if let Some(g) = &self.ground {
            c.range("ground.height_m", g.height_m, -1000.0, 1000.0);
            c.range("ground.friction", g.friction, 0.0, 10.0);
        }
        check_walls(&mut c, &self.walls, "robot");
        check_pushes(&mut c, &self.pushes, "robot");
        check_props(
            &mut c,
            &self.balls,
            &self.weights,
            FIRST_PROP_ID,
            Some(MAX_PROPS),
            "robot",
        );
        if self.sole_boxes.len() > MAX_SOLE_BOXES {
            c.fail(
                "sole_boxes",
                format!(
                    "{} sole boxes: at most {MAX_SOLE_BOXES}",
                    self.sole_boxes.len()
                ),
            );
        }
        for (k, b) in self.sole_boxes.iter().enumerate() {
            if b.link.is_empty() {
                c.fail(&format!("sole_boxes[{k}].link"), String::from("empty"));
            }
            for i in 0..3 {
                c.range(
                    &format!("sole_boxes[{k}].min_m[{i}]"),
                    b.min_m[i],
                    -10.0,
                    10.0,
                );
                c.range(
                    &format!("sole_boxes[{k}].max_m[{i}]"),
                    b.max_m[i],
                    -10.0,
                    10.0,
                );
                let size = b.max_m[i] - b.min_m[i];
                if !(size > 0.0 && size <= 2.0) {
                    c.fail(
                        &format!("sole_boxes[{k}].max_m[{i}]"),
                        format!("must lie above min_m[{i}] by at most 2 m (size {size})"),
                    );
                }
            }
        }
        c.result()
    }
}

impl crate::scene::SceneFile for RobotScene {
    fn check(&self) -> Result<(), (String, String)> {
        self.validate()
    }

    fn resolve_beside(&mut self, file: &Path) {
        self.urdf = crate::scene::urdf_beside(&self.urdf, file);
    }
}

/// Why [`RobotPlant::set_state`] or [`RobotPlant::set_configuration`] refused a state (the
/// plant is left as it was).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum RobotStateError {
    /// Not one value per joint.
    WrongLength {
        /// Which list (`q`, `qd`).
        what: &'static str,
        /// Values given.
        got: usize,
        /// Joints of the robot.
        joints: usize,
    },
    /// A NaN or infinite value.
    NonFinite {
        /// Which list (`q`, `qd`, `base_pose`, `base_velocity`).
        what: &'static str,
        /// Index in that list.
        index: usize,
        /// The value.
        value: f64,
    },
    /// The base pose's rotation is not a rotation matrix (orthonormal, determinant +1, to 1e-6).
    NotARotation,
    /// A non-zero base velocity for a fixed base.
    FixedBaseMoves,
}

impl fmt::Display for RobotStateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::WrongLength { what, got, joints } => write!(
                f,
                "{what}: {got} values for a robot of {joints} joints (one per joint, in model order)"
            ),
            Self::NonFinite { what, index, value } => {
                write!(f, "{what}[{index}] is {value}: must be finite")
            }
            Self::NotARotation => f.write_str(
                "base_pose.rotation is not a rotation matrix (orthonormal, determinant +1)",
            ),
            Self::FixedBaseMoves => f.write_str("base_velocity must be 0 for a fixed base"),
        }
    }
}

impl std::error::Error for RobotStateError {}

// ---------------------------------------------------------------------------------------------
// f64 rigid transforms (the model's placements), converted to Rapier's f32 poses at the end.

#[derive(Debug, Clone, Copy, PartialEq)]
struct Iso {
    t: DVec3,
    r: DMat3,
}

impl Iso {
    fn from_placement(p: &Placement) -> Self {
        let m = p.rotation;
        Self {
            t: DVec3::from_array(p.xyz_m),
            // DMat3 is column-major: column c = (m[0][c], m[1][c], m[2][c]).
            r: DMat3::from_cols(
                DVec3::new(m[0][0], m[1][0], m[2][0]),
                DVec3::new(m[0][1], m[1][1], m[2][1]),
                DVec3::new(m[0][2], m[1][2], m[2][2]),
            ),
        }
    }

    fn translation(t: DVec3) -> Self {
        Self {
            t,
            r: DMat3::IDENTITY,
        }
    }

    fn rotation(r: DMat3) -> Self {
        Self { t: DVec3::ZERO, r }
    }

    fn mul(&self, o: &Self) -> Self {
        Self {
            t: self.t + self.r * o.t,
            r: self.r * o.r,
        }
    }

    fn inverse(&self) -> Self {
        let rt = self.r.transpose();
        Self {
            t: -(rt * self.t),
            r: rt,
        }
    }

    fn to_pose(self) -> Pose {
        Pose::from_parts(f32v(self.t), f32q(self.r))
    }
}

fn f32v(v: DVec3) -> Vector {
    Vector::new(v.x as Real, v.y as Real, v.z as Real)
}

fn f32q(r: DMat3) -> Rotation {
    let q = DQuat::from_mat3(&r).normalize();
    Rotation::from_xyzw(q.x as Real, q.y as Real, q.z as Real, q.w as Real).normalize()
}

fn f64v(v: Vector) -> DVec3 {
    DVec3::new(f64::from(v.x), f64::from(v.y), f64::from(v.z))
}

fn f64m(r: Rotation) -> DMat3 {
    DMat3::from_quat(DQuat::from_xyzw(
        f64::from(r.x),
        f64::from(r.y),
        f64::from(r.z),
        f64::from(r.w),
    ))
}

fn v3(a: [f64; 3]) -> Vector {
    Vector::new(a[0] as Real, a[1] as Real, a[2] as Real)
}

fn arr(v: Vector) -> [f64; 3] {
    [f64::from(v.x), f64::from(v.y), f64::from(v.z)]
}

/// A rotation taking the x axis to the unit vector `a`.
fn x_to(a: DVec3) -> DMat3 {
    let a = a.normalize();
    // A second axis orthogonal to a, from the world axis least aligned with it.
    let helper = if a.x.abs() < 0.9 { DVec3::X } else { DVec3::Y };
    let b = a.cross(helper).normalize();
    let c = a.cross(b);
    DMat3::from_cols(a, b, c)
}

/// The matrix `[c]×` (c × v = [c]× v): column j is c × e_j.
fn skew(c: DVec3) -> DMat3 {
    DMat3::from_cols(c.cross(DVec3::X), c.cross(DVec3::Y), c.cross(DVec3::Z))
}

fn mat_rows(r: DMat3) -> [[f64; 3]; 3] {
    let c = r.to_cols_array_2d();
    [0, 1, 2].map(|i| [0, 1, 2].map(|j| c[j][i]))
}

// ---------------------------------------------------------------------------------------------
// The plant

/// One joint of the plant.
#[derive(Debug, Clone)]
struct RobotJoint {
    name: String,
    kind: JointType,
    handle: MultibodyJointHandle,
    /// Its parent body's index (0 = the base).
    parent_body: usize,
    child_body: usize,
    effort: f64,
    limits: Option<(f64, f64)>,
}

/// The arm scene's rules for its props: each ball's crossing of z = 0 is the event
/// `PlaneCrossed`; a ball is removed `linger_steps` after its crossing, and any prop whose centre
/// falls below y = `remove_below_y_m`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PropRules {
    /// Steps a ball stays after its crossing.
    pub linger_steps: u64,
    /// The height below which a prop is removed, m.
    pub remove_below_y_m: f64,
}

/// The robot of a [`RobotScene`], ready to step.
pub struct RobotPlant {
    world: PhysicsWorld,
    name: String,
    base: BaseKind,
    joints: Vec<RobotJoint>,
    /// Model body order: link name and Rapier body.
    bodies: Vec<(String, RigidBodyHandle)>,
    /// Each body's Rapier frame in its model frame: its principal inertia frame (origin at the
    /// centre of mass, axes its principal axes, smallest moment on x; see the module doc), the
    /// identity for a fixed base. The rotation is the f32 one Rapier holds, read back in f64.
    body_frames: Vec<Iso>,
    /// URDF link → body index (every link, merged ones included).
    frames: Vec<(String, usize)>,
    /// The ground's and the walls' colliders (ground first).
    environment: Vec<ColliderHandle>,
    /// The balls and weights.
    props: Props,
    /// The arm scene's rules for them: crossings reported, props removed.
    prop_rules: Option<PropRules>,
    /// Prop-contact events not yet past a frame; the first [`MAX_EVENTS`] are the current
    /// frame's.
    events: VecDeque<Event>,
    events_left_out: u64,
    contacts: heapless::Vec<ContactForce, MAX_CONTACTS>,
    contact_sums: Vec<(u16, [f64; 3])>,
    contacts_left_out: u64,
    pushes: Vec<ActivePush>,
    notes: Vec<String>,
    clock: PlantClock,
}

impl fmt::Debug for RobotPlant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RobotPlant")
            .field("name", &self.name)
            .field("base", &self.base)
            .field("joints", &self.joint_names())
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

fn err(field: &str, reason: String) -> SceneError {
    SceneError {
        file: "(in memory)".into(),
        field: field.to_owned(),
        reason,
    }
}

impl RobotPlant {
    /// Builds the robot of `scene`: checks the scene ([`RobotScene::validate`]), loads the model
    /// (`robot_model::load` with [`RobotScene::load_options`]) and builds the plant from it
    /// ([`Self::from_model`]). Errors name the file `(in memory)` (a caller that loaded the scene
    /// from a file substitutes its name) and the scene field: `urdf` for anything about the
    /// description itself, whose reason names the URDF file and the joint, link or mesh.
    pub fn new(scene: &RobotScene) -> Result<Self, SceneError> {
        scene
            .validate()
            .map_err(|(field, reason)| err(&field, reason))?;
        // The loader's error names the file, the element and the reason.
        let model = robot_model::load(&scene.urdf, &scene.load_options())
            .map_err(|e| err("urdf", e.to_string()))?;
        Self::from_model(scene, &model)
    }

    /// Builds the plant of `scene` from `model` (already loaded: the scene's `urdf` and loading
    /// options are not read again, but `urdf` names the description in errors). Checks the model
    /// against what the plant simulates and the scene against the model; see the module doc.
    pub fn from_model(scene: &RobotScene, model: &RobotModel) -> Result<Self, SceneError> {
        scene
            .validate()
            .map_err(|(field, reason)| err(&field, reason))?;
        let props = Props::new(
            &scene.balls,
            &scene.weights,
            scene.dt_s,
            PropMaterial {
                friction: Some(PROP_FRICTION as Real),
                friction_combine_rule: Some(CoefficientCombineRule::Multiply),
                groups: Some(PROP_GROUPS),
            },
        );
        Self::build(scene, model, props, None)
    }

    /// [`Self::from_model`] for a checked `scene` whose props are `props` (the scene's own are
    /// not read), reporting their crossings and removing them by `rules` when given (the arm
    /// scene's).
    pub(crate) fn build(
        scene: &RobotScene,
        model: &RobotModel,
        props: Props,
        rules: Option<PropRules>,
    ) -> Result<Self, SceneError> {
        let urdf = scene.urdf.display().to_string();
        let urdf_err = |reason: String| err("urdf", format!("{urdf}: {reason}"));
        check_model(model).map_err(urdf_err)?;
        let floating = model.base == BaseKind::Floating;
        let n = model.joints.len();

        // The start configuration: named joints, then 0 for the others, within their limits.
        for name in scene.initial_q.keys() {
            if !model.joints.iter().any(|j| j.name == *name) {
                let names: Vec<&str> = model.joints.iter().map(|j| j.name.as_str()).collect();
                return Err(err(
                    &format!("initial_q.{name}"),
                    format!("no joint `{name}` in {urdf} (joints: {})", names.join(", ")),
                ));
            }
        }
        let mut q0 = vec![0.0; n];
        for (k, j) in model.joints.iter().enumerate() {
            let given = scene.initial_q.get(&j.name).copied();
            let q = given.unwrap_or(0.0);
            if let Some((lo, hi)) = j.limits
                && !(lo..=hi).contains(&q)
            {
                let unit = unit(j.kind);
                return Err(match given {
                    Some(_) => err(
                        &format!("initial_q.{}", j.name),
                        format!(
                            "joint `{}` is limited to [{lo}, {hi}] {unit}, got {q}",
                            j.name
                        ),
                    ),
                    None => err(
                        "initial_q",
                        format!(
                            "joint `{}` is limited to [{lo}, {hi}] {unit}, which excludes its default start 0: give it a start value in `initial_q`",
                            j.name
                        ),
                    ),
                });
            }
            q0[k] = q;
        }

        // Pushes: a link (merged or not) of the model, not a fixed base.
        let frames: Vec<(String, usize)> = model
            .frames
            .iter()
            .map(|f| (f.name.clone(), f.body))
            .chain(
                model
                    .bodies
                    .iter()
                    .enumerate()
                    .map(|(b, body)| (body.link.clone(), b)),
            )
            .collect();
        let mut push_bodies = Vec::with_capacity(scene.pushes.len());
        for (i, p) in scene.pushes.iter().enumerate() {
            let Some(&(_, b)) = frames.iter().find(|(name, _)| *name == p.body) else {
                let names: Vec<&str> = model.bodies.iter().map(|b| b.link.as_str()).collect();
                return Err(err(
                    &format!("pushes[{i}].body"),
                    format!(
                        "no link `{}` in {urdf} (bodies: {})",
                        p.body,
                        names.join(", ")
                    ),
                ));
            };
            if b == 0 && !floating {
                return Err(err(
                    &format!("pushes[{i}].body"),
                    format!(
                        "`{}` is on the fixed base: a force on it does nothing",
                        p.body
                    ),
                ));
            }
            push_bodies.push(b);
        }

        // Collision shapes, meshes read (or not) first: nothing is built if one is refused.
        let mut notes = model.notes.clone();
        let mut shapes: Vec<Vec<(Iso, SharedShape)>> = Vec::with_capacity(model.bodies.len());
        let mut skipped = Vec::new();
        let mut up_axes = Vec::new();
        for body in &model.bodies {
            let mut list = Vec::with_capacity(body.collisions.len());
            for s in &body.collisions {
                let placement = Iso::from_placement(&s.placement);
                let shape = match &s.geometry {
                    Geometry::Box { size } => SharedShape::cuboid(
                        (size[0] / 2.0) as Real,
                        (size[1] / 2.0) as Real,
                        (size[2] / 2.0) as Real,
                    ),
                    Geometry::Sphere { radius } => SharedShape::ball(*radius as Real),
                    Geometry::Capsule { radius, length } => {
                        SharedShape::capsule_z((*length / 2.0) as Real, *radius as Real)
                    }
                    Geometry::Cylinder { radius, length } => {
                        // Rapier's cylinder is along its y axis, URDF's along z: turned by
                        // +90° about x (y → z).
                        let turn = DMat3::from_rotation_x(std::f64::consts::FRAC_PI_2);
                        list.push((
                            placement.mul(&Iso::rotation(turn)),
                            SharedShape::cylinder((*length / 2.0) as Real, *radius as Real),
                        ));
                        continue;
                    }
                    Geometry::Mesh {
                        path,
                        filename,
                        scale,
                    } => {
                        if scene.collision == CollisionMode::PrimitivesOnly {
                            skipped.push(format!("`{}` ({filename})", s.link));
                            continue;
                        }
                        let (hull, up) = load_hull(path, *scale).map_err(|reason| {
                            urdf_err(format!(
                                "link `{}`: collision mesh {filename} ({}): {reason} (set `collision` to \"primitives_only\" to simulate without meshes)",
                                s.link,
                                path.display()
                            ))
                        })?;
                        if let Some(axis) = up {
                            up_axes.push(format!("{filename} ({axis})"));
                        }
                        hull
                    }
                };
                list.push((placement, shape));
            }
            shapes.push(list);
        }
        for sole in &scene.sole_boxes {
            let (body, placement) = match model.frame(&sole.link) {
                Some(f) => (f.body, Iso::from_placement(&f.placement)),
                None => match model.bodies.iter().position(|b| b.link == sole.link) {
                    Some(b) => (b, Iso::translation(DVec3::ZERO)),
                    None => {
                        return Err(err(
                            "sole_boxes",
                            format!("the robot has no link `{}`", sole.link),
                        ));
                    }
                },
            };
            let (lo, hi) = (DVec3::from_array(sole.min_m), DVec3::from_array(sole.max_m));
            let half = (hi - lo) / 2.0;
            shapes[body].push((
                placement.mul(&Iso::translation((hi + lo) / 2.0)),
                SharedShape::cuboid(half.x as Real, half.y as Real, half.z as Real),
            ));
            notes.push(format!(
                "sole box under `{}` (body `{}`): x {}..{}, y {}..{}, z {}..{} m in its frame",
                sole.link,
                model.bodies[body].link,
                sole.min_m[0],
                sole.max_m[0],
                sole.min_m[1],
                sole.max_m[1],
                sole.min_m[2],
                sole.max_m[2]
            ));
        }
        if !up_axes.is_empty() {
            notes.push(format!(
                "Collada <up_axis> other than Z_UP read as written, not rotated (as RViz and MoveIt read it) in {} collision mesh(es): {}",
                up_axes.len(),
                up_axes.join(", ")
            ));
        }
        if !skipped.is_empty() {
            notes.push(format!(
                "collision \"primitives_only\": {} collision mesh(es) not loaded: {}",
                skipped.len(),
                skipped.join(", ")
            ));
        }
        let frictional: Vec<String> = model
            .joints
            .iter()
            .filter(|j| j.friction > 0.0)
            .map(|j| format!("`{}` ({})", j.name, j.friction))
            .collect();
        if scene.ignore_joint_friction && !frictional.is_empty() {
            notes.push(format!(
                "ignore_joint_friction: <dynamics friction> not applied on {} joint(s): {}",
                frictional.len(),
                frictional.join(", ")
            ));
        }
        if model.bodies.len() > MAX_BODIES {
            let left: Vec<&str> = model.bodies[MAX_BODIES..]
                .iter()
                .map(|b| b.link.as_str())
                .collect();
            notes.push(format!(
                "state frames carry the first {MAX_BODIES} of {} bodies; left out: {}",
                model.bodies.len(),
                left.join(", ")
            ));
        }

        // The world.
        let mut world = PhysicsWorld::new();
        world.gravity = v3(scene.gravity_m_s2);
        world.integration_parameters.dt = scene.dt_s as Real;
        world.integration_parameters.num_solver_iterations = SOLVER_ITERATIONS;
        // The environment (group 1) and the robot (group 2) collide; props are in both the
        // environment's group and their own (3), and collide with everything.
        let env_groups = InteractionGroups::new(
            Group::GROUP_1,
            Group::GROUP_2 | Group::GROUP_3,
            InteractionTestMode::And,
        );
        let robot_filter = if scene.self_collision {
            Group::GROUP_1 | Group::GROUP_2
        } else {
            Group::GROUP_1
        };
        let robot_groups =
            InteractionGroups::new(Group::GROUP_2, robot_filter, InteractionTestMode::And);
        let mut environment = Vec::new();
        if let Some(g) = &scene.ground {
            environment.push(
                world.insert_collider(
                    ColliderBuilder::new(SharedShape::halfspace(Vector::Z))
                        .translation(Vector::new(0.0, 0.0, g.height_m as Real))
                        .friction(g.friction as Real)
                        .friction_combine_rule(CoefficientCombineRule::Multiply)
                        .collision_groups(env_groups),
                    None,
                ),
            );
        }
        for w in &scene.walls {
            let [hx, hy, hz] = w.half_extents_m.map(|x| x as Real);
            environment.push(
                world.insert_collider(
                    ColliderBuilder::cuboid(hx, hy, hz)
                        .translation(v3(w.center_m))
                        .friction(WALL_FRICTION as Real)
                        .friction_combine_rule(CoefficientCombineRule::Multiply)
                        .collision_groups(env_groups),
                    None,
                ),
            );
        }

        // Bodies: each moving one's Rapier frame is its principal inertia frame (see the module
        // doc: Rapier then holds a diagonal inertia, smallest moment on x, that its own
        // eigen-decomposition cannot get wrong); a fixed base's is its model frame.
        let mut body_frames = Vec::with_capacity(model.bodies.len());
        let mut bodies = Vec::with_capacity(model.bodies.len());
        for (b, body) in model.bodies.iter().enumerate() {
            let (frame, builder) = if b == 0 && !floating {
                (Iso::translation(DVec3::ZERO), RigidBodyBuilder::fixed())
            } else {
                let (frame, props) = principal_mass_properties(&body.inertial);
                (
                    frame,
                    RigidBodyBuilder::dynamic()
                        .can_sleep(false)
                        .additional_mass_properties(props),
                )
            };
            body_frames.push(frame);
            let h = world.insert_body(builder);
            for (placement, shape) in &shapes[b] {
                let pose = frame.inverse().mul(placement).to_pose();
                world.insert_collider(
                    ColliderBuilder::new(shape.clone())
                        .position(pose)
                        .density(0.0)
                        .friction(1.0)
                        .friction_combine_rule(CoefficientCombineRule::Multiply)
                        .collision_groups(robot_groups),
                    Some(h),
                );
            }
            bodies.push((body.link.clone(), h));
        }

        // Joints: multibody joints, parents first.
        let mut joints = Vec::with_capacity(n);
        for (k, j) in model.joints.iter().enumerate() {
            let u = x_to(DVec3::from_array(j.axis));
            let frame1 = body_frames[j.parent_body]
                .inverse()
                .mul(&Iso::from_placement(&j.origin))
                .mul(&Iso::rotation(u));
            let frame2 = body_frames[k + 1].inverse().mul(&Iso::rotation(u));
            // frame2 = F⁻¹·U (F the child's Rapier frame in its model frame) is the joint frame
            // in the child's Rapier frame: its inverse is what Rapier composes.
            let (locked, axis) = match j.kind {
                JointType::Revolute => (JointAxesMask::LOCKED_REVOLUTE_AXES, JointAxis::AngX),
                JointType::Prismatic => (JointAxesMask::LOCKED_PRISMATIC_AXES, JointAxis::LinX),
            };
            let mut builder = GenericJointBuilder::new(locked)
                .local_frame1(frame1.to_pose())
                .local_frame2(frame2.to_pose())
                .contacts_enabled(false);
            if let Some((lo, hi)) = j.limits {
                builder = builder.limits(axis, [lo as Real, hi as Real]);
            }
            let parent = bodies[j.parent_body].1;
            let child = bodies[k + 1].1;
            let Some(handle) = world
                .multibody_joints
                .insert(parent, child, builder.build(), true)
            else {
                return Err(urdf_err(format!(
                    "joint `{}` could not be built as a multibody joint (a loop?)",
                    j.name
                )));
            };
            joints.push(RobotJoint {
                name: j.name.clone(),
                kind: j.kind,
                handle,
                parent_body: j.parent_body,
                child_body: k + 1,
                // Checked present by check_model.
                effort: j.effort.unwrap_or(0.0),
                limits: j.limits,
            });
        }
        let first = joints[0].handle;
        let mb_of = |w: &PhysicsWorld, h: MultibodyJointHandle| {
            w.multibody_joints
                .get(h)
                .map(|(mb, _)| mb.root().rigid_body_handle())
        };
        let root = mb_of(&world, first);
        if joints.iter().any(|j| mb_of(&world, j.handle) != root) || root != Some(bodies[0].1) {
            return Err(urdf_err(String::from(
                "the joints do not form one tree from the base",
            )));
        }

        // Settle the root (fixed: no DoFs; floating: 6) and the masses, then the damping and the
        // dry friction of every DoF: the URDF's, and nothing else.
        {
            let wb = &mut world.bodies;
            for &(_, h) in &bodies {
                if let Some(rb) = wb.get_mut(h) {
                    rb.recompute_mass_properties_from_colliders(&world.colliders);
                }
            }
            let Some((mb, _)) = world.multibody_joints.get_mut(first) else {
                return Err(urdf_err(String::from("no multibody")));
            };
            mb.forward_kinematics(wb, true);
            mb.set_self_contacts_enabled(scene.self_collision);
            mb.damping_mut().fill(0.0);
            mb.frictions_mut().fill(0.0);
        }
        for (j, spec) in joints.iter().zip(&model.joints) {
            let Some((mb, link_id)) = world.multibody_joints.get_mut(j.handle) else {
                continue;
            };
            let Some(a) = mb.link(link_id).map(|l| l.assembly_id()) else {
                continue;
            };
            if let Some(d) = mb.damping_mut().get_mut(a) {
                *d = spec.damping as Real;
            }
            if !scene.ignore_joint_friction
                && let Some(f) = mb.frictions_mut().get_mut(a)
            {
                *f = spec.friction as Real;
            }
        }

        let mut pushes = Vec::with_capacity(scene.pushes.len());
        for (p, &b) in scene.pushes.iter().zip(&push_bodies) {
            pushes.push(ActivePush::new(
                bodies[b].1,
                p.force_n,
                p.start_s,
                p.duration_s,
                scene.dt_s,
            ));
        }

        let mut plant = Self {
            world,
            name: model.name.clone(),
            base: model.base,
            joints,
            bodies,
            body_frames,
            frames,
            environment,
            props,
            prop_rules: rules,
            events: VecDeque::new(),
            events_left_out: 0,
            contacts: heapless::Vec::new(),
            contact_sums: Vec::new(),
            contacts_left_out: 0,
            pushes,
            notes,
            clock: PlantClock::new(scene.dt_s, scene.total_steps()),
        };
        let base_pose = compose(&scene.base_pose(), &base_placement(model), floating);
        plant
            .set_state(&base_pose, [0.0; 6], &q0, &vec![0.0; n])
            .map_err(|e| err("base_rpy_rad", e.to_string()))?;
        let nv = plant.nv();
        let m = plant.mass_matrix();
        if m.len() != nv || m.iter().any(|row| row.len() != nv) {
            return Err(urdf_err(format!(
                "Rapier built {} degrees of freedom for {nv}",
                m.len()
            )));
        }
        if let Some(i) = not_positive_definite(&m) {
            let what = if floating && i < 6 {
                String::from("the floating base")
            } else {
                format!("joint `{}`", plant.joints[i - plant.base_dofs()].name)
            };
            return Err(urdf_err(format!(
                "the mass matrix at the start is singular from {what} on: its motion is (to 1e-6) one the degrees of freedom before it already make, or it moves no mass (joints at one point through massless links, more than three, or two about one line?)"
            )));
        }
        Ok(plant)
    }

    /// 6 for a floating base, 0 for a fixed one.
    fn base_dofs(&self) -> usize {
        if self.base == BaseKind::Floating {
            6
        } else {
            0
        }
    }

    /// Number of velocity degrees of freedom: joints, plus 6 for a floating base.
    pub fn nv(&self) -> usize {
        self.base_dofs() + self.joints.len()
    }

    /// The `<robot name>`.
    pub fn robot_name(&self) -> &str {
        &self.name
    }

    /// Fixed or floating.
    pub const fn base_kind(&self) -> BaseKind {
        self.base
    }

    /// The joints' names, in model joint order (the order of the frames' joints and of the
    /// torques).
    pub fn joint_names(&self) -> Vec<&str> {
        self.joints.iter().map(|j| j.name.as_str()).collect()
    }

    /// Number of joints.
    pub fn joint_count(&self) -> usize {
        self.joints.len()
    }

    /// Each joint's position limits (lower, upper), rad or m, model joint order; `None` for a
    /// continuous joint.
    pub fn joint_limits(&self) -> Vec<Option<(f64, f64)>> {
        self.joints.iter().map(|j| j.limits).collect()
    }

    /// The bodies' link names, in model body order (the base first; the order of the frames'
    /// bodies and of the contact forces' [`BodyId`]s).
    pub fn body_names(&self) -> Vec<&str> {
        self.bodies.iter().map(|(name, _)| name.as_str()).collect()
    }

    /// The body a URDF link (merged into it or its own) belongs to: its [`BodyId`] in the frames;
    /// `None` for a name the model does not have.
    pub fn link_body_id(&self, link: &str) -> Option<BodyId> {
        self.frames
            .iter()
            .find(|(name, _)| name == link)
            .and_then(|&(_, b)| u16::try_from(b).ok())
            .map(BodyId)
    }

    /// Each joint's torque (or force) limit, its URDF `<limit effort>`, N·m or N, model order.
    pub fn torque_limits(&self) -> Vec<f64> {
        self.joints.iter().map(|j| j.effort).collect()
    }

    /// What this plant does differently from the description because the scene or the loader
    /// was asked to (meshes not loaded, joint friction ignored, mimic joints independent, missing
    /// meshes skipped) or cannot carry (bodies left out of the frames): one line each.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Each body's mass as Rapier has it, kg, model body order (a fixed base's is 0).
    pub fn body_masses(&self) -> Vec<f64> {
        self.bodies
            .iter()
            .map(|&(_, h)| {
                self.world
                    .bodies
                    .get(h)
                    .map_or(0.0, |b| f64::from(b.mass()))
            })
            .collect()
    }

    /// The robot's centre of mass in the world now, m, from Rapier's bodies (their masses and
    /// world centres of mass): every moving body, a fixed base left out (as the controller's
    /// tree does).
    pub fn centre_of_mass(&self) -> [f64; 3] {
        let (mut m, mut s) = (0.0, DVec3::ZERO);
        for (b, &(_, h)) in self.bodies.iter().enumerate() {
            if b == 0 && self.base == BaseKind::Fixed {
                continue;
            }
            if let Some(rb) = self.world.bodies.get(h) {
                let mi = f64::from(rb.mass());
                m += mi;
                s += mi * f64v(rb.center_of_mass());
            }
        }
        if m > 0.0 {
            (s / m).to_array()
        } else {
            [0.0; 3]
        }
    }

    /// The base frame's world pose now (for a floating base, the frame of the model's base body,
    /// not Rapier's frame at its centre of mass).
    pub fn base_pose(&self) -> Placement {
        let Some(rb) = self.world.bodies.get(self.bodies[0].1) else {
            return Placement::IDENTITY;
        };
        // The model frame's pose: Rapier's body pose times the inverse of the body's Rapier
        // frame in its model frame.
        let f = self.body_frames[0];
        let r = f64m(*rb.rotation()) * f.r.transpose();
        let t = f64v(rb.translation()) - r * f.t;
        Placement {
            xyz_m: t.to_array(),
            rotation: mat_rows(r),
        }
    }

    /// The joints' positions and velocities now (rad, rad/s or m, m/s), model joint order.
    pub fn joint_states(&self) -> Vec<JointState> {
        self.joints.iter().map(|j| self.joint_state(j)).collect()
    }

    fn joint_state(&self, j: &RobotJoint) -> JointState {
        let coord = match j.kind {
            JointType::Revolute => 3,
            JointType::Prismatic => 0,
        };
        self.world
            .multibody_joints
            .get(j.handle)
            .and_then(|(mb, link_id)| {
                let link = mb.link(link_id)?;
                let velocity = mb.joint_velocity(link).get(0).copied()?;
                Some(JointState {
                    position_rad: f64::from(link.joint().coords()[coord]),
                    velocity_rad_s: f64::from(velocity),
                })
            })
            .unwrap_or_default()
    }

    /// Puts the robot at base pose `base_pose` (the base frame in the world; for a fixed base,
    /// where it is welded from now on) and joint positions `q` (model order), at rest, without
    /// stepping; see [`Self::set_state`].
    pub fn set_configuration(
        &mut self,
        base_pose: &Placement,
        q: &[f64],
    ) -> Result<(), RobotStateError> {
        self.set_state(base_pose, [0.0; 6], q, &vec![0.0; q.len()])
    }

    /// Puts the robot in a state without stepping: the base frame at `base_pose` in the world,
    /// moving with `base_velocity` (Pinocchio's convention: the linear velocity of the base
    /// frame's origin, then the angular velocity, both in the base frame; must be 0 for a fixed
    /// base), the joints at `q` with velocities `qd` (model order). The bodies are moved (and
    /// their velocities set) where the joints say; the step index and time stay as they were.
    /// Refuses, leaving the plant as it was, lists of the wrong length, non-finite values or a
    /// rotation that is not one. Positions beyond a joint's limits are accepted (the limit then
    /// pushes back from the next step on).
    ///
    /// For an **offline replica** (a second plant built from the same scene, posed along a
    /// recorded motion to read [`Self::mass_matrix`] and the rest): used on the plant that runs,
    /// it teleports the robot (contacts found at the last step are stale until the next one).
    pub fn set_state(
        &mut self,
        base_pose: &Placement,
        base_velocity: [f64; 6],
        q: &[f64],
        qd: &[f64],
    ) -> Result<(), RobotStateError> {
        let n = self.joints.len();
        for (what, list) in [("q", q), ("qd", qd)] {
            if list.len() != n {
                return Err(RobotStateError::WrongLength {
                    what,
                    got: list.len(),
                    joints: n,
                });
            }
        }
        let flat_pose: Vec<f64> = base_pose
            .xyz_m
            .iter()
            .chain(base_pose.rotation.iter().flatten())
            .copied()
            .collect();
        for (what, list) in [
            ("q", q),
            ("qd", qd),
            ("base_pose", flat_pose.as_slice()),
            ("base_velocity", base_velocity.as_slice()),
        ] {
            if let Some((index, &value)) = list.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(RobotStateError::NonFinite { what, index, value });
            }
        }
        let base = Iso::from_placement(base_pose);
        if !is_rotation(&base_pose.rotation) {
            return Err(RobotStateError::NotARotation);
        }
        if self.base == BaseKind::Fixed && base_velocity.iter().any(|&v| v != 0.0) {
            return Err(RobotStateError::FixedBaseMoves);
        }

        let root_pose = base.mul(&self.body_frames[0]).to_pose();
        if let Some(rb) = self.world.bodies.get_mut(self.bodies[0].1) {
            rb.set_position(root_pose, true);
        }
        let Some(first) = self.joints.first().map(|j| j.handle) else {
            return Ok(());
        };
        // Joint coordinates, then the generalized velocities.
        let mut slots = Vec::with_capacity(n);
        for (i, j) in self.joints.iter().enumerate() {
            let coord = match j.kind {
                JointType::Revolute => 3,
                JointType::Prismatic => 0,
            };
            if let Some((mb, link_id)) = self.world.multibody_joints.get_mut(j.handle)
                && let Some(link) = mb.link_mut(link_id)
            {
                let now = link.joint.coords()[coord];
                link.joint.apply_displacement(&[q[i] as Real - now]);
                slots.push(link.assembly_id());
            }
        }
        let bodies = &mut self.world.bodies;
        let Some((mb, _)) = self.world.multibody_joints.get_mut(first) else {
            return Ok(());
        };
        // The root's pose read from its body (and a fixed root's DoFs settled).
        mb.forward_kinematics(bodies, true);
        let mut v = vec![0.0; mb.ndofs()];
        if self.base == BaseKind::Floating {
            // Rapier's root velocity: the velocity of its frame's origin (the base's centre of
            // mass here) and the angular velocity, both in the world.
            let vb = DVec3::new(base_velocity[0], base_velocity[1], base_velocity[2]);
            let wb = DVec3::new(base_velocity[3], base_velocity[4], base_velocity[5]);
            let lin = base.r * (vb + wb.cross(self.body_frames[0].t));
            let ang = base.r * wb;
            v[..3].copy_from_slice(&lin.to_array());
            v[3..6].copy_from_slice(&ang.to_array());
        }
        for (i, &a) in slots.iter().enumerate() {
            if let Some(slot) = v.get_mut(a) {
                *slot = qd[i];
            }
        }
        {
            let mut gv = mb.generalized_velocity_mut();
            for (slot, x) in gv.iter_mut().zip(&v) {
                *slot = *x as Real;
            }
        }
        self.refresh_bodies();
        Ok(())
    }

    /// Makes the bodies' world state that of the multibody's coordinates now: poses and world
    /// mass properties from forward kinematics, velocities from the body Jacobians. Rapier 0.36
    /// leaves a multibody's rigid bodies with the centres of mass and velocities of the start of
    /// the step's last substep (it refreshes them at the start of the next step), a quarter of a
    /// step behind its coordinates; what the plant reads and reports is refreshed here, after
    /// every step and every change of state. It changes nothing Rapier computes from: the next
    /// step recomputes all of it from the same coordinates first.
    fn refresh_bodies(&mut self) {
        let Some(first) = self.joints.first().map(|j| j.handle) else {
            return;
        };
        let bodies = &mut self.world.bodies;
        let Some((mb, _)) = self.world.multibody_joints.get_mut(first) else {
            return;
        };
        mb.forward_kinematics(bodies, false);
        mb.update_rigid_bodies(bodies, true);
        let gv: Vec<f64> = mb
            .generalized_velocity()
            .iter()
            .map(|&x| f64::from(x))
            .collect();
        for link in mb.links() {
            let jac = mb.body_jacobian(link.link_id());
            let mut out = [0.0f64; 6];
            for (r, o) in out.iter_mut().enumerate() {
                *o = (0..gv.len()).map(|c| f64::from(jac[(r, c)]) * gv[c]).sum();
            }
            if let Some(rb) = bodies.get_mut(link.rigid_body_handle())
                && rb.is_dynamic()
            {
                rb.set_linvel(v3([out[0], out[1], out[2]]), false);
                rb.set_angvel(v3([out[3], out[4], out[5]]), false);
            }
        }
    }

    /// The generalized velocity now in Pinocchio's convention (the controller's tree's): for a
    /// floating base, the linear velocity of the base frame's origin and the angular velocity,
    /// both in the base frame (indices 0..6), then the joints' velocities in model order.
    pub fn generalized_velocity(&self) -> Vec<f64> {
        let mut out = Vec::with_capacity(self.nv());
        if self.base == BaseKind::Floating
            && let Some(rb) = self.world.bodies.get(self.bodies[0].1)
            && let Some((mb, _)) = self
                .joints
                .first()
                .and_then(|j| self.world.multibody_joints.get(j.handle))
        {
            // Rapier's root velocity (its first 6 generalized velocities) is that of its frame,
            // the base's centre of mass here, and the angular velocity, in the world:
            // v_com = R·(v + ω × c), ω_world = R·ω.
            let g = mb.generalized_velocity();
            let at = |k: usize| g.get(k).copied().map_or(0.0, f64::from);
            let f = self.body_frames[0];
            let rt = (f64m(*rb.rotation()) * f.r.transpose()).transpose();
            let w = rt * DVec3::new(at(3), at(4), at(5));
            let v = rt * DVec3::new(at(0), at(1), at(2)) - w.cross(f.t);
            out.extend(v.to_array());
            out.extend(w.to_array());
        }
        out.extend(self.joint_states().iter().map(|j| j.velocity_rad_s));
        out
    }

    /// The lowest world z of any of the robot's collision shapes now (their bounding boxes'),
    /// m; +∞ for a robot without shapes. For placing a robot on the ground.
    pub fn lowest_point_z_m(&self) -> f64 {
        let mut low = f64::INFINITY;
        for &(_, h) in &self.bodies {
            let Some(rb) = self.world.bodies.get(h) else {
                continue;
            };
            for &c in rb.colliders() {
                if let Some(col) = self.world.colliders.get(c) {
                    // The collider's world pose from its body's current pose (the colliders'
                    // own poses follow at the next step).
                    let pose =
                        *rb.position() * col.position_wrt_parent().copied().unwrap_or_default();
                    let aabb = col.shape().compute_aabb(&pose);
                    low = low.min(f64::from(aabb.mins.z));
                }
            }
        }
        low
    }

    /// For each of this plant's velocity indices (floating base 0..6, then joint k at base + k),
    /// the index of Rapier's generalized coordinate (its assembly order).
    fn rapier_indices(&self) -> Vec<usize> {
        let mut out: Vec<usize> = (0..self.base_dofs()).collect();
        for j in &self.joints {
            let a = self
                .world
                .multibody_joints
                .get(j.handle)
                .and_then(|(mb, link_id)| mb.link(link_id).map(|l| l.assembly_id()))
                .unwrap_or(usize::MAX);
            out.push(a);
        }
        out
    }

    /// Rapier's joint-space mass matrix M(q) at the current configuration, **in Rapier's
    /// velocity convention**: rows and columns are the floating base's 6 (the world linear
    /// velocity of the base's centre of mass, then the world angular velocity) followed by the
    /// joints in model order; for a fixed base, the joints only. How it is read: Rapier 0.36 keeps M private
    /// (`Multibody::augmented_mass`, M plus dt·damping and armature on the diagonal) and exposes
    /// only its LU factorization (`Multibody::inv_augmented_mass`); so forward kinematics and
    /// the bodies' world inertias are refreshed, `Multibody::dof_inverse_inertia` re-assembles M
    /// at dt = 0 (which leaves exactly M: armature is 0), and M is rebuilt from the
    /// factorization as P⁻¹·L·U (f32: entries carry a relative error of order 1e-7, symmetric to
    /// that order). Reading it between steps does not change the simulation: every step re-runs
    /// the same kinematics and assembly from the joint coordinates. [`Self::mass_matrix_base_frame`] gives it in Pinocchio's
    /// convention. It allocates; it is for checks, not for every step.
    pub fn mass_matrix(&mut self) -> Vec<Vec<f64>> {
        let order = self.rapier_indices();
        let Some(first) = self.joints.first().map(|j| j.handle) else {
            return Vec::new();
        };
        let bodies = &mut self.world.bodies;
        let Some((mb, _)) = self.world.multibody_joints.get_mut(first) else {
            return Vec::new();
        };
        mb.forward_kinematics(bodies, false);
        mb.update_rigid_bodies(bodies, true);
        let _ = mb.dof_inverse_inertia(bodies);
        let (p, l, u) = mb.inv_augmented_mass().clone().unpack();
        let mut m = l * u;
        p.inv_permute_rows(&mut m);
        let nv = order.len();
        if m.nrows() != nv || m.ncols() != nv {
            return vec![Vec::new(); m.nrows().min(nv)];
        }
        (0..nv)
            .map(|i| {
                (0..nv)
                    .map(|j| match (order.get(i), order.get(j)) {
                        (Some(&a), Some(&b)) if a < nv && b < nv => f64::from(m[(a, b)]),
                        _ => f64::NAN,
                    })
                    .collect()
            })
            .collect()
    }

    /// The matrix T with v_rapier = T · v_pinocchio (nv × nv): the identity for a fixed base;
    /// for a floating base, the base block `[[R, −R·[c]×], [0, R]]` (R the base's world rotation,
    /// c the base body's centre of mass in the base frame), the identity on the joints. Rapier's
    /// base velocity is (the world velocity of the base's centre of mass, the world angular
    /// velocity); Pinocchio's is (the velocity of the base frame's origin, the angular velocity),
    /// both in the base frame: v_com = R·(v + ω × c), ω_world = R·ω.
    pub fn velocity_transform(&self) -> Vec<Vec<f64>> {
        let nv = self.nv();
        let mut t: Vec<Vec<f64>> = (0..nv)
            .map(|i| (0..nv).map(|j| if i == j { 1.0 } else { 0.0 }).collect())
            .collect();
        if self.base == BaseKind::Floating {
            let base = Iso::from_placement(&self.base_pose());
            let r = mat_rows(base.r);
            let rc = mat_rows(base.r * skew(self.body_frames[0].t));
            for i in 0..3 {
                for j in 0..3 {
                    t[i][j] = r[i][j];
                    t[i][3 + j] = -rc[i][j];
                    t[3 + i][3 + j] = r[i][j];
                }
            }
        }
        t
    }

    /// [`Self::mass_matrix`] in Pinocchio's velocity convention (the controller's tree's):
    /// Tᵀ·M·T with T from [`Self::velocity_transform`]; the same matrix for a fixed base.
    pub fn mass_matrix_base_frame(&mut self) -> Vec<Vec<f64>> {
        let m = self.mass_matrix();
        let t = self.velocity_transform();
        let nv = t.len();
        if m.len() != nv {
            return m;
        }
        let mt: Vec<Vec<f64>> = (0..nv)
            .map(|i| {
                (0..nv)
                    .map(|j| (0..nv).map(|k| m[i][k] * t[k][j]).sum())
                    .collect()
            })
            .collect();
        (0..nv)
            .map(|i| {
                (0..nv)
                    .map(|j| (0..nv).map(|k| t[k][i] * mt[k][j]).sum())
                    .collect()
            })
            .collect()
    }

    /// The generalized gravity g(q) in Pinocchio's convention (the controller's tree's): the
    /// generalized force that balances gravity, τ = g(q) holding the robot at rest (for a
    /// floating base, its first 6 entries are the force and moment about the base origin, in the
    /// base frame, that would be needed on the base). From Rapier's own bodies: −Tᵀ·Σ_b J_bᵀ·(m_b
    /// g, 0), J_b Rapier's body Jacobian of body b (its centre of mass's world velocity and its
    /// angular velocity), m_b its Rapier mass, g the scene's gravity.
    pub fn generalized_gravity(&mut self) -> Vec<f64> {
        let order = self.rapier_indices();
        let nv = order.len();
        let Some(first) = self.joints.first().map(|j| j.handle) else {
            return Vec::new();
        };
        let g = f64v(self.world.gravity);
        let bodies = &mut self.world.bodies;
        let Some((mb, _)) = self.world.multibody_joints.get_mut(first) else {
            return Vec::new();
        };
        mb.forward_kinematics(bodies, false);
        mb.update_rigid_bodies(bodies, true);
        let mut rapier = vec![0.0; mb.ndofs()];
        for link in mb.links() {
            let Some(rb) = bodies.get(link.rigid_body_handle()) else {
                continue;
            };
            if !rb.is_dynamic() {
                continue;
            }
            let f = f64::from(rb.mass()) * g;
            let jac = mb.body_jacobian(link.link_id());
            for (c, out) in rapier.iter_mut().enumerate() {
                *out += f.x * f64::from(jac[(0, c)])
                    + f.y * f64::from(jac[(1, c)])
                    + f.z * f64::from(jac[(2, c)]);
            }
        }
        let ours: Vec<f64> = order
            .iter()
            .map(|&a| rapier.get(a).copied().unwrap_or(f64::NAN))
            .collect();
        let t = self.velocity_transform();
        (0..nv)
            .map(|i| -(0..nv).map(|k| t[k][i] * ours[k]).sum::<f64>())
            .collect()
    }

    /// The plant's clock: the current state's index and time, the step, the run's length, the
    /// last step's cost.
    pub const fn clock(&self) -> &PlantClock {
        &self.clock
    }

    /// Checks generalized forces against the joints' limits: `Err((joint, value))` names the
    /// first with |τ_k| > effort_k (NaN counts as beyond), or the first entry beyond the robot's
    /// joints that is not exactly 0. A value of exactly the limit passes; nothing is clamped.
    pub fn check_torques(&self, torques: &[f64]) -> Result<(), (usize, f64)> {
        crate::host::first_refused_torque(torques, |i| self.joints.get(i).map(|j| j.effort))
    }

    /// The environment's (ground's and walls') forces on the bodies during the last step, as the
    /// frames carry them: at most [`MAX_CONTACTS`], in body order.
    pub fn contacts(&self) -> &[ContactForce] {
        &self.contacts
    }

    /// Body forces left out of the frames so far: one per body and step beyond
    /// [`MAX_CONTACTS`] bodies in contact in one step (the last in body order are left out).
    pub const fn contacts_left_out(&self) -> u64 {
        self.contacts_left_out
    }

    /// Bodies every frame leaves out: those beyond the first [`MAX_BODIES`] in body order.
    pub fn bodies_left_out(&self) -> usize {
        self.bodies.len().saturating_sub(MAX_BODIES)
    }

    /// Each body's world motion now, model body order (see [`BodyMotion`]: Rapier's centre of
    /// mass, orientation of the body frame, velocity of the centre of mass, angular velocity, all
    /// in the world).
    pub fn body_motions(&self) -> Vec<BodyMotion> {
        (0..self.bodies.len())
            .map(|b| self.body_motion(b).unwrap_or_default())
            .collect()
    }

    /// Body `b`'s world motion now ([`BodyMotion`]): Rapier's, with the orientation of the
    /// body's model frame (Rapier's body frame is its principal inertia frame).
    fn body_motion(&self, b: usize) -> Option<BodyMotion> {
        let rb = self.world.bodies.get(self.bodies.get(b)?.1)?;
        let mut m = body_motion(rb);
        let f = self.body_frames.get(b)?;
        if f.r != DMat3::IDENTITY {
            let q = DQuat::from_mat3(&(f64m(*rb.rotation()) * f.r.transpose())).normalize();
            m.orientation = [q.w, q.x, q.y, q.z];
        }
        // Rapier holds a multibody root's rotation as an f32 quaternion it does not renormalize:
        // its norm drifts (by 1.9e-5 after 4 s of Solo-12 rocked by balls), past what a state
        // frame accepts. Reported as Rapier holds it while a frame takes it, renormalized (f64)
        // once it would not.
        let n2: f64 = m.orientation.iter().map(|x| x * x).sum();
        let tol = control_core::frames::UNIT_QUATERNION_TOLERANCE;
        if !(((1.0 - tol) * (1.0 - tol))..=((1.0 + tol) * (1.0 + tol))).contains(&n2) {
            let n = n2.sqrt();
            m.orientation = m.orientation.map(|x| x / n);
        }
        Some(m)
    }

    /// The state frame of the current state: sequence number = step index; the joints (model
    /// order); the first [`MAX_BODIES`] bodies' world motion (body order, the base first); the
    /// environment's forces on the bodies during the step that produced it (none for step 0);
    /// that step's cost.
    pub fn state_frame(&mut self) -> StateFrame {
        let mut frame = self.clock.new_frame();
        for j in &self.joints {
            // At most MAX_ROBOT_JOINTS = MAX_JOINTS joints (checked when built).
            let _ = frame.push_joint(self.joint_state(j));
        }
        for b in 0..self.bodies.len().min(MAX_BODIES) {
            if let Some(m) = self.body_motion(b) {
                let _ = frame.push_body(m);
            }
        }
        frame.contacts = self.contacts.clone();
        for _ in 0..MAX_EVENTS {
            match self.events.pop_front() {
                Some(e) => {
                    let _ = frame.push_event(e);
                }
                None => break,
            }
        }
        frame
    }

    /// Prop-contact events dropped so far: those beyond the 256 held for later frames.
    pub const fn events_left_out(&self) -> u64 {
        self.events_left_out
    }

    /// Balls and weights in the world now.
    pub fn live_props(&self) -> usize {
        self.props.live()
    }

    /// Centre of ball or weight `id` now, world frame, m; `None` before it spawns.
    pub fn prop_position_m(&self, id: BodyId) -> Option<[f64; 3]> {
        self.props.position_m(&self.world, id)
    }

    fn collect_contacts(&mut self) {
        let bodies = &self.bodies;
        collect_contact_forces(
            &self.world,
            &self.environment,
            self.clock.dt_s(),
            |b| {
                bodies
                    .iter()
                    .position(|&(_, h)| h == b)
                    .and_then(|i| u16::try_from(i).ok())
            },
            &mut self.contact_sums,
            &mut self.contacts,
            &mut self.contacts_left_out,
        );
    }

    /// Steps the world by dt with generalized forces `torques` (N·m or N, model joint order; a
    /// missing joint gets 0, extra entries are ignored) held for the whole step, and returns the
    /// new state's frame. Applies what it is given: the limits are the caller's to enforce
    /// ([`Self::check_torques`]).
    pub fn step(&mut self, torques: &[f64]) -> StateFrame {
        let t0 = Instant::now();
        reset_forces(&mut self.world.bodies, self.bodies.iter().map(|(_, h)| h));
        for (i, j) in self.joints.iter().enumerate() {
            let tau = torques.get(i).copied().unwrap_or(0.0) as Real;
            if tau == 0.0 {
                continue;
            }
            let Some((axis, point)) = self.joint_axis_and_origin(j.handle) else {
                continue;
            };
            let parent_moves = !(j.parent_body == 0 && self.base == BaseKind::Fixed);
            for (body, sign, moves) in [
                (self.bodies[j.child_body].1, 1.0, true),
                (self.bodies[j.parent_body].1, -1.0, parent_moves),
            ] {
                if !moves {
                    continue;
                }
                if let Some(rb) = self.world.bodies.get_mut(body) {
                    match j.kind {
                        JointType::Revolute => rb.add_torque(axis * (sign * tau), true),
                        JointType::Prismatic => {
                            rb.add_force_at_point(axis * (sign * tau), point, true);
                        }
                    }
                }
            }
        }
        apply_pushes(
            &self.pushes,
            &mut self.world.bodies,
            self.clock.step_index(),
        );
        self.props
            .spawn_due(&mut self.world, self.clock.step_index());
        if self.prop_rules.is_some() {
            self.props.note_heights(&self.world);
        }
        self.world.step();
        self.refresh_bodies();
        self.collect_contacts();
        let (bodies, colliders) = (&self.bodies, &self.world.colliders);
        let (events, left_out) = (&mut self.events, &mut self.events_left_out);
        self.props.read_touches(
            &self.world,
            |c| {
                colliders
                    .get(c)
                    .and_then(|c| c.parent())
                    .is_some_and(|b| bodies.iter().any(|&(_, h)| h == b))
            },
            |body, now| queue_contact(events, left_out, body, now),
        );
        if let Some(rules) = self.prop_rules {
            // The step just taken is the one the clock reaches when it advances below.
            let step = self.clock.step_index() + 1;
            self.props.read_crossings(&self.world, step, |body| {
                queue_event(events, left_out, Event::PlaneCrossed { body });
            });
            self.props.remove_finished(
                &mut self.world,
                step,
                rules.linger_steps,
                rules.remove_below_y_m,
            );
        }
        self.clock.advance();
        self.clock.finish_step(t0);
        self.state_frame()
    }

    /// A joint's world axis (unit) and the world position of its frame's origin on the parent,
    /// as Rapier holds them now.
    fn joint_axis_and_origin(&self, handle: MultibodyJointHandle) -> Option<(Vector, Vector)> {
        let (mb, link_id) = self.world.multibody_joints.get(handle)?;
        let link = mb.link(link_id)?;
        let parent = mb.link(link.parent_id()?)?;
        let frame1 = link.joint().data.local_frame1;
        let world = *parent.local_to_world() * frame1;
        Some((world.rotation * Vector::X, world.translation))
    }

    /// Each joint's world axis now (unit; positive positions turn about it or slide along it),
    /// model joint order.
    pub fn joint_axes_world(&self) -> Vec<[f64; 3]> {
        self.joints
            .iter()
            .map(|j| {
                self.joint_axis_and_origin(j.handle)
                    .map_or([0.0; 3], |(a, _)| arr(a))
            })
            .collect()
    }
}

/// "rad" or "m".
const fn unit(kind: JointType) -> &'static str {
    match kind {
        JointType::Revolute => "rad",
        JointType::Prismatic => "m",
    }
}

/// The base's world pose: the scene's pose, composed with the model's base placement for a fixed
/// base (a floating base starts at the scene's pose).
fn compose(scene: &Placement, model: &Placement, floating: bool) -> Placement {
    if floating {
        return *scene;
    }
    let c = Iso::from_placement(scene).mul(&Iso::from_placement(model));
    Placement {
        xyz_m: c.t.to_array(),
        rotation: mat_rows(c.r),
    }
}

/// The model's own placement of the base in the world (its URDF `world` joint, if any).
fn base_placement(model: &RobotModel) -> Placement {
    model.base_placement
}

/// A body's principal inertia frame in its model frame (origin at the centre of mass, axes the
/// principal axes, moments ascending along x, y, z; the rotation rounded to the f32 quaternion
/// Rapier holds) and its mass properties in that frame: centre of mass at the origin, the
/// principal moments, no principal rotation (`MassProperties::new`). Rapier re-decomposes a body's
/// inertia whenever it sums its colliders' mass properties with these
/// (`recompute_mass_properties_from_colliders`, parry's `with_inertia_matrix`): given exactly
/// this diagonal, ascending, at the origin, it finds it again exactly (see the module doc).
fn principal_mass_properties(i: &control_core::tree::Inertial) -> (Iso, MassProperties) {
    let (axes, _) = principal_axes(i.inertia_kgm2);
    // The rotation as Rapier holds it (f32), and the moments about those very axes.
    let r = f64m(f32q(axes));
    let [ixx, ixy, ixz, iyy, iyz, izz] = i.inertia_kgm2;
    let inertia = DMat3::from_cols(
        DVec3::new(ixx, ixy, ixz),
        DVec3::new(ixy, iyy, iyz),
        DVec3::new(ixz, iyz, izz),
    );
    let d = r.transpose() * inertia * r;
    let mut moments = [d.x_axis.x, d.y_axis.y, d.z_axis.z].map(|x| x.max(0.0));
    // Ascending to f64 rounding already; made exactly so (f32 rounding keeps the order).
    moments.sort_by(f64::total_cmp);
    let frame = Iso {
        t: DVec3::from_array(i.com_m),
        r,
    };
    let props = MassProperties::new(
        Vector::ZERO,
        i.mass_kg as Real,
        f32v(DVec3::from_array(moments)),
    );
    (frame, props)
}

/// The principal axes of the symmetric inertia `[ixx, ixy, ixz, iyy, iyz, izz]` (cyclic Jacobi
/// in f64): a rotation P (its columns the axes, determinant +1) and the principal moments in
/// ascending order, I = P·diag(moments)·Pᵀ. A diagonal inertia gives a signed permutation (the
/// identity when already ascending).
fn principal_axes(inertia: [f64; 6]) -> (DMat3, [f64; 3]) {
    let [ixx, ixy, ixz, iyy, iyz, izz] = inertia;
    let mut a = [[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]];
    let mut v = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    for _sweep in 0..64 {
        let off = a[0][1].abs() + a[0][2].abs() + a[1][2].abs();
        let scale = a[0][0].abs() + a[1][1].abs() + a[2][2].abs();
        if off == 0.0 || off <= f64::EPSILON * 1e-3 * scale {
            break;
        }
        for (p, q) in [(0, 1), (0, 2), (1, 2)] {
            if a[p][q] == 0.0 {
                continue;
            }
            // The rotation J in the (p, q) plane with (Jᵀ·A·J)[p][q] = 0.
            let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
            let t = theta.signum() / (theta.abs() + theta.hypot(1.0));
            let c = 1.0 / t.hypot(1.0);
            let s = t * c;
            let mut j = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
            j[p][p] = c;
            j[q][q] = c;
            j[p][q] = s;
            j[q][p] = -s;
            let mul = |x: &[[f64; 3]; 3], y: &[[f64; 3]; 3]| {
                let mut z = [[0.0; 3]; 3];
                for (r, row) in z.iter_mut().enumerate() {
                    for (k, out) in row.iter_mut().enumerate() {
                        *out = (0..3).map(|m| x[r][m] * y[m][k]).sum();
                    }
                }
                z
            };
            let jt = [0, 1, 2].map(|r| [0, 1, 2].map(|k| j[k][r]));
            a = mul(&mul(&jt, &a), &j);
            a[p][q] = 0.0;
            a[q][p] = 0.0;
            v = mul(&v, &j);
        }
    }
    // Ascending moments (a stable sort: an ascending diagonal keeps the identity).
    let mut order = [0, 1, 2];
    order.sort_by(|&x, &y| a[x][x].total_cmp(&a[y][y]));
    let col = |k: usize| DVec3::new(v[0][k], v[1][k], v[2][k]).normalize();
    let (x, y) = (col(order[0]), col(order[1]));
    // The third axis completes a right-handed frame (column order[2], or its opposite).
    let z = x.cross(y).normalize();
    (DMat3::from_cols(x, y, z), order.map(|k| a[k][k]))
}

/// A Cholesky pivot at or below this fraction of its own diagonal entry counts as zero: that
/// degree of freedom's motion is, to Rapier's f32 rounding (about 1e-7 relative), a combination
/// of the ones before it (four revolute joints at one point through massless links, two about
/// one line), or it moves no mass.
const SINGULAR_PIVOT: f64 = 1e-6;

/// The first failing index of a Cholesky factorization of the symmetric `m`, or `None` when `m`
/// is positive definite with every pivot above [`SINGULAR_PIVOT`] of its diagonal entry.
fn not_positive_definite(m: &[Vec<f64>]) -> Option<usize> {
    let n = m.len();
    let mut l = vec![vec![0.0; n]; n];
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| l[i][k] * l[j][k]).sum();
            let a = m[i][j] - s;
            if i == j {
                if a.is_nan() || a <= SINGULAR_PIVOT * m[i][i] || a <= 0.0 || a.is_infinite() {
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

/// What the plant needs of a model: 1 to [`MAX_ROBOT_JOINTS`] joints, each with a torque limit
/// (`<limit effort>` in (0, [`MAX_TORQUE_LIMIT_NM`]]), finite limits, damping and friction,
/// a non-zero axis, parents before children; finite masses within bounds, greater than 0 on every
/// moving body; finite shapes.
fn check_model(model: &RobotModel) -> Result<(), String> {
    let n = model.joints.len();
    if n == 0 || n > MAX_ROBOT_JOINTS {
        return Err(format!(
            "{n} movable joints: the plant simulates 1 to {MAX_ROBOT_JOINTS} (a state frame's capacity)"
        ));
    }
    if model.bodies.len() != n + 1 {
        return Err(format!(
            "{} bodies for {n} joints: the model must have one body per joint plus the base",
            model.bodies.len()
        ));
    }
    let finite = |xs: &[f64]| xs.iter().all(|x| x.is_finite());
    let placement_ok = |p: &Placement| {
        finite(&p.xyz_m)
            && p.rotation.iter().all(|r| finite(r))
            && p.xyz_m.iter().all(|x| x.abs() <= MAX_URDF_LENGTH_M)
            && is_rotation(&p.rotation)
    };
    if !placement_ok(&model.base_placement) {
        return Err(String::from(
            "the base placement (its `world` joint's <origin>) must be finite, within ±1000 m, its rotation a rotation",
        ));
    }
    for (k, j) in model.joints.iter().enumerate() {
        let name = &j.name;
        if j.parent_body > k {
            return Err(format!(
                "joint `{name}` hangs from body {}, which is not before it",
                j.parent_body
            ));
        }
        match j.effort {
            Some(e) if e > 0.0 && e <= MAX_TORQUE_LIMIT_NM => {}
            Some(e) => {
                return Err(format!(
                    "joint `{name}`: <limit effort> (its torque limit) must be greater than 0 and at most {MAX_TORQUE_LIMIT_NM}, got {e}"
                ));
            }
            None => {
                return Err(format!(
                    "joint `{name}` has no <limit effort>: every joint needs its torque limit"
                ));
            }
        }
        if let Some((lo, hi)) = j.limits
            && !(lo.is_finite() && hi.is_finite() && lo <= hi)
        {
            return Err(format!(
                "joint `{name}`: <limit lower upper> must be finite with lower <= upper, got [{lo}, {hi}]"
            ));
        }
        if !(j.damping.is_finite() && (0.0..=MAX_JOINT_DAMPING).contains(&j.damping)) {
            return Err(format!(
                "joint `{name}`: <dynamics damping> must be between 0 and {MAX_JOINT_DAMPING}, got {}",
                j.damping
            ));
        }
        if !(j.friction.is_finite() && (0.0..=MAX_TORQUE_LIMIT_NM).contains(&j.friction)) {
            return Err(format!(
                "joint `{name}`: <dynamics friction> must be between 0 and {MAX_TORQUE_LIMIT_NM}, got {}",
                j.friction
            ));
        }
        if !finite(&j.axis) || j.axis.iter().all(|&a| a == 0.0) {
            return Err(format!(
                "joint `{name}`: <axis xyz> must be finite and non-zero"
            ));
        }
        if !placement_ok(&j.origin) {
            return Err(format!(
                "joint `{name}`: <origin> must be finite, each coordinate within ±{MAX_URDF_LENGTH_M} m, its rotation a rotation"
            ));
        }
    }
    let carried = robot_model::carried_masses(&model.bodies, &model.joints);
    for (b, body) in model.bodies.iter().enumerate() {
        let link = &body.link;
        let i = &body.inertial;
        let moving = b > 0 || model.base == BaseKind::Floating;
        // A massless frame between joints, carrying mass.
        let frame = b > 0 && body.is_massless() && carried[b] > 0.0;
        if !(i.mass_kg.is_finite() && i.mass_kg >= 0.0 && i.mass_kg <= MAX_URDF_MASS_KG)
            || (moving && i.mass_kg <= 0.0 && !frame)
        {
            return Err(format!(
                "link `{link}`: mass must be {} and at most {MAX_URDF_MASS_KG} kg, got {}{}",
                if moving { "greater than 0" } else { ">= 0" },
                i.mass_kg,
                if moving {
                    " (every moving body needs a mass, or none at all, no inertia either, while it carries one that has mass)"
                } else {
                    ""
                }
            ));
        }
        if !finite(&i.inertia_kgm2)
            || i.inertia_kgm2
                .iter()
                .any(|x| x.abs() > MAX_URDF_INERTIA_KG_M2)
        {
            return Err(format!(
                "link `{link}`: inertia entries must be finite and within ±{MAX_URDF_INERTIA_KG_M2} kg·m²"
            ));
        }
        if !finite(&i.com_m) || i.com_m.iter().any(|x| x.abs() > MAX_URDF_LENGTH_M) {
            return Err(format!(
                "link `{link}`: centre of mass must be finite, within ±{MAX_URDF_LENGTH_M} m"
            ));
        }
        for s in &body.collisions {
            let sizes: Vec<f64> = match &s.geometry {
                Geometry::Box { size } => size.to_vec(),
                Geometry::Cylinder { radius, length } | Geometry::Capsule { radius, length } => {
                    vec![*radius, *length]
                }
                Geometry::Sphere { radius } => vec![*radius],
                Geometry::Mesh { scale, .. } => {
                    if !finite(scale) || scale.iter().any(|&x| x == 0.0 || x.abs() > 1e3) {
                        return Err(format!(
                            "link `{}`: mesh scale must be finite, non-zero and within ±1000, got {scale:?}",
                            s.link
                        ));
                    }
                    Vec::new()
                }
            };
            if sizes
                .iter()
                .any(|&x| !x.is_finite() || x <= 0.0 || x > MAX_URDF_LENGTH_M)
            {
                return Err(format!(
                    "link `{}`: collision shape sizes must be greater than 0 and at most {MAX_URDF_LENGTH_M} m, got {sizes:?}",
                    s.link
                ));
            }
            if !placement_ok(&s.placement) {
                return Err(format!(
                    "link `{}`: collision <origin> must be finite, within ±{MAX_URDF_LENGTH_M} m, its rotation a rotation",
                    s.link
                ));
            }
        }
    }
    Ok(())
}

/// Whether `r` (row-major) is orthonormal with determinant +1, to 1e-6.
fn is_rotation(r: &[[f64; 3]; 3]) -> bool {
    let m = Iso::from_placement(&Placement {
        xyz_m: [0.0; 3],
        rotation: *r,
    })
    .r;
    (m.transpose() * m - DMat3::IDENTITY)
        .to_cols_array()
        .iter()
        .all(|x| x.abs() <= 1e-6)
        && (m.determinant() - 1.0).abs() <= 1e-6
}

/// The convex hull of the mesh file at `path` (every mesh in it, each vertex scaled per axis by
/// `scale`), with a Collada file's `<up_axis>` when it is not `Z_UP` (the geometry is read as
/// written, not rotated, as RViz and MoveIt read it: the caller notes it), or why not. The file
/// must be a regular file of at most [`MAX_MESH_BYTES`] with the extension `.stl` (binary or
/// ASCII), `.dae` (Collada: its node transforms and `<unit>` applied by the reader) or `.obj`
/// (Wavefront; material files are not read), of at most [`MAX_MESH_VERTICES`] finite vertices
/// whose hull has a volume. A reader or hull that panics is caught and refused.
fn load_hull(path: &Path, scale: [f64; 3]) -> Result<(SharedShape, Option<String>), String> {
    use rapier3d_meshloader::mesh_loader;
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    if !meta.is_file() {
        return Err(String::from("not a regular file"));
    }
    if meta.len() > MAX_MESH_BYTES {
        return Err(format!(
            "larger than the {} MiB limit for a mesh ({} bytes)",
            MAX_MESH_BYTES >> 20,
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_MESH_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > MAX_MESH_BYTES {
        return Err(format!(
            "larger than the {} MiB limit for a mesh",
            MAX_MESH_BYTES >> 20
        ));
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    let up = if ext == "dae" {
        collada_up_axis(&bytes).filter(|axis| axis != "Z_UP")
    } else {
        None
    };
    let parse = move || -> Result<Vec<Vector>, String> {
        let loader = mesh_loader::Loader::<Vec<u8>>::with_custom_reader(|p| {
            Err(std::io::Error::other(format!(
                "{} not read (materials are not needed)",
                p.display()
            )))
        });
        if ext == "stl"
            && let Some(vertices) = binary_stl_vertices(&bytes)
        {
            return scaled_points(vertices, scale);
        }
        let scene = match ext.as_str() {
            "stl" => loader.load_stl_from_slice(&bytes, path),
            "dae" => loader.load_collada_from_slice(&bytes, path),
            "obj" => loader.load_obj_from_slice(&bytes, path),
            other => {
                return Err(format!(
                    "unsupported mesh format `.{other}` (STL, Collada .dae and Wavefront .obj are read)"
                ));
            }
        }
        .map_err(|e| format!("cannot parse: {e}"))?;
        let count: usize = scene.meshes.iter().map(|m| m.vertices.len()).sum();
        if count > MAX_MESH_VERTICES {
            return Err(format!(
                "{count} vertices: at most {MAX_MESH_VERTICES} are read"
            ));
        }
        scaled_points(
            scene
                .meshes
                .iter()
                .flat_map(|m| m.vertices.iter().copied())
                .collect(),
            scale,
        )
    };
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let points = parse()?;
        let flat = || {
            format!(
                "its {} vertices have no convex hull with a volume (flat or degenerate)",
                points.len()
            )
        };
        let hull = SharedShape::convex_hull(&points).ok_or_else(flat)?;
        // A hull of coplanar points comes back as a flat polyhedron: refused too (it has no
        // inside for the contact solver).
        let aabb = hull.compute_local_aabb();
        let size = f64::from((aabb.maxs - aabb.mins).max_element());
        let volume = f64::from(hull.mass_properties(1.0).mass());
        if volume > 1e-9 * size.powi(3) {
            Ok(hull)
        } else {
            Err(flat())
        }
    }));
    caught
        .unwrap_or_else(|_| {
            Err(String::from(
                "the mesh reader or the hull computation failed",
            ))
        })
        .map(|hull| (hull, up))
}

/// The vertices of a binary STL file (80-byte header, a little-endian u32 triangle count, 50
/// bytes per triangle: normal, 3 vertices, attribute), recognised by its length being exactly
/// that of its count, or `None`. A binary file whose header starts with `solid` (as some
/// exporters write it, e.g. Solo-12's feet) is read here: mesh-loader would take it for ASCII
/// and fail.
fn binary_stl_vertices(bytes: &[u8]) -> Option<Vec<[f32; 3]>> {
    let count = u32::from_le_bytes(bytes.get(80..84)?.try_into().ok()?) as usize;
    if count > MAX_MESH_VERTICES / 3 || bytes.len() != 84 + 50 * count {
        return None;
    }
    let f = |b: &[u8], at: usize| -> f32 {
        let mut word = [0u8; 4];
        word.copy_from_slice(&b[at..at + 4]);
        f32::from_le_bytes(word)
    };
    let mut out = Vec::with_capacity(3 * count);
    for t in bytes[84..].chunks_exact(50) {
        for v in 0..3 {
            let at = 12 + 12 * v;
            out.push([f(t, at), f(t, at + 4), f(t, at + 8)]);
        }
    }
    Some(out)
}

/// The vertices scaled per axis, each finite and within ±[`MAX_URDF_LENGTH_M`], at least 4 of
/// them, as Rapier points.
fn scaled_points(vertices: Vec<[f32; 3]>, scale: [f64; 3]) -> Result<Vec<Vector>, String> {
    if vertices.len() > MAX_MESH_VERTICES {
        return Err(format!(
            "{} vertices: at most {MAX_MESH_VERTICES} are read",
            vertices.len()
        ));
    }
    let mut points = Vec::with_capacity(vertices.len());
    for v in &vertices {
        let p = [0, 1, 2].map(|k| f64::from(v[k]) * scale[k]);
        if !p
            .iter()
            .all(|x| x.is_finite() && x.abs() <= MAX_URDF_LENGTH_M)
        {
            return Err(format!(
                "a vertex is not finite or beyond ±{MAX_URDF_LENGTH_M} m: {p:?}"
            ));
        }
        points.push(v3(p));
    }
    if points.len() < 4 {
        return Err(format!(
            "{} vertices: a convex hull needs at least 4",
            points.len()
        ));
    }
    Ok(points)
}

/// The text of a Collada file's `<up_axis>`, if it has one.
fn collada_up_axis(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes.get(..bytes.len().min(1 << 16))?);
    let start = text.find("<up_axis>")? + "<up_axis>".len();
    let end = text[start..].find("</up_axis>")? + start;
    Some(text[start..end].trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::SceneFile as _;
    use control_core::tree::Inertial;
    use robot_model::{Body, Frame, Joint, Shape};

    use crate::test_mesh::{ascii_stl, binary_stl, box_mesh};

    fn parse(json: &str) -> Result<RobotScene, SceneError> {
        RobotScene::from_json_str(json, Path::new("/scenes/r.json"))
    }

    const MIN: &str = r#""kind": "robot", "urdf": "r.urdf", "end_time_s": 1"#;

    fn inertial(mass_kg: f64, com_m: [f64; 3], diag: [f64; 3]) -> Inertial {
        Inertial {
            mass_kg,
            com_m,
            inertia_kgm2: [diag[0], 0.0, 0.0, diag[1], 0.0, diag[2]],
        }
    }

    fn body(link: &str, i: Inertial, collisions: Vec<Geometry>) -> Body {
        Body {
            link: link.to_owned(),
            inertial: i,
            collisions: collisions
                .into_iter()
                .map(|geometry| Shape {
                    link: link.to_owned(),
                    placement: Placement::IDENTITY,
                    geometry,
                })
                .collect(),
            visuals: Vec::new(),
        }
    }

    fn joint(
        name: &str,
        kind: JointType,
        parent_body: usize,
        xyz: [f64; 3],
        axis: [f64; 3],
    ) -> Joint {
        Joint {
            name: name.to_owned(),
            kind,
            continuous: false,
            parent_body,
            origin: Placement::from_xyz_rpy(xyz, [0.0; 3]),
            axis,
            limits: Some((-3.0, 3.0)),
            effort: Some(100.0),
            velocity: Some(10.0),
            damping: 0.0,
            friction: 0.0,
            mimic: None,
        }
    }

    fn model(base: BaseKind, bodies: Vec<Body>, joints: Vec<Joint>) -> RobotModel {
        RobotModel {
            name: String::from("hand-built"),
            source: PathBuf::from("/models/hand-built.urdf"),
            base,
            base_placement: Placement::IDENTITY,
            frames: bodies
                .iter()
                .enumerate()
                .map(|(b, body)| Frame {
                    name: body.link.clone(),
                    body: b,
                    placement: Placement::IDENTITY,
                })
                .collect(),
            bodies,
            joints,
            notes: Vec::new(),
        }
    }

    /// A fixed base and one link turning about z (gravity along −z puts no torque on it), its
    /// inertia about the axis `i_axis`.
    fn turntable(i_axis: f64) -> RobotModel {
        model(
            BaseKind::Fixed,
            vec![
                body("base", Inertial::ZERO, vec![]),
                body("disc", inertial(2.0, [0.0; 3], [0.5, 0.5, i_axis]), vec![]),
            ],
            vec![joint(
                "turn",
                JointType::Revolute,
                0,
                [0.0; 3],
                [0.0, 0.0, 1.0],
            )],
        )
    }

    fn scene() -> RobotScene {
        RobotScene::new("/models/hand-built.urdf", 1.0)
    }

    /// A sole box is a collider of its link's body, placed in that link's frame; an unknown link
    /// and a box without volume are refused naming the field.
    #[test]
    fn a_sole_box_is_added_under_its_link_and_named_in_the_notes() {
        let m = turntable(0.3);
        let mut s = scene();
        let plain = RobotPlant::from_model(&s, &m).unwrap();
        assert_eq!(plain.lowest_point_z_m(), f64::INFINITY);
        s.sole_boxes = vec![SoleBox {
            link: String::from("disc"),
            min_m: [-0.1, -0.05, -0.42],
            max_m: [0.1, 0.05, -0.4],
        }];
        let soled = RobotPlant::from_model(&s, &m).unwrap();
        assert!((soled.lowest_point_z_m() + 0.42).abs() < 1e-6);
        assert!(
            soled
                .notes()
                .iter()
                .any(|n| n.contains("sole box under `disc`"))
        );
        s.sole_boxes[0].link = String::from("hat");
        let e = RobotPlant::from_model(&s, &m).unwrap_err();
        assert_eq!(e.field, "sole_boxes", "{e}");
        s.sole_boxes[0].link = String::from("disc");
        s.sole_boxes[0].max_m[2] = -0.42;
        let e = RobotPlant::from_model(&s, &m).unwrap_err();
        assert_eq!(e.field, "sole_boxes[0].max_m[2]", "{e}");
    }

    #[test]
    fn a_minimal_robot_scene_gets_the_defaults_and_its_urdf_is_resolved_against_the_file() {
        let s = parse(&format!("{{{MIN}}}")).unwrap();
        assert_eq!(s.urdf, Path::new("/scenes/r.urdf"));
        assert_eq!((s.dt_s, s.total_steps()), (0.005, 200));
        assert_eq!(s.gravity_m_s2, [0.0, 0.0, -9.81]);
        assert_eq!(s.collision, CollisionMode::ConvexHull);
        assert!(!s.floating_base && !s.self_collision && !s.ignore_joint_friction);
        assert!(s.ground.is_none() && s.initial_q.is_empty());
        let full = format!(
            r#"{{{MIN}, "floating_base": true, "collision": "primitives_only", "base_xyz_m": [0, 0, 0.3],
            "initial_q": {{"a": 0.5, "b": -1}}, "ground": {{"friction": 0.9}}, "self_collision": true}}"#
        );
        let s = parse(&full).unwrap();
        assert_eq!(s.collision, CollisionMode::PrimitivesOnly);
        assert_eq!(s.initial_q.get("b"), Some(&-1.0));
        assert_eq!(
            s.ground,
            Some(Ground {
                height_m: 0.0,
                friction: 0.9
            })
        );
        // Round trip through JSON.
        let back =
            RobotScene::from_json_str(&serde_json::to_string(&s).unwrap(), Path::new("x")).unwrap();
        assert_eq!(back, s);
        // Through PlantScene, by its kind.
        assert!(matches!(
            crate::scene::PlantScene::from_json_str(&full, Path::new("/s/r.json")),
            Ok(crate::scene::PlantScene::Robot(_))
        ));
    }

    #[test]
    fn robot_scene_errors_name_the_field_and_the_reason() {
        let cases: &[(&str, &str, &str)] = &[
            (r#", "dt_s": 0"#, "dt_s", "must be between"),
            (
                r#", "gravity_m_s2": [0, 0]"#,
                "gravity_m_s2",
                "3 numbers expected, got 2",
            ),
            (
                r#", "gravity_m_s2": [0, 0, -1e4]"#,
                "gravity_m_s2[2]",
                "must be between",
            ),
            (
                r#", "base_xyz_m": [0, 2e3, 0]"#,
                "base_xyz_m[1]",
                "must be between",
            ),
            (
                r#", "base_rpy_rad": [0, 0, 1e3]"#,
                "base_rpy_rad[2]",
                "must be between",
            ),
            (
                r#", "initial_q": {"elbow": 0.1, "elbow": 0.2}"#,
                "initial_q",
                "joint `elbow` named twice",
            ),
            (
                r#", "initial_q": {"elbow": 1e4}"#,
                "initial_q.elbow",
                "must be between",
            ),
            (r#", "initial_q": [1, 2]"#, "initial_q", "invalid type"),
            (
                r#", "collision": "meshes""#,
                "collision",
                "unknown variant `meshes`",
            ),
            (
                r#", "ground": {"height_m": 0}"#,
                "ground",
                "missing field `friction`",
            ),
            (
                r#", "ground": {"friction": -1}"#,
                "ground.friction",
                "must be between 0 and 10",
            ),
            (
                r#", "walls": [{"center_m": [0,0,0], "half_extents_m": [1,0,1]}]"#,
                "walls[0].half_extents_m[1]",
                "must be greater than 0",
            ),
            (
                r#", "pushes": [{"body": "", "force_n": [0,0,0], "start_s": 0, "duration_s": 1}]"#,
                "pushes[0].body",
                "must name a link",
            ),
            (r#", "friction": 1"#, "friction", "unknown field `friction`"),
            (
                r#", "balls": [{"id": 7, "spawn_time_s": 0, "position_m": [0,0,0], "velocity_m_s": [0,0,0], "radius_m": 0.1, "mass_kg": 1}]"#,
                "balls[0].id",
                "ids start at 100 (lower ids name the robot's bodies)",
            ),
            (
                r#", "balls": [{"id": 100, "spawn_time_s": 0, "position_m": [0,0,0], "velocity_m_s": [0,0,0], "radius_m": 0.1, "mass_kg": 1}],
                "weights": [{"id": 100, "spawn_time_s": 0, "position_m": [0,0,0], "shape": {"sphere": {"radius_m": 0.1}}, "mass_kg": 1}]"#,
                "weights[0].id",
                "already used by balls[0]",
            ),
            (
                r#", "balls": [{"id": 100, "spawn_time_s": -1, "position_m": [0,0,0], "velocity_m_s": [0,0,0], "radius_m": 0.1, "mass_kg": 1}]"#,
                "balls[0].spawn_time_s",
                "must be between",
            ),
        ];
        for (extra, field, reason) in cases {
            let e = parse(&format!("{{{MIN}{extra}}}")).unwrap_err();
            assert_eq!(e.field, *field, "{extra}: {e}");
            assert!(e.reason.contains(reason), "{extra}: {e}");
            assert_eq!(e.file, Path::new("/scenes/r.json"));
        }
        let e = parse(r#"{"kind": "robot", "urdf": "r.urdf"}"#).unwrap_err();
        assert!(e.reason.contains("missing field `end_time_s`"), "{e}");
        // Non-finite values built in memory.
        let mut s = scene();
        s.gravity_m_s2[2] = f64::NAN;
        assert_eq!(s.validate().unwrap_err().0, "gravity_m_s2[2]");
        let e = RobotPlant::from_model(&s, &turntable(0.1)).unwrap_err();
        assert_eq!(e.field, "gravity_m_s2[2]");
        assert!(e.reason.contains("finite"), "{e}");
    }

    fn ball(id: u16, position_m: [f64; 3], velocity_m_s: [f64; 3]) -> BallSpawn {
        BallSpawn {
            id,
            spawn_time_s: 0.0,
            position_m,
            velocity_m_s,
            radius_m: 0.05,
            mass_kg: 0.2,
        }
    }

    /// A ball thrown at arm3's upper arm touches it: the event names the ball, and the arm
    /// stops it; a weight that flies past touches nothing and keeps its velocity. Neither is in
    /// the contacts (the environment's: none here).
    #[test]
    fn a_ball_thrown_at_the_robot_reports_its_touch() {
        let urdf = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/arm3.urdf");
        let mut s = RobotScene::new(urdf, 0.5);
        s.gravity_m_s2 = [0.0; 3];
        s.balls = vec![ball(100, [0.15, 0.0, 0.5], [0.0, 0.0, -5.0])];
        s.weights = vec![WeightDrop {
            id: 101,
            spawn_time_s: 0.1,
            position_m: [2.0, 0.0, 0.0],
            velocity_m_s: [1.0, 0.0, 0.0],
            shape: crate::scene::WeightShape::Box {
                half_extents_m: [0.05; 3],
            },
            mass_kg: 1.0,
        }];
        let mut plant = RobotPlant::new(&s).unwrap();
        let (mut began, mut ended) = (None, None);
        for _ in 0..100 {
            let f = plant.step(&[0.0; 3]);
            for e in &f.events {
                match *e {
                    Event::ContactBegan { body } => began = Some((body, f.step)),
                    Event::ContactEnded { body } => ended = Some((body, f.step)),
                    other => panic!("{other:?}"),
                }
            }
            assert!(f.contacts.is_empty(), "{f:?}");
        }
        let (body, step) = began.expect("the ball touched the upper arm");
        assert_eq!(body, BodyId(100));
        // It falls 0.41 m at 5 m/s before it touches: 82 ms, the 17th step.
        assert!((15..=18).contains(&step), "{step}");
        // Stopped on top of the upper arm, 4 cm thick: its centre 9 cm above the arm's axis.
        let b = plant.prop_position_m(BodyId(100)).unwrap();
        assert!((b[2] - 0.09).abs() < 0.01, "{b:?}");
        if let Some((body, _)) = ended {
            assert_eq!(body, BodyId(100));
        }
        assert_eq!((plant.live_props(), plant.events_left_out()), (2, 0));
        // The weight spawned at 0.1 s and flew 0.4 s at 1 m/s, touching nothing.
        let w = plant.prop_position_m(BodyId(101)).unwrap();
        assert!((w[0] - 2.4).abs() < 1e-3 && w[1].abs() < 1e-6, "{w:?}");
        assert_eq!(plant.prop_position_m(BodyId(7)), None);
    }

    /// Props fall onto the ground and rest there; the ground's force on a prop is not the
    /// robot's, and props are not events of the ground.
    #[test]
    fn a_ball_dropped_on_the_ground_rests_on_it() {
        let mut s = scene();
        s.ground = Some(Ground {
            height_m: -1.0,
            friction: 0.8,
        });
        s.balls = vec![ball(100, [1.0, 0.0, 0.0], [0.0; 3])];
        let mut plant = RobotPlant::from_model(&s, &turntable(0.3)).unwrap();
        for _ in 0..200 {
            let f = plant.step(&[0.0]);
            assert!(f.events.is_empty() && f.contacts.is_empty(), "{f:?}");
        }
        let z = plant.prop_position_m(BodyId(100)).unwrap()[2];
        assert!((z + 0.95).abs() < 2e-3, "{z}");
    }

    /// What the plant refuses in a model or in a scene against it, naming the joint, link or
    /// field.
    #[test]
    fn models_and_scenes_the_plant_cannot_simulate_are_refused() {
        let build = |s: &RobotScene, m: &RobotModel| RobotPlant::from_model(s, m).unwrap_err();
        let mut m = turntable(0.1);
        m.joints[0].effort = None;
        let e = build(&scene(), &m);
        assert_eq!(e.field, "urdf");
        assert!(
            e.reason
                .contains("joint `turn` has no <limit effort>: every joint needs its torque limit"),
            "{e}"
        );
        assert!(e.reason.starts_with("/models/hand-built.urdf: "), "{e}");
        m.joints[0].effort = Some(0.0);
        assert!(
            build(&scene(), &m)
                .reason
                .contains("must be greater than 0")
        );
        let mut m = turntable(0.1);
        m.bodies[1].inertial.mass_kg = 0.0;
        assert!(
            build(&scene(), &m)
                .reason
                .contains("link `disc`: mass must be greater than 0"),
        );
        // No mass at all is a massless frame only while it carries a body that has mass.
        let mut m = turntable(0.1);
        m.bodies[1].inertial = control_core::tree::Inertial::ZERO;
        assert!(
            build(&scene(), &m)
                .reason
                .contains("link `disc`: mass must be greater than 0"),
        );
        let mut m = turntable(0.1);
        m.joints[0].damping = -1.0;
        assert!(build(&scene(), &m).reason.contains("<dynamics damping>"));
        let mut m = turntable(0.1);
        m.joints[0].axis = [0.0; 3];
        assert!(build(&scene(), &m).reason.contains("<axis xyz>"));
        // The start configuration.
        let mut s = scene();
        s.initial_q.insert(String::from("nope"), 0.1);
        let e = build(&s, &turntable(0.1));
        assert_eq!(e.field, "initial_q.nope");
        assert!(
            e.reason
                .contains("no joint `nope` in /models/hand-built.urdf (joints: turn)"),
            "{e}"
        );
        let mut s = scene();
        s.initial_q.insert(String::from("turn"), 3.5);
        let e = build(&s, &turntable(0.1));
        assert_eq!(e.field, "initial_q.turn");
        assert!(e.reason.contains("limited to [-3, 3] rad, got 3.5"), "{e}");
        let mut m = turntable(0.1);
        m.joints[0].limits = Some((0.5, 1.0));
        let e = build(&scene(), &m);
        assert_eq!(e.field, "initial_q");
        assert!(
            e.reason.contains("joint `turn` is limited to [0.5, 1] rad, which excludes its default start 0: give it a start value in `initial_q`"),
            "{e}"
        );
        // Pushes name a link; the fixed base cannot be pushed.
        let mut s = scene();
        s.pushes.push(Push {
            body: String::from("base"),
            force_n: [1.0, 0.0, 0.0],
            start_s: 0.0,
            duration_s: 1.0,
        });
        let e = build(&s, &turntable(0.1));
        assert_eq!(e.field, "pushes[0].body");
        assert!(e.reason.contains("fixed base"), "{e}");
        s.pushes[0].body = String::from("lid");
        assert!(build(&s, &turntable(0.1)).reason.contains("no link `lid`"));
        s.pushes[0].body = String::from("disc");
        assert!(RobotPlant::from_model(&s, &turntable(0.1)).is_ok());
        // A mesh that cannot be read: refused naming the link and the file, unless meshes are
        // not loaded.
        let mut m = turntable(0.1);
        m.bodies[1].collisions.push(Shape {
            link: String::from("disc"),
            placement: Placement::IDENTITY,
            geometry: Geometry::Mesh {
                path: PathBuf::from("/nonexistent/disc.stl"),
                filename: String::from("package://x/disc.stl"),
                scale: [1.0; 3],
            },
        });
        let e = build(&scene(), &m);
        assert_eq!(e.field, "urdf");
        assert!(
            e.reason.contains("link `disc`: collision mesh package://x/disc.stl (/nonexistent/disc.stl): cannot read"),
            "{e}"
        );
        let mut s = scene();
        s.collision = CollisionMode::PrimitivesOnly;
        let p = RobotPlant::from_model(&s, &m).unwrap();
        assert_eq!(
            p.notes(),
            [String::from(
                "collision \"primitives_only\": 1 collision mesh(es) not loaded: `disc` (package://x/disc.stl)"
            )]
        );
    }

    /// Rapier 0.36 integrates a free multibody root's position as if its generalized linear
    /// velocity were that of the root body's frame origin, while its dynamics take it for the
    /// velocity of the body's centre of mass: with the two apart, a body spinning freely drags
    /// its centre of mass around its origin (measured: 0.5 m off after 1 s for a centre 0.5 m
    /// from the origin). The plant puts a floating base's Rapier frame at its centre of mass:
    /// then the robot's centre of mass moves in a straight line at its initial velocity, as
    /// momentum says.
    /// A floating base tumbling freely for 40 s: every frame it reports decodes (Rapier lets its
    /// root quaternion's norm drift in f32; the plant renormalizes what it reports once the
    /// drift would leave a frame's tolerance).
    #[test]
    fn a_tumbling_floating_base_reports_unit_orientations() {
        let m = model(
            BaseKind::Floating,
            vec![
                body("base", inertial(1.0, [0.0; 3], [0.1, 0.2, 0.3]), vec![]),
                body(
                    "tip",
                    inertial(0.2, [0.05, 0.0, 0.0], [1e-3, 2e-3, 3e-3]),
                    vec![],
                ),
            ],
            vec![joint(
                "j",
                JointType::Revolute,
                0,
                [0.3, 0.0, 0.0],
                [0.0, 1.0, 0.0],
            )],
        );
        let mut s = scene();
        s.gravity_m_s2 = [0.0; 3];
        s.end_time_s = 40.0;
        let mut p = RobotPlant::from_model(&s, &m).unwrap();
        p.set_state(
            &Placement::IDENTITY,
            [0.0, 0.0, 0.0, 3.0, 5.0, 7.0],
            &[0.0],
            &[2.0],
        )
        .unwrap();
        let mut buf = [0u8; control_core::frames::STATE_FRAME_LEN];
        let mut worst = 0.0f64;
        for _ in 0..8000 {
            let f = p.step(&[]);
            for b in &f.bodies {
                let n2: f64 = b.orientation.iter().map(|x| x * x).sum();
                worst = worst.max((n2.sqrt() - 1.0).abs());
            }
            let n = f.encode(&mut buf).unwrap();
            StateFrame::decode(&buf[..n]).unwrap_or_else(|e| panic!("step {}: {e}", f.step));
        }
        assert!(
            worst <= control_core::frames::UNIT_QUATERNION_TOLERANCE,
            "{worst}"
        );
    }

    #[test]
    fn a_floating_base_spinning_freely_keeps_its_momentum() {
        let m = model(
            BaseKind::Floating,
            vec![
                body(
                    "base",
                    inertial(1.0, [0.5, 0.0, 0.0], [0.1, 0.1, 0.1]),
                    vec![],
                ),
                body(
                    "tip",
                    inertial(0.2, [0.05, 0.0, 0.0], [1e-3, 1e-3, 1e-3]),
                    vec![],
                ),
            ],
            vec![joint(
                "j",
                JointType::Revolute,
                0,
                [-0.3, 0.0, 0.0],
                [0.0, 0.0, 1.0],
            )],
        );
        let mut s = scene();
        s.gravity_m_s2 = [0.0; 3];
        s.dt_s = 0.001;
        let mut p = RobotPlant::from_model(&s, &m).unwrap();
        // The base origin at rest, turning at 1 rad/s about z: the centre of mass moves.
        p.set_state(
            &Placement::IDENTITY,
            [0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
            &[0.0],
            &[0.0],
        )
        .unwrap();
        let v = p.generalized_velocity();
        assert!(
            (v[5] - 1.0).abs() < 1e-6 && v[..3].iter().all(|x| x.abs() < 1e-6),
            "{v:?}"
        );
        let c0 = p.centre_of_mass();
        // Total momentum / total mass: ω × (c_total − origin) with the tip turning along.
        let vcom = [-c0[1], c0[0], 0.0];
        for _ in 0..1000 {
            p.step(&[]);
        }
        let c1 = p.centre_of_mass();
        let off: f64 = (0..3)
            .map(|k| (c1[k] - (c0[k] + vcom[k])).powi(2))
            .sum::<f64>()
            .sqrt();
        println!("free spin: centre of mass {off:.2e} m from the straight line after 1 s");
        assert!(off < 1e-3, "{c0:?} → {c1:?}, expected + {vcom:?}");
    }

    /// URDF `<dynamics friction>` as Rapier's per-DoF dry friction (`Multibody::frictions_mut`):
    /// a torque below it does not move the joint, one above it accelerates it by the difference.
    /// `<dynamics damping>` as Rapier's per-DoF damping (`Multibody::damping_mut`, implicit): the
    /// velocity decays as 1 / (1 + dt·d / I) per step.
    #[test]
    fn joint_friction_and_damping_are_the_urdf_s() {
        let i_axis = 0.1;
        let mut m = turntable(i_axis);
        m.joints[0].friction = 2.0;
        let mut p = RobotPlant::from_model(&scene(), &m).unwrap();
        for _ in 0..100 {
            p.step(&[1.9]);
        }
        let held = p.joint_states()[0];
        assert!(
            held.velocity_rad_s.abs() < 1e-3 && held.position_rad.abs() < 1e-3,
            "{held:?}"
        );
        let steps = 100;
        for _ in 0..steps {
            p.step(&[3.0]);
        }
        let w = p.joint_states()[0].velocity_rad_s;
        let expected = (3.0 - 2.0) / i_axis * steps as f64 * p.clock().dt_s();
        println!(
            "dry friction: {w:.5} rad/s after 0.5 s at 3 N·m against 2 N·m, expected {expected:.5}"
        );
        assert!((w / expected - 1.0).abs() < 0.01, "{w} vs {expected}");
        // Opted out: the same torque below the friction turns it, and the notes say so.
        let mut s = scene();
        s.ignore_joint_friction = true;
        let mut p = RobotPlant::from_model(&s, &m).unwrap();
        assert_eq!(
            p.notes(),
            [String::from(
                "ignore_joint_friction: <dynamics friction> not applied on 1 joint(s): `turn` (2)"
            )]
        );
        p.step(&[1.9]);
        assert!(p.joint_states()[0].velocity_rad_s > 0.09);

        let mut m = turntable(i_axis);
        m.joints[0].damping = 0.4;
        let mut p = RobotPlant::from_model(&scene(), &m).unwrap();
        p.set_state(&Placement::IDENTITY, [0.0; 6], &[0.0], &[5.0])
            .unwrap();
        for _ in 0..200 {
            p.step(&[]);
        }
        let w = p.joint_states()[0].velocity_rad_s;
        // Implicit in each of the solver's substeps (dt / 4 each).
        let substeps = 4;
        let expected =
            5.0 / (1.0 + 0.005 / f64::from(substeps) * 0.4 / i_axis).powi(200 * substeps);
        println!("damping: {w:.5} rad/s after 1 s from 5, expected {expected:.5}");
        assert!((w / expected - 1.0).abs() < 1e-3, "{w} vs {expected}");
    }

    /// A joint pushed into its limit stops there (Rapier's multibody limit).
    #[test]
    fn joint_limits_hold() {
        let mut m = turntable(0.1);
        m.joints[0].limits = Some((-0.5, 0.5));
        let mut p = RobotPlant::from_model(&scene(), &m).unwrap();
        for _ in 0..200 {
            p.step(&[1.0]);
        }
        let s = p.joint_states()[0];
        println!(
            "limit 0.5 rad pushed by 1 N·m for 1 s: at {:.5} rad",
            s.position_rad
        );
        // The velocity read at the limit under a constant push is that of the solver's last
        // substep (a quarter of one step's τ·dt/I = 0.05 rad/s): the position does not move.
        println!("… velocity read there {:.5} rad/s", s.velocity_rad_s);
        assert!(
            (s.position_rad - 0.5).abs() < 1e-3 && s.velocity_rad_s.abs() < 0.02,
            "{s:?}"
        );
        // Torques are checked, never clamped.
        assert_eq!(p.check_torques(&[100.0]), Ok(()));
        assert_eq!(p.check_torques(&[100.000_001]), Err((0, 100.000_001)));
        assert_eq!(p.check_torques(&[f64::NAN]).unwrap_err().0, 0);
        assert_eq!(p.check_torques(&[0.0, 0.0]), Ok(()));
        assert_eq!(p.check_torques(&[0.0, 1.0]), Err((1, 1.0)));
    }

    /// A cylinder is along its frame's z (Rapier's along y, turned); a fixed base welded at the
    /// scene's pose; a state frame's bodies and joints.
    #[test]
    fn shapes_poses_and_frames() {
        let mut m = turntable(0.1);
        m.bodies[1].collisions.push(Shape {
            link: String::from("disc"),
            placement: Placement::from_xyz_rpy([0.0, 0.0, 1.0], [0.0; 3]),
            geometry: Geometry::Cylinder {
                radius: 0.1,
                length: 1.0,
            },
        });
        let mut s = scene();
        s.base_xyz_m = [0.0, 0.0, 2.0];
        let mut p = RobotPlant::from_model(&s, &m).unwrap();
        assert!(
            (p.lowest_point_z_m() - 2.5).abs() < 1e-6,
            "{}",
            p.lowest_point_z_m()
        );
        assert_eq!(p.base_pose().xyz_m, [0.0, 0.0, 2.0]);
        let f = p.step(&[1.0]);
        assert_eq!((f.step, f.joints.len(), f.bodies.len()), (1, 1, 2));
        assert!(f.joints[0].velocity_rad_s > 0.0);
        assert_eq!(f.bodies[1].com_m, [0.0, 0.0, 2.0]);
        assert_eq!(p.body_names(), ["base", "disc"]);
        assert_eq!(p.link_body_id("disc"), Some(BodyId(1)));
    }

    /// The root cause, in isolation. Rapier's own decomposition of an inertia matrix (parry
    /// 0.31's `MassProperties::with_inertia_matrix`, glamx 0.3's `SymmetricEigen3`) takes x as
    /// the axis of the smallest moment whenever the products of the moments' differences are
    /// below 1e-10 (kg·m²)², as for any link of a few grams: SO-100's jaw, diagonal in
    /// descending order, comes back with its moments about x and z swapped. The plant gives
    /// Rapier each body in its principal frame, smallest moment on x, so that the jaw on its
    /// turned joint (origin rpy (0, 3.14158, 0)) has its inertia about whichever axis it turns
    /// on: a'·I·a + m·|c × a|², to f32.
    #[test]
    fn a_descending_inertia_on_a_turned_joint_is_about_the_right_axis() {
        let mass = 0.0202444;
        let com = [-0.00161745, -0.0303473, 0.000449646];
        let diag = [1.11265e-05, 8.99651e-06, 2.99548e-06];

        // Upstream: Rapier's decomposition of the diagonal puts izz about x and ixx about z.
        let [a, b, c] = diag.map(|x| x as Real);
        let m = rapier3d::math::Matrix::from_diagonal(Vector::new(a, b, c));
        let back = MassProperties::with_inertia_matrix(Vector::ZERO, mass as Real, m)
            .reconstruct_inertia_matrix();
        let got = [back.x_axis.x, back.y_axis.y, back.z_axis.z].map(f64::from);
        println!("Rapier's with_inertia_matrix of diag {diag:?}: back as diag {got:?}");
        assert!(
            (got[0] - diag[2]).abs() < 1e-12 && (got[2] - diag[0]).abs() < 1e-12,
            "Rapier's decomposition now gives {got:?} for {diag:?}: fixed upstream? (the plant \
             stays right either way; update the module doc)"
        );
        // Ours: a signed permutation, moments ascending.
        let (p, moments) = principal_axes([diag[0], 0.0, 0.0, diag[1], 0.0, diag[2]]);
        assert_eq!(moments, [diag[2], diag[1], diag[0]]);
        assert_eq!(p, DMat3::from_cols(DVec3::Z, DVec3::Y, DVec3::NEG_X));
        // And a full inertia: P·diag·Pᵀ gives it back.
        let full = [2e-5, 3e-6, -1e-6, 1.5e-5, 2e-6, 4e-6];
        let (p, moments) = principal_axes(full);
        let i = p * DMat3::from_diagonal(DVec3::from_array(moments)) * p.transpose();
        let want = DMat3::from_cols(
            DVec3::new(full[0], full[1], full[2]),
            DVec3::new(full[1], full[3], full[4]),
            DVec3::new(full[2], full[4], full[5]),
        );
        let diff = (i - want)
            .to_cols_array()
            .iter()
            .fold(0.0f64, |m, x| m.max(x.abs()));
        assert!(diff < 1e-20, "{i:?} vs {want:?}");
        assert!(moments[0] <= moments[1] && moments[1] <= moments[2]);
        assert!((p.determinant() - 1.0).abs() < 1e-12);

        // The plant: the jaw on a turned joint about x, y and z in turn.
        let rpy = [0.0, 3.14158, 0.0];
        for axis in [DVec3::X, DVec3::Y, DVec3::Z] {
            let mut j = joint("gripper", JointType::Revolute, 0, [0.0; 3], axis.to_array());
            j.origin = Placement::from_xyz_rpy([-0.0202, -0.0244, 0.0], rpy);
            let m = model(
                BaseKind::Fixed,
                vec![
                    body("base", Inertial::ZERO, vec![]),
                    body(
                        "jaw",
                        inertial(mass, com, diag),
                        vec![Geometry::Box {
                            size: [0.02, 0.06, 0.01],
                        }],
                    ),
                ],
                vec![j],
            );
            let mut p = RobotPlant::from_model(&scene(), &m).unwrap();
            let c = DVec3::from_array(com);
            let truth =
                DVec3::from_array(diag).dot(axis * axis) + mass * c.cross(axis).length_squared();
            let got = p.mass_matrix()[0][0];
            println!(
                "jaw about {axis}: plant {got:.6e}, truth {truth:.6e} ({:.1e} relative)",
                got / truth - 1.0
            );
            assert!(
                (got / truth - 1.0).abs() < 1e-6,
                "about {axis}: {got} vs {truth}"
            );
            // The frames still carry the model frame's orientation (the joint's origin at q = 0).
            let o = p.body_motions()[1].orientation;
            let half = rpy[1] / 2.0;
            let want = [half.cos(), 0.0, half.sin(), 0.0];
            let dot: f64 = o.iter().zip(want).map(|(x, y)| x * y).sum();
            assert!(1.0 - dot.abs() < 1e-12, "{o:?} vs {want:?}");
        }
    }

    /// More bodies than a frame carries: the first [`MAX_BODIES`] are sent, the rest named in
    /// the notes.
    #[test]
    fn bodies_beyond_a_frame_are_left_out_and_said() {
        let n = MAX_BODIES + 2;
        let mut bodies = vec![body("l0", Inertial::ZERO, vec![])];
        let mut joints = Vec::new();
        for k in 1..=n {
            bodies.push(body(
                &format!("l{k}"),
                inertial(1.0, [0.05, 0.0, 0.0], [1e-3; 3]),
                vec![],
            ));
            let mut j = joint(
                &format!("j{k}"),
                JointType::Revolute,
                k - 1,
                [0.1, 0.0, 0.0],
                [0.0, 0.0, 1.0],
            );
            j.limits = None;
            j.continuous = true;
            joints.push(j);
        }
        let mut p =
            RobotPlant::from_model(&scene(), &model(BaseKind::Fixed, bodies, joints)).unwrap();
        assert_eq!(p.bodies_left_out(), 3);
        assert_eq!(
            p.notes(),
            [String::from(
                "state frames carry the first 16 of 19 bodies; left out: l16, l17, l18"
            )]
        );
        let f = p.step(&[]);
        assert_eq!((f.joints.len(), f.bodies.len()), (n, MAX_BODIES));
    }

    fn temp(name: &str, bytes: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sim-host-robot-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn obj(v: &[[f32; 3]], f: &[[usize; 3]]) -> Vec<u8> {
        let mut s = String::from("mtllib missing.mtl\n");
        for p in v {
            s += &format!("v {} {} {}\n", p[0], p[1], p[2]);
        }
        for t in f {
            s += &format!("f {} {} {}\n", t[0] + 1, t[1] + 1, t[2] + 1);
        }
        s.into_bytes()
    }

    fn dae(v: &[[f32; 3]], f: &[[usize; 3]], up: &str, unit: f32) -> Vec<u8> {
        let pos: Vec<String> = v.iter().flatten().map(|x| x.to_string()).collect();
        let idx: Vec<String> = f.iter().flatten().map(|x| x.to_string()).collect();
        format!(
            r##"<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit name="u" meter="{unit}"/><up_axis>{up}</up_axis></asset>
  <library_geometries>
    <geometry id="box" name="box"><mesh>
      <source id="box-pos"><float_array id="box-pos-array" count="{n}">{pos}</float_array>
        <technique_common><accessor source="#box-pos-array" count="{nv}" stride="3">
          <param name="X" type="float"/><param name="Y" type="float"/><param name="Z" type="float"/>
        </accessor></technique_common></source>
      <vertices id="box-vtx"><input semantic="POSITION" source="#box-pos"/></vertices>
      <triangles count="{nt}"><input semantic="VERTEX" source="#box-vtx" offset="0"/><p>{idx}</p></triangles>
    </mesh></geometry>
  </library_geometries>
  <library_visual_scenes><visual_scene id="s"><node id="n"><instance_geometry url="#box"/></node></visual_scene></library_visual_scenes>
  <scene><instance_visual_scene url="#s"/></scene>
</COLLADA>"##,
            n = pos.len(),
            pos = pos.join(" "),
            nv = v.len(),
            nt = f.len(),
            idx = idx.join(" "),
        )
        .into_bytes()
    }

    /// Each format read to the same hull (the box), the scale applied per axis; what cannot be
    /// read or hulled refused with the reason.
    #[test]
    fn meshes_are_read_and_hulled_or_refused() {
        let (v, f) = box_mesh([-0.1, -0.2, 0.0], [0.3, 0.2, 0.1]);
        let mut solid_header = binary_stl(&v, &f);
        solid_header[..11].copy_from_slice(b"solid box  ");
        let files = [
            temp("box.stl", &binary_stl(&v, &f)),
            temp("box_solid_header.stl", &solid_header),
            temp("box_ascii.STL", &ascii_stl("box", &v, &f)),
            temp("box.obj", &obj(&v, &f)),
            temp("box.dae", &dae(&v, &f, "Z_UP", 1.0)),
        ];
        let scale = [2.0, 1.0, 0.5];
        for path in &files {
            let (hull, _) =
                load_hull(path, scale).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let aabb = hull.compute_local_aabb();
            let (lo, hi) = (arr(aabb.mins), arr(aabb.maxs));
            let want_lo = [-0.2, -0.2, 0.0];
            let want_hi = [0.6, 0.2, 0.05];
            for k in 0..3 {
                assert!(
                    (lo[k] - want_lo[k]).abs() < 1e-6 && (hi[k] - want_hi[k]).abs() < 1e-6,
                    "{}: {lo:?} {hi:?}",
                    path.display()
                );
            }
        }
        // Collada's unit is applied.
        let cm = temp("box_cm.dae", &dae(&v, &f, "Z_UP", 0.01));
        let aabb = load_hull(&cm, [1.0; 3]).unwrap().0.compute_local_aabb();
        assert!((f64::from(aabb.maxs.x) - 0.003).abs() < 1e-7, "{aabb:?}");
        // Another <up_axis> is read as written (not rotated, as RViz and MoveIt read it), and
        // said.
        let (y_up, axis) =
            load_hull(&temp("y_up.dae", &dae(&v, &f, "Y_UP", 1.0)), [1.0; 3]).unwrap();
        let z_up = load_hull(&temp("z_up.dae", &dae(&v, &f, "Z_UP", 1.0)), [1.0; 3]).unwrap();
        assert_eq!(axis.as_deref(), Some("Y_UP"));
        assert_eq!(z_up.1, None);
        assert_eq!(y_up.compute_local_aabb(), z_up.0.compute_local_aabb());
        let refused: &[(PathBuf, &str)] = &[
            (
                temp("junk.stl", b"not a mesh at all, not even close"),
                "cannot parse",
            ),
            (
                temp(
                    "flat.stl",
                    &binary_stl(&box_mesh([0.0; 3], [1.0, 1.0, 0.0]).0, &f),
                ),
                "no convex hull with a volume",
            ),
            (temp("box.ply", b"ply"), "unsupported mesh format `.ply`"),
            (std::env::temp_dir(), "not a regular file"),
            (PathBuf::from("/nonexistent/x.stl"), "cannot read"),
        ];
        for (path, reason) in refused {
            let e = load_hull(path, [1.0; 3]).err().unwrap_or_default();
            assert!(e.contains(reason), "{}: {e}", path.display());
        }
    }
}
