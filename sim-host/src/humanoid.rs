//! A 15-body humanoid with a floating root as a Rapier plant: the body described by a URDF file
//! (`models/humanoid15.urdf`, after Cartwheel-3d's "Bip"), read by [`HumanoidModel::load`] (the
//! controller reads the same file with the same function: one description feeds both), stepped
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
//! # The description (URDF conventions)
//! - World: y up, the character faces +x, its left side towards −z. Every link frame is parallel
//!   to the world in the zero pose (every `<origin rpy>` of a joint or an `<inertial>` is 0), so
//!   each body's orientation is the identity when every joint is at zero (standing, arms out in
//!   a T). Link order is body order (the wire's `BodyId`), the root (no parent joint) first;
//!   joint order is torque order, each joint's parent posed by an earlier joint (or the root).
//! - A body's mass and inertia are its `<inertial>`: principal moments `ixx iyy izz` about its
//!   axes through its centre of mass (`ixy ixz iyz` must be 0), at `<origin xyz>` in its link
//!   frame. Its collision shapes (`<box>`, `<sphere>`, `<capsule>` along its frame's z, URDF's
//!   convention) touch the ground only: self-collision is off.
//! - Bounds (refused beyond, naming the link and element): a mass in (0,
//!   [`crate::input::MAX_URDF_MASS_KG`]] kg, principal moments in (0,
//!   [`crate::input::MAX_URDF_INERTIA_KG_M2`]] kg·m², every origin coordinate and shape size
//!   within [`crate::input::MAX_URDF_LENGTH_M`] m. The file is read by
//!   [`crate::input::read_urdf`] (a regular file of at most 16 MiB, nested at most 64 elements
//!   deep, at most 100 000 elements).
//! - Joints: `type="spherical"` is a ball joint ([`JointKind::Ball`]); `type="revolute"` a hinge
//!   about its `<axis>` ([`JointKind::Hinge`]); a spherical joint with exactly one axis's range
//!   `[0, 0]` is a two-axis joint ([`JointKind::TwoAxis`], that axis locked: the humanoid's
//!   ankles, Cartwheel's universal joints). A joint's anchor is its `<origin xyz>`.
//! - Limits: a hinge's `<limit lower upper>`, rad. A spherical joint's per-axis ranges are two
//!   extra attributes of its `<limit>`, this project's extension: `lower_xyz="lx ly lz"
//!   upper_xyz="hx hy hz"` (rad, about the joint frame's x, y, z = the parent's axes); its
//!   `lower`/`upper` must be left out. The angle about axis k of a relative rotation
//!   q = q_parent⁻¹·q_child is 2·atan2(q_k, q_w) ([`per_axis_angles_rad`], Rapier's measure; for
//!   a rotation about one axis, its angle). `<limit effort>` bounds the norm of the joint's
//!   torque vector, N·m; `velocity` is required by URDF and not enforced.
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

use control_core::frames::{
    BodyId, BodyMotion, ContactForce, Event, MAX_BODIES, MAX_EVENTS, MAX_JOINTS, StateFrame,
};
use rapier3d::parry::glamx::glam::{DQuat, DVec3};
use rapier3d::prelude::*;
use serde::{Deserialize, Serialize};

use crate::clock::PlantClock;
use crate::environment::{ActivePush, Push, apply_pushes};
use crate::input::{MAX_URDF_INERTIA_KG_M2, MAX_URDF_LENGTH_M, MAX_URDF_MASS_KG};
use crate::scene::{
    BallSpawn, Checker, DEFAULT_DT_S, MAX_PUSH_FORCE_N, MAX_TORQUE_LIMIT_NM, SceneError, steps_for,
};

/// The bodies whose ground force every state frame carries, in frame order.
pub const CONTACT_BODY_NAMES: [&str; 4] = ["left_foot", "right_foot", "left_toes", "right_toes"];
/// Most joints a humanoid has: 3 torque values each and 3 for the root fit a torque frame.
pub const MAX_HUMANOID_JOINTS: usize = (MAX_JOINTS - 3) / 3;
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
pub const MAX_BALLS: usize = 64;
/// The smallest id a ball may have: ids below are the humanoid's body indices, which the
/// ground-contact events name.
pub const FIRST_BALL_ID: u16 = 100;
/// A root torque's vertical part is refused beyond this times max(1, |τ|).
pub const ROOT_TORQUE_VERTICAL_TOLERANCE: f64 = 1e-9;
/// Events held for later frames beyond this many are dropped (and counted).
const MAX_PENDING_EVENTS: usize = 256;

// ---------------------------------------------------------------------------------------------
// The model

/// The humanoid as its URDF describes it, checked: what the plant builds and what a controller
/// models. Read with [`Self::load`].
#[derive(Debug, Clone, PartialEq)]
pub struct HumanoidModel {
    /// The `<robot name>`.
    pub name: String,
    /// The bodies, URDF link order (body order on the wire); the root first.
    pub bodies: Vec<BodyModel>,
    /// The joints, URDF joint order (torque order); each joint's parent is the root or the
    /// child of an earlier joint.
    pub joints: Vec<JointModel>,
    /// Body indices of [`CONTACT_BODY_NAMES`]: left foot, right foot, left toes, right toes.
    pub ground_contact_bodies: [usize; 4],
}

/// One rigid body.
#[derive(Debug, Clone, PartialEq)]
pub struct BodyModel {
    /// Its link name.
    pub name: String,
    /// Mass, kg.
    pub mass_kg: f64,
    /// Principal moments of inertia about the body's x, y, z axes through its centre of mass,
    /// kg·m² (the `<inertia>` diagonal).
    pub inertia_kg_m2: [f64; 3],
    /// Its centre of mass in its URDF link frame (`<inertial><origin xyz>`), m. Everything else
    /// here is relative to the centre of mass.
    pub com_in_link_m: [f64; 3],
    /// Its collision shapes.
    pub shapes: Vec<ShapeModel>,
}

/// A collision shape of a body, placed relative to the body's centre of mass in body axes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShapeModel {
    /// The shape.
    pub geometry: Geometry,
    /// Its centre, m.
    pub center_m: [f64; 3],
    /// Its rotation, a unit quaternion (w, x, y, z): shape frame to body frame.
    pub orientation: [f64; 4],
}

/// A shape's geometry, in its own frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Geometry {
    /// A box.
    Box {
        /// Half its size along x, y, z, m.
        half_extents_m: [f64; 3],
    },
    /// A sphere.
    Sphere {
        /// Its radius, m.
        radius_m: f64,
    },
    /// A capsule along z: a cylinder of length 2 × `half_length_m` capped by half spheres.
    Capsule {
        /// Its radius, m.
        radius_m: f64,
        /// Half the cylinder's length (URDF's `length` / 2), m.
        half_length_m: f64,
    },
}

/// One joint between two bodies.
#[derive(Debug, Clone, PartialEq)]
pub struct JointModel {
    /// Its name.
    pub name: String,
    /// Parent body index.
    pub parent: usize,
    /// Child body index.
    pub child: usize,
    /// What it lets turn, and its limits.
    pub kind: JointKind,
    /// The joint's point relative to the parent's centre of mass, parent axes, m.
    pub anchor_in_parent_m: [f64; 3],
    /// The same point relative to the child's centre of mass, child axes, m.
    pub anchor_in_child_m: [f64; 3],
    /// The largest norm of its torque vector, N·m (`<limit effort>`).
    pub effort_nm: f64,
}

/// A joint's degrees of freedom and limits. Axes are in the joint frame (the parent's axes;
/// the child's too in the zero pose); angles are measured by [`per_axis_angles_rad`] on the
/// child's rotation relative to the parent, the hinge's about its axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum JointKind {
    /// Three rotational degrees of freedom, each axis limited.
    Ball {
        /// `[lower, upper]` about x, y and z, rad.
        limits_rad: [[f64; 2]; 3],
    },
    /// One, about `axis`.
    Hinge {
        /// Unit axis.
        axis: [f64; 3],
        /// `[lower, upper]`, rad.
        limits_rad: [f64; 2],
    },
    /// Two, about two of the coordinate axes; the third is locked (no twist about it).
    TwoAxis {
        /// The two free unit axes, in x, y, z order.
        axes: [[f64; 3]; 2],
        /// `[lower, upper]` about each, rad.
        limits_rad: [[f64; 2]; 2],
    },
}

/// Where a body is: its centre of mass and orientation (unit quaternion w, x, y, z), world frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BodyPose {
    /// Centre of mass, m.
    pub com_m: [f64; 3],
    /// Orientation: body frame to world frame.
    pub orientation: [f64; 4],
}

/// A URDF the humanoid model refuses: which file, which element, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError {
    /// The file.
    pub file: PathBuf,
    /// The element: ``joint `left_hip` <limit>``, ``link `torso` <inertial>``, `(document)`.
    pub element: String,
    /// Why.
    pub reason: String,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "humanoid URDF {}: {}: {}",
            self.file.display(),
            self.element,
            self.reason
        )
    }
}

impl std::error::Error for ModelError {}

/// The angle about each axis x, y, z of the rotation `q` (w, x, y, z), rad, in (−π, π]:
/// 2·atan2(q_k, q_w) with q and −q alike (Rapier's per-axis measure, which the joint limits use).
/// For a rotation about one coordinate axis, its angle about that axis and 0 about the others.
pub fn per_axis_angles_rad(q: [f64; 4]) -> [f64; 3] {
    let [w, x, y, z] = if q[0] < 0.0 { q.map(|c| -c) } else { q };
    [x, y, z].map(|c| 2.0 * c.atan2(w))
}

fn dvec(a: [f64; 3]) -> DVec3 {
    DVec3::from_array(a)
}

fn dquat(q: [f64; 4]) -> DQuat {
    DQuat::from_xyzw(q[1], q[2], q[3], q[0])
}

fn quat_array(q: DQuat) -> [f64; 4] {
    [q.w, q.x, q.y, q.z]
}

const COORDINATE_AXES: [[f64; 3]; 3] = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];

impl HumanoidModel {
    /// Reads and checks the humanoid of the URDF file `path` (read by
    /// [`crate::input::read_urdf`]: a regular file, size and nesting capped).
    pub fn load(path: &Path) -> Result<Self, ModelError> {
        let text = crate::input::read_urdf(path).map_err(|e| ModelError {
            file: e.file,
            element: String::from("(file)"),
            reason: e.reason,
        })?;
        Self::from_urdf_str(&text, path)
    }

    /// Reads and checks the humanoid of the URDF text `text`; `file` names it in errors. Text
    /// nested deeper than [`crate::input::MAX_XML_DEPTH`] elements, or with more than
    /// [`crate::input::MAX_XML_ELEMENTS`], is refused before it is parsed.
    pub fn from_urdf_str(text: &str, file: &Path) -> Result<Self, ModelError> {
        let err = |element: String, reason: String| ModelError {
            file: file.to_path_buf(),
            element,
            reason,
        };
        crate::input::check_xml(
            text,
            crate::input::MAX_XML_DEPTH,
            crate::input::MAX_XML_ELEMENTS,
        )
        .map_err(|reason| err(String::from("(document)"), reason))?;
        let robot = urdf_rs::read_from_string(text)
            .map_err(|e| err(String::from("(document)"), format!("not a URDF: {e}")))?;
        let extension = joint_limit_attributes(text)
            .map_err(|reason| err(String::from("(document)"), reason))?;
        let names: Vec<&str> = robot.joints.iter().map(|j| j.name.as_str()).collect();
        let scanned: Vec<&str> = extension.iter().map(|(n, _)| n.as_str()).collect();
        if names != scanned {
            return Err(err(
                String::from("(document)"),
                format!(
                    "the joints urdf-rs reads ({}) are not those the <limit> reader finds ({})",
                    names.join(", "),
                    scanned.join(", ")
                ),
            ));
        }

        let n_links = robot.links.len();
        if !(2..=MAX_BODIES).contains(&n_links) {
            return Err(err(
                String::from("<robot>"),
                format!(
                    "{n_links} links: a humanoid has 2 to {MAX_BODIES} (a state frame's bodies)"
                ),
            ));
        }
        if robot.joints.len() > MAX_HUMANOID_JOINTS {
            return Err(err(
                String::from("<robot>"),
                format!(
                    "{} joints: at most {MAX_HUMANOID_JOINTS} (3 torque values each and 3 for the root fit a torque frame)",
                    robot.joints.len()
                ),
            ));
        }
        let mut bodies = Vec::with_capacity(n_links);
        for (i, l) in robot.links.iter().enumerate() {
            if robot.links[..i].iter().any(|o| o.name == l.name) {
                return Err(err(
                    format!("link `{}`", l.name),
                    String::from("two links have this name"),
                ));
            }
            bodies.push(body_model(l).map_err(|(element, reason)| err(element, reason))?);
        }
        let link_index = |name: &str| robot.links.iter().position(|l| l.name == name);

        let no_attributes = Attributes::new();
        let mut joints: Vec<JointModel> = Vec::with_capacity(robot.joints.len());
        let mut posed = vec![false; n_links];
        let mut has_parent = vec![false; n_links];
        for (i, j) in robot.joints.iter().enumerate() {
            let at = |what: &str| format!("joint `{}`{what}", j.name);
            if joints.iter().any(|o| o.name == j.name) {
                return Err(err(at(""), String::from("two joints have this name")));
            }
            let (Some(parent), Some(child)) =
                (link_index(&j.parent.link), link_index(&j.child.link))
            else {
                let missing = if link_index(&j.parent.link).is_none() {
                    &j.parent.link
                } else {
                    &j.child.link
                };
                return Err(err(
                    at(""),
                    format!("names a link `{missing}` the file does not have"),
                ));
            };
            if has_parent[child] {
                return Err(err(
                    at(""),
                    format!(
                        "link `{}` is the child of two joints: the links must form a tree",
                        j.child.link
                    ),
                ));
            }
            if child == 0 {
                return Err(err(
                    at(""),
                    format!(
                        "its child `{}` is the first link, which must be the root (no parent joint)",
                        j.child.link
                    ),
                ));
            }
            has_parent[child] = true;
            if parent != 0 && !posed[parent] {
                return Err(err(
                    at(""),
                    format!(
                        "its parent `{}` is not the root nor the child of an earlier joint: list the joints from the root outwards",
                        j.parent.link
                    ),
                ));
            }
            posed[child] = true;
            let xyz = j.origin.xyz.0;
            if !xyz
                .iter()
                .all(|x| x.is_finite() && x.abs() <= MAX_URDF_LENGTH_M)
            {
                return Err(err(
                    at(" <origin>"),
                    format!("xyz must be finite and within ±{MAX_URDF_LENGTH_M} m, got {xyz:?}"),
                ));
            }
            if j.origin.rpy.0 != [0.0; 3] {
                return Err(err(
                    at(" <origin>"),
                    String::from(
                        "rpy must be 0: every link frame is parallel to the world's in the zero pose",
                    ),
                ));
            }
            let effort = j.limit.effort;
            if !(effort > 0.0 && effort <= MAX_TORQUE_LIMIT_NM) {
                return Err(err(
                    at(" <limit>"),
                    format!(
                        "effort (the largest torque norm) must be greater than 0 and at most {MAX_TORQUE_LIMIT_NM} N·m, got {effort}"
                    ),
                ));
            }
            // The reader found the same joints in the same order (checked above).
            let attrs = extension.get(i).map_or(&no_attributes, |(_, a)| a);
            let kind = joint_kind(j, attrs).map_err(|(what, reason)| err(at(what), reason))?;
            let p = &bodies[parent];
            let c = &bodies[child];
            joints.push(JointModel {
                name: j.name.clone(),
                parent,
                child,
                kind,
                anchor_in_parent_m: (dvec(xyz) - dvec(p.com_in_link_m)).to_array(),
                anchor_in_child_m: (-dvec(c.com_in_link_m)).to_array(),
                effort_nm: effort,
            });
        }
        if let Some(l) = (1..n_links).find(|&b| !has_parent[b]) {
            return Err(err(
                format!("link `{}`", robot.links[l].name),
                String::from("no joint attaches it: the first link is the only root"),
            ));
        }
        let mut ground_contact_bodies = [0; 4];
        for (slot, name) in ground_contact_bodies.iter_mut().zip(CONTACT_BODY_NAMES) {
            *slot = match link_index(name) {
                Some(b) if b != 0 => b,
                _ => {
                    return Err(err(
                        String::from("<robot>"),
                        format!(
                            "no non-root link `{name}`: the plant reports the ground's force on {}",
                            CONTACT_BODY_NAMES.join(", ")
                        ),
                    ));
                }
            };
        }
        Ok(Self {
            name: robot.name,
            bodies,
            joints,
            ground_contact_bodies,
        })
    }

    /// The whole body's mass, kg.
    pub fn total_mass_kg(&self) -> f64 {
        self.bodies.iter().map(|b| b.mass_kg).sum()
    }

    /// The index of the body named `name`.
    pub fn body_index(&self, name: &str) -> Option<usize> {
        self.bodies.iter().position(|b| b.name == name)
    }

    /// `body` and every body below it, `body` first, then in joint order (each joint's parent
    /// comes before its child, so one pass finds them all).
    pub fn subtree(&self, body: usize) -> Vec<usize> {
        let mut out = vec![body];
        for j in &self.joints {
            if out.contains(&j.parent) && !out.contains(&j.child) {
                out.push(j.child);
            }
        }
        out
    }

    /// The index of the joint named `name`.
    pub fn joint_index(&self, name: &str) -> Option<usize> {
        self.joints.iter().position(|j| j.name == name)
    }

    /// Values of a full torque frame: 3 per joint, then 3 for the root.
    pub fn torque_len(&self) -> usize {
        3 * self.joints.len() + 3
    }

    /// Forward kinematics: every body's pose, body order, for the root at `root` and the
    /// joints' relative rotations `joint_rotations` (q_parent⁻¹·q_child, unit quaternions
    /// w, x, y, z, joint order; missing ones: the identity). Each child is placed so that its
    /// anchor meets its parent's.
    pub fn pose(&self, root: BodyPose, joint_rotations: &[[f64; 4]]) -> Vec<BodyPose> {
        let mut out = vec![root; self.bodies.len()];
        for (i, j) in self.joints.iter().enumerate() {
            let q_rel = joint_rotations
                .get(i)
                .map_or(DQuat::IDENTITY, |&q| dquat(q));
            let p = out[j.parent];
            let qp = dquat(p.orientation);
            let qc = (qp * q_rel).normalize();
            let at = dvec(p.com_m) + qp * dvec(j.anchor_in_parent_m);
            out[j.child] = BodyPose {
                com_m: (at - qc * dvec(j.anchor_in_child_m)).to_array(),
                orientation: quat_array(qc),
            };
        }
        out
    }

    /// The lowest point (smallest y) of any body's shapes with the bodies at `poses`, m.
    pub fn lowest_point_m(&self, poses: &[BodyPose]) -> f64 {
        let mut low = f64::INFINITY;
        for (b, pose) in self.bodies.iter().zip(poses) {
            let qb = dquat(pose.orientation);
            for s in &b.shapes {
                let q = qb * dquat(s.orientation);
                let c = dvec(pose.com_m) + qb * dvec(s.center_m);
                let y = match s.geometry {
                    Geometry::Box { half_extents_m: h } => {
                        // The lowest corner: |R row y| · h.
                        let d = (q * DVec3::X).y.abs() * h[0]
                            + (q * DVec3::Y).y.abs() * h[1]
                            + (q * DVec3::Z).y.abs() * h[2];
                        c.y - d
                    }
                    Geometry::Sphere { radius_m } => c.y - radius_m,
                    Geometry::Capsule {
                        radius_m,
                        half_length_m,
                    } => c.y - (q * DVec3::Z).y.abs() * half_length_m - radius_m,
                };
                low = low.min(y);
            }
        }
        low
    }
}

/// A link's body: mass properties and shapes, checked; `Err((element, reason))`.
fn body_model(l: &urdf_rs::Link) -> Result<BodyModel, (String, String)> {
    let at = |what: &str| format!("link `{}`{what}", l.name);
    let inertial = &l.inertial;
    let m = inertial.mass.value;
    if !(m.is_finite() && m > 0.0 && m <= MAX_URDF_MASS_KG) {
        return Err((
            at(" <inertial>"),
            format!(
                "mass must be finite, greater than 0 and at most {MAX_URDF_MASS_KG} kg, got {m:?}"
            ),
        ));
    }
    let i = &inertial.inertia;
    let diag = [i.ixx, i.iyy, i.izz];
    if !diag
        .iter()
        .all(|d| d.is_finite() && *d > 0.0 && *d <= MAX_URDF_INERTIA_KG_M2)
    {
        return Err((
            at(" <inertia>"),
            format!(
                "ixx, iyy, izz must be finite, greater than 0 and at most {MAX_URDF_INERTIA_KG_M2} kg·m², got {diag:?}"
            ),
        ));
    }
    if [i.ixy, i.ixz, i.iyz] != [0.0; 3] {
        return Err((
            at(" <inertia>"),
            String::from("ixy, ixz, iyz must be 0: the principal axes lie along the link frame's"),
        ));
    }
    let sum: f64 = diag.iter().sum();
    if diag.iter().any(|&d| d > (sum - d) * (1.0 + 1e-12)) {
        return Err((
            at(" <inertia>"),
            format!(
                "not a possible inertia: each principal moment is at most the sum of the other two, got {diag:?}"
            ),
        ));
    }
    if inertial.origin.rpy.0 != [0.0; 3] {
        return Err((
            at(" <inertial>"),
            String::from("<origin rpy> must be 0 (principal axes along the link frame's)"),
        ));
    }
    let com = inertial.origin.xyz.0;
    if !com
        .iter()
        .all(|x| x.is_finite() && x.abs() <= MAX_URDF_LENGTH_M)
    {
        return Err((
            at(" <inertial>"),
            format!("<origin xyz> must be finite and within ±{MAX_URDF_LENGTH_M} m, got {com:?}"),
        ));
    }
    if l.collision.is_empty() {
        return Err((
            at(""),
            String::from("has no <collision>: every body needs a shape to touch the ground with"),
        ));
    }
    let mut shapes = Vec::with_capacity(l.collision.len());
    for (k, c) in l.collision.iter().enumerate() {
        let at_c = || at(&format!(" <collision> {k}"));
        let xyz = c.origin.xyz.0;
        let rpy = c.origin.rpy.0;
        if !xyz.iter().chain(&rpy).all(|x| x.is_finite()) {
            return Err((at_c(), String::from("<origin> must be finite")));
        }
        if let Some(x) = xyz.into_iter().find(|x| x.abs() > MAX_URDF_LENGTH_M) {
            return Err((
                at_c(),
                format!("<origin xyz> must be within ±{MAX_URDF_LENGTH_M} m, got {x:?}"),
            ));
        }
        let positive = |v: f64| v.is_finite() && v > 0.0 && v <= MAX_URDF_LENGTH_M;
        let geometry = match c.geometry {
            urdf_rs::Geometry::Box { size } if size.0.iter().all(|&s| positive(s)) => {
                Geometry::Box {
                    half_extents_m: size.0.map(|s| s / 2.0),
                }
            }
            urdf_rs::Geometry::Sphere { radius } if positive(radius) => {
                Geometry::Sphere { radius_m: radius }
            }
            urdf_rs::Geometry::Capsule { radius, length }
                if positive(radius) && (length == 0.0 || positive(length)) =>
            {
                Geometry::Capsule {
                    radius_m: radius,
                    half_length_m: length / 2.0,
                }
            }
            ref g => {
                return Err((
                    at_c(),
                    format!(
                        "{g:?}: a shape is a <box>, <sphere> or <capsule> of positive finite size, each at most {MAX_URDF_LENGTH_M} m"
                    ),
                ));
            }
        };
        // URDF: R = Rz(yaw)·Ry(pitch)·Rx(roll).
        let [roll, pitch, yaw] = rpy;
        let q = DQuat::from_rotation_z(yaw)
            * DQuat::from_rotation_y(pitch)
            * DQuat::from_rotation_x(roll);
        shapes.push(ShapeModel {
            geometry,
            center_m: (dvec(xyz) - dvec(com)).to_array(),
            orientation: quat_array(q.normalize()),
        });
    }
    Ok(BodyModel {
        name: l.name.clone(),
        mass_kg: m,
        inertia_kg_m2: diag,
        com_in_link_m: com,
        shapes,
    })
}

/// The kind of joint `j` with the extension attributes `attrs` of its `<limit>`; `Err((the
/// element within the joint, reason))`.
fn joint_kind(j: &urdf_rs::Joint, attrs: &Attributes) -> Result<JointKind, (&'static str, String)> {
    const LIMIT: &str = " <limit>";
    const AXES: [&str; 3] = ["x", "y", "z"];
    let attr = |name: &str| {
        attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let pi = std::f64::consts::PI;
    let range_ok =
        |lo: f64, hi: f64| lo.is_finite() && hi.is_finite() && -pi <= lo && lo <= hi && hi <= pi;
    match j.joint_type {
        urdf_rs::JointType::Revolute => {
            if attr("lower_xyz").is_some() || attr("upper_xyz").is_some() {
                return Err((
                    LIMIT,
                    String::from(
                        "lower_xyz / upper_xyz are for spherical joints; a revolute joint's range is lower / upper",
                    ),
                ));
            }
            let a = dvec(j.axis.xyz.0);
            if !(a.is_finite() && a.length() > 1e-9) {
                return Err((" <axis>", String::from("xyz must be finite and non-zero")));
            }
            let (lo, hi) = (j.limit.lower, j.limit.upper);
            if !range_ok(lo, hi) {
                return Err((
                    LIMIT,
                    format!(
                        "lower and upper must be finite with -π <= lower <= upper <= π, got [{lo}, {hi}]"
                    ),
                ));
            }
            Ok(JointKind::Hinge {
                axis: a.normalize().to_array(),
                limits_rad: [lo, hi],
            })
        }
        urdf_rs::JointType::Spherical => {
            if j.limit.lower != 0.0 || j.limit.upper != 0.0 {
                return Err((
                    LIMIT,
                    String::from(
                        "a spherical joint's ranges are lower_xyz and upper_xyz (per axis); leave lower and upper out",
                    ),
                ));
            }
            let three = |name: &str| -> Result<[f64; 3], (&'static str, String)> {
                let text = attr(name).ok_or_else(|| {
                    (
                        LIMIT,
                        format!(
                            "a spherical joint needs {name}=\"x y z\" (its per-axis range, rad)"
                        ),
                    )
                })?;
                let v: Vec<f64> = text
                    .split_whitespace()
                    .map(str::parse)
                    .collect::<Result<_, _>>()
                    .map_err(|e| (LIMIT, format!("{name}=\"{text}\": {e}")))?;
                <[f64; 3]>::try_from(v).map_err(|v| {
                    (
                        LIMIT,
                        format!("{name}=\"{text}\": 3 numbers, got {}", v.len()),
                    )
                })
            };
            let (lo, hi) = (three("lower_xyz")?, three("upper_xyz")?);
            let mut locked = Vec::new();
            for k in 0..3 {
                if !range_ok(lo[k], hi[k]) {
                    return Err((
                        LIMIT,
                        format!(
                            "axis {}: the range must be finite with -π <= lower <= upper <= π, got [{}, {}]",
                            AXES[k], lo[k], hi[k]
                        ),
                    ));
                }
                if lo[k] == hi[k] {
                    if lo[k] != 0.0 {
                        return Err((
                            LIMIT,
                            format!(
                                "axis {}: a range of zero width must be [0, 0] (that axis locked), got [{}, {}]",
                                AXES[k], lo[k], hi[k]
                            ),
                        ));
                    }
                    locked.push(k);
                }
            }
            let limits = [0, 1, 2].map(|k| [lo[k], hi[k]]);
            match locked[..] {
                [] => Ok(JointKind::Ball { limits_rad: limits }),
                [l] => {
                    let free: Vec<usize> = (0..3).filter(|&k| k != l).collect();
                    Ok(JointKind::TwoAxis {
                        axes: [COORDINATE_AXES[free[0]], COORDINATE_AXES[free[1]]],
                        limits_rad: [limits[free[0]], limits[free[1]]],
                    })
                }
                _ => Err((
                    LIMIT,
                    String::from(
                        "more than one axis locked: write a revolute joint (or make it one body) instead",
                    ),
                )),
            }
        }
        ref other => Err((
            "",
            format!(
                "type {other:?}: the humanoid's joints are spherical (ball, or two-axis with one range [0, 0]) or revolute"
            ),
        )),
    }
}

/// An element's attributes: (name, value), in document order.
type Attributes = Vec<(String, String)>;

/// For every `<joint>` directly under `<robot>`, in document order: its name and the attributes
/// of its `<limit>` (none if it has no `<limit>`). urdf-rs drops the attributes it does not
/// know (this model's `lower_xyz`, `upper_xyz`); the text has been parsed by urdf-rs already, so
/// it is well-formed XML: this reader only walks its tags (comments, declarations, processing
/// instructions and CDATA skipped; the five predefined entities decoded in values), and the
/// caller checks that it finds the joints urdf-rs finds.
fn joint_limit_attributes(xml: &str) -> Result<Vec<(String, Attributes)>, String> {
    let mut out: Vec<(String, Attributes)> = Vec::new();
    let mut depth = 0usize;
    let mut in_joint = false;
    let mut rest = xml;
    while let Some(open) = rest.find('<') {
        rest = &rest[open..];
        let skip_to = |end: &str, rest: &str| -> Result<usize, String> {
            rest.find(end)
                .map(|i| i + end.len())
                .ok_or_else(|| format!("unterminated markup (no `{end}`)"))
        };
        if rest.starts_with("<!--") {
            rest = &rest[skip_to("-->", rest)?..];
        } else if rest.starts_with("<![CDATA[") {
            rest = &rest[skip_to("]]>", rest)?..];
        } else if rest.starts_with("<?") {
            rest = &rest[skip_to("?>", rest)?..];
        } else if rest.starts_with("<!") {
            rest = &rest[skip_to(">", rest)?..];
        } else if rest.starts_with("</") {
            let end = skip_to(">", rest)?;
            let name = rest[2..end - 1].trim();
            depth = depth.saturating_sub(1);
            if name == "joint" && depth == 1 {
                in_joint = false;
            }
            rest = &rest[end..];
        } else {
            let (name, attrs, self_closing, len) = start_tag(rest)?;
            if depth == 1 && name == "joint" {
                let joint_name = attrs
                    .iter()
                    .find(|(n, _)| n == "name")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                out.push((joint_name, Vec::new()));
                in_joint = !self_closing;
            } else if depth == 2
                && in_joint
                && name == "limit"
                && let Some((_, slot)) = out.last_mut()
            {
                *slot = attrs;
            }
            if !self_closing {
                depth += 1;
            }
            rest = &rest[len..];
        }
    }
    Ok(out)
}

/// A start tag at the beginning of `s` (which starts with `<`): its name, its attributes, whether
/// it closes itself, and its length in bytes.
fn start_tag(s: &str) -> Result<(&str, Attributes, bool, usize), String> {
    let bytes = s.as_bytes();
    let is_space = |b: u8| b == b' ' || b == b'\t' || b == b'\n' || b == b'\r';
    let mut i = 1;
    while i < bytes.len() && !is_space(bytes[i]) && bytes[i] != b'/' && bytes[i] != b'>' {
        i += 1;
    }
    let name = &s[1..i];
    let mut attrs = Vec::new();
    loop {
        while i < bytes.len() && is_space(bytes[i]) {
            i += 1;
        }
        match bytes.get(i) {
            None => return Err(format!("unterminated tag <{name}")),
            Some(b'>') => return Ok((name, attrs, false, i + 1)),
            Some(b'/') if bytes.get(i + 1) == Some(&b'>') => return Ok((name, attrs, true, i + 2)),
            Some(_) => {}
        }
        let start = i;
        while i < bytes.len() && bytes[i] != b'=' && !is_space(bytes[i]) {
            i += 1;
        }
        let attr = &s[start..i];
        while i < bytes.len() && (is_space(bytes[i]) || bytes[i] == b'=') {
            i += 1;
        }
        let Some(&quote) = bytes.get(i).filter(|&&q| q == b'"' || q == b'\'') else {
            return Err(format!("<{name}>: attribute `{attr}` has no quoted value"));
        };
        let value_start = i + 1;
        let Some(len) = s[value_start..].find(quote as char) else {
            return Err(format!(
                "<{name}>: attribute `{attr}`'s value is unterminated"
            ));
        };
        let value = s[value_start..value_start + len]
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&");
        attrs.push((attr.to_owned(), value));
        i = value_start + len + 1;
    }
}

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
    /// folder when the file is loaded ([`Self::load`], [`Self::from_json_str`]); in a scene built
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

    /// Reads and checks a humanoid scene file (the checks that need no URDF: [`Self::validate`]).
    pub fn load(path: &Path) -> Result<Self, SceneError> {
        Self::from_json_str(&crate::scene::read_scene_file(path)?, path)
    }

    /// Parses and checks a humanoid scene given as JSON text; `file` names it in errors, and a
    /// relative `urdf` is resolved against `file`'s folder.
    pub fn from_json_str(text: &str, file: &Path) -> Result<Self, SceneError> {
        let mut scene: Self = crate::scene::parse_scene_json(text, file)?;
        scene.urdf = crate::scene::urdf_beside(&scene.urdf, file);
        scene
            .validate()
            .map_err(|failed| SceneError::checked(file, failed))?;
        Ok(scene)
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
            let angle = dvec(*v).length();
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
        if self.balls.len() > MAX_BALLS {
            c.fail(
                "balls",
                format!(
                    "{} balls: a humanoid scene has at most {MAX_BALLS}",
                    self.balls.len()
                ),
            );
        }
        for (i, b) in self.balls.iter().enumerate() {
            let f = |name: &str| format!("balls[{i}].{name}");
            if b.id < FIRST_BALL_ID {
                c.fail(
                    &f("id"),
                    format!(
                        "{}: ball ids start at {FIRST_BALL_ID} (lower ids name the humanoid's bodies)",
                        b.id
                    ),
                );
            }
            if let Some(first) = self.balls[..i].iter().position(|o| o.id == b.id) {
                c.fail(
                    &f("id"),
                    format!("id {} is already used by balls[{first}]", b.id),
                );
            }
            c.range(&f("spawn_time_s"), b.spawn_time_s, 0.0, 1e7);
            c.vec3(&f("position_m"), b.position_m);
            c.vec3(&f("velocity_m_s"), b.velocity_m_s);
            c.range(&f("radius_m"), b.radius_m, 1e-3, 10.0);
            c.range(&f("mass_kg"), b.mass_kg, 1e-4, 1e5);
        }
        c.result()
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

/// Queues `body`'s contact beginning (`began`) or ending for the next frames; beyond
/// [`MAX_PENDING_EVENTS`] it is counted in `left_out` instead.
fn queue_contact(pending: &mut VecDeque<Event>, left_out: &mut u64, body: BodyId, began: bool) {
    let event = if began {
        Event::ContactBegan { body }
    } else {
        Event::ContactEnded { body }
    };
    if pending.len() < MAX_PENDING_EVENTS {
        pending.push_back(event);
    } else {
        *left_out += 1;
    }
}

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
    /// Balls not yet thrown, in step order: (step, ball).
    balls_due: VecDeque<(u64, BallSpawn)>,
    /// Balls in flight: id, collider, whether it touched the humanoid during the last step.
    balls: Vec<(u16, ColliderHandle, bool)>,
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
    let v = dvec(v);
    let q = DQuat::from_scaled_axis(v);
    let tol = 1e-9;
    let within = |a: f64, [lo, hi]: [f64; 2]| a >= lo - tol && a <= hi + tol;
    let angles = per_axis_angles_rad(quat_array(q));
    match joint.kind {
        JointKind::Hinge { axis, limits_rad } => {
            let a = dvec(axis);
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
            rotations[j] = quat_array(q);
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
            balls_due: {
                let mut due: Vec<(u64, BallSpawn)> = scene
                    .balls
                    .iter()
                    .map(|b| (steps_for(b.spawn_time_s, scene.dt_s), *b))
                    .collect();
                due.sort_by_key(|(step, _)| *step);
                due.into()
            },
            balls: Vec::with_capacity(scene.balls.len()),
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
            let norm = dvec(v).length();
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
        let norm = dvec(v).length();
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

    /// One step driven by the torque frame with sequence number `torque_sequence`, returning the
    /// new state's frame, which names it (low 32 bits). Values the check refuses are not
    /// applied: the host refuses such a frame before ([`Self::check_torque_slice`]); should one
    /// reach here, the step runs with zero torques and names no frame (0).
    pub fn step_driven_by(&mut self, torques_nm: &[f64], torque_sequence: u64) -> StateFrame {
        let applied = self.torque_fault(torques_nm).is_none();
        let mut frame = self.advance(if applied { torques_nm } else { &[] });
        frame.applied_torque_sequence = if applied {
            // The low 32 bits, as the frame documents.
            (torque_sequence & u64::from(u32::MAX)) as u32
        } else {
            0
        };
        frame
    }

    fn advance(&mut self, torques_nm: &[f64]) -> StateFrame {
        let t0 = Instant::now();
        // The events the last frame carried are past.
        let sent = self.pending.len().min(MAX_EVENTS);
        self.pending.drain(..sent);
        for &h in &self.bodies {
            if let Some(rb) = self.world.bodies.get_mut(h) {
                rb.reset_torques(false);
                rb.reset_forces(false);
            }
        }
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
        while self
            .balls_due
            .front()
            .is_some_and(|(step, _)| *step <= self.clock.step_index())
        {
            let Some((_, b)) = self.balls_due.pop_front() else {
                break;
            };
            // Members of the ground's group (the humanoid's shapes see them) and of their own;
            // they hit the humanoid, the ground and each other.
            let collider = ColliderBuilder::ball(b.radius_m as Real)
                .mass(b.mass_kg as Real)
                .friction(FRICTION as Real)
                .collision_groups(InteractionGroups::new(
                    Group::GROUP_1 | Group::GROUP_3,
                    Group::GROUP_1 | Group::GROUP_2 | Group::GROUP_3,
                    InteractionTestMode::And,
                ));
            let body = RigidBodyBuilder::dynamic()
                .translation(v3(b.position_m))
                .linvel(v3(b.velocity_m_s))
                .ccd_enabled(true);
            let (_, collider) = self.world.insert(body, collider);
            self.balls.push((b.id, collider, false));
        }
        self.world.step();
        self.clock.advance();
        self.read_ground_forces();
        self.read_ball_contacts();
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

    /// Each ball's touch of the humanoid during the step just taken (the solver pushed on a
    /// contact of the pair), as events when it begins or ends.
    fn read_ball_contacts(&mut self) {
        for (id, collider, touching) in &mut self.balls {
            let now = self
                .world
                .narrow_phase
                .contact_pairs_with(*collider)
                .any(|pair| {
                    let other = if pair.collider1 == *collider {
                        pair.collider2
                    } else {
                        pair.collider1
                    };
                    self.colliders.iter().any(|(c, _)| *c == other)
                        && pair.has_any_active_contact()
                        && pair.total_impulse_magnitude() > 0.0
                });
            if now == *touching {
                continue;
            }
            *touching = now;
            queue_contact(
                &mut self.pending,
                &mut self.events_left_out,
                BodyId(*id),
                now,
            );
        }
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
                .map_or_else(BodyMotion::default, crate::biped::body_motion);
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
        self.bodies
            .iter()
            .filter(|h| self.world.quarantine().bodies().contains(h))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_axis_angles_of_single_axis_rotations_are_their_angles() {
        for (k, &axis) in COORDINATE_AXES.iter().enumerate() {
            for a in [-3.0, -1.0, -0.2, 0.0, 0.5, 2.9] {
                let q = DQuat::from_axis_angle(dvec(axis), a);
                let got = per_axis_angles_rad(quat_array(q));
                let flipped = per_axis_angles_rad(quat_array(-q));
                for i in 0..3 {
                    let want = if i == k { a } else { 0.0 };
                    assert!((got[i] - want).abs() < 1e-12, "{k} {a}: {got:?}");
                    assert!((flipped[i] - want).abs() < 1e-12, "{k} {a}: {flipped:?}");
                }
            }
        }
    }

    #[test]
    fn the_tag_reader_finds_limits_and_skips_comments_and_nested_joints() {
        let xml = r#"<?xml version="1.0"?>
<robot name='r'>
  <!-- <joint name="commented"><limit lower_xyz="9 9 9"/></joint> -->
  <link name="a"/>
  <joint name="j1" type="spherical">
    <limit effort="1" velocity = '2' lower_xyz="-1 0 -2" upper_xyz="1 0 2"/>
  </joint>
  <joint name="j&amp;2" type="revolute"><limit lower="0" upper="1" effort="1" velocity="1"></limit></joint>
  <transmission name="t"><joint name="inner"/></transmission>
</robot>"#;
        let got = joint_limit_attributes(xml).unwrap();
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["j1", "j&2"]);
        assert!(got[0].1.contains(&("lower_xyz".into(), "-1 0 -2".into())));
        assert!(got[0].1.contains(&("velocity".into(), "2".into())));
        assert_eq!(got[1].1.len(), 4);
    }
}
