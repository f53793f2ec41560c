//! The 15-body humanoid's description (`models/humanoid15.urdf`, after Cartwheel-3d's "Bip"):
//! [`HumanoidModel`], read from its URDF by [`HumanoidModel::load`]. One description feeds both
//! sides: `sim-host`'s humanoid plant is built from it and the controllers model the same bodies
//! (their floating-base [`control_core::tree::Tree`] through [`HumanoidTree`]). The humanoid has
//! ball joints; [`crate::load`] reads the same file as a [`crate::RobotModel`] with each ball as
//! the revolute coordinates [`HumanoidTree`] gives it (for the robot plant and any controller of
//! a URDF robot), and this module reads it as the humanoid character (bodies, roles, soles, the
//! ball joints whole for the humanoid plant) with the same reader ([`crate::read_description`], [`crate::check_xml`]), the same strict
//! pass over the XML (every number whole and finite, every vector of its length, the element
//! named; the joints' per-axis ranges included) and the same URDF parser (urdf-rs) as every
//! other robot ([`crate::parse`]), under the conventions below. It reads the joints, the links'
//! `<inertial>` and `<collision>`; `<visual>` and `<material>` are not used (and, as for every
//! robot, a `<texture>` without a filename does not stop urdf-rs).
//!
//! # Its pose controller from `control_core::dynamo::humanoid`
//! Roles by exact joint name, the joints and masses, the standing lean: everything
//! [`control_core::dynamo::humanoid::HumanoidPose`] (no_std, no allocation) is built from. One
//! tick with the body standing in its zero pose, as a plant would report it:
//!
//! ```
//! use control_core::dynamo::humanoid::{HumanoidInput, HumanoidPose, HumanoidSpec, JointRole, PoseLaw};
//! use control_core::frames::BodyMotion;
//! use control_core::simbicon3d::{Limb::*, Side::*};
//! use robot_model::humanoid::{BodyPose, HumanoidModel};
//!
//! let urdf = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/humanoid15.urdf");
//! let model = HumanoidModel::load(urdf.as_ref())?;
//! let mut names = vec![("waist".to_string(), JointRole::Waist), ("neck".into(), JointRole::Neck)];
//! for (side, s) in [(Left, "left"), (Right, "right")] {
//!     for (limb, l) in [(Hip, "hip"), (Knee, "knee"), (Ankle, "ankle"), (Toe, "toe"),
//!                       (Shoulder, "shoulder"), (Elbow, "elbow")] {
//!         names.push((format!("{s}_{l}"), JointRole::Limb(side, limb)));
//!     }
//! }
//! let table: Vec<(&str, JointRole)> = names.iter().map(|(n, r)| (n.as_str(), *r)).collect();
//! let roles = model.roles_by_name(&table)?; // every joint named once, exactly
//! let (joints, bodies) = (model.pose_joints(&roles)?, model.body_masses());
//! let lean = model.standing_lean_rad(&roles, &[]); // the ankles put the COM above them
//! let spec = HumanoidSpec { lean_rad: (lean, lean), ..HumanoidSpec::new(&bodies, &joints, 0.005) };
//! let mut pose = HumanoidPose::<16, 16>::new(PoseLaw::WorldSpace, &spec)?; // capacity in the type
//! let up = BodyPose { com_m: [0.0, 1.0, 0.0], orientation: [1.0, 0.0, 0.0, 0.0] };
//! let state: Vec<BodyMotion> = model
//!     .pose(up, &[])
//!     .iter()
//!     .map(|p| BodyMotion { com_m: p.com_m, orientation: p.orientation, ..Default::default() })
//!     .collect();
//! let out = pose.tick(&HumanoidInput { time_s: 0.0, bodies: &state }); // never allocates or panics
//! assert!(!out.safe && out.refused == 0 && out.torques_nm.iter().all(|t| t.norm().is_finite()));
//! // out.torques_nm[j]: +τ on joint j's child, −τ on its parent, world axes (y up).
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Balancing it with `control_core::balance`
//! The tree, the soles' corners and the joints' effort groups are all the balance QP needs; a
//! state comes from the plant's body motions (the no_std [`HumanoidTree::map`]). Standing in the
//! zero pose on level ground, one tick carries the body's weight on its soles:
//!
//! ```
//! use control_core::articulated::nalgebra::{Isometry3, Translation3, UnitQuaternion, Vector3};
//! use control_core::balance::{Balance, BalanceInput, BalanceSettings, BalanceStatus, MAX_POINTS};
//! use control_core::tree::Tree;
//! use robot_model::humanoid::{HumanoidModel, HumanoidTree};
//!
//! const NV: usize = 36; // capacity: the humanoid has 6 + 28 velocities
//! let urdf = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/humanoid15.urdf");
//! let model = HumanoidModel::load(urdf.as_ref())?;
//! let shape = HumanoidTree::new(&model, &|_| true)?; // every body kept
//! let tree = Tree::<NV>::new(&shape.spec())?;
//! let feet = shape.contact_bodies(&model)?; // the feet's and toes' sole corners
//! let up = Vector3::y(); // the humanoid's world is y up
//! let height = HumanoidTree::standing_height(&tree, &feet, &up)?;
//! let (mass, com) = tree.kinematics(&Isometry3::identity(), &[0.0; NV])?.center_of_mass()?;
//! // The zero pose with its soles on y = 0.
//! let base = Isometry3::from_parts(Translation3::new(0.0, height - com.y, 0.0), UnitQuaternion::identity());
//! // About 0.7 MB: built on a thread with room for it on the way into its box.
//! let out = std::thread::Builder::new().stack_size(64 << 20).spawn(move || {
//!     let mut balance = Box::new(Balance::<NV, 80, 144>::new(tree, &feet, &shape.groups, BalanceSettings::DEFAULT)?);
//!     let (q, planted) = ([0.0; NV], vec![[true; MAX_POINTS]; feet.len()]);
//!     Ok::<_, control_core::balance::BalanceError>(balance.tick(&BalanceInput { // never allocates, blocks or panics
//!         base_pose: &base, q: &q, v: &[0.0; NV], q_target: &q, com_height_m: height,
//!         upright_target: &UnitQuaternion::identity(), planted: &planted,
//!         gravity: -9.81 * up, tasks: &[],
//!     }))
//! })?.join().expect("the tick thread")?;
//! assert_eq!(out.status, BalanceStatus::Solved);
//! let weight: f64 = out.forces[..out.point_count].iter().map(|f| f[1]).sum();
//! assert!((weight - mass * 9.81).abs() < 0.01 * mass * 9.81, "the soles carry {weight} N");
//! // out.torques: by tree joint (three per ball joint, two per ankle, one per hinge: shape.groups).
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! `control_core::balance::humanoid::HumanoidBalance` is the whole controller `qp_balance`
//! runs on top of the QP (no_std): it maps the plant's body motions itself and adds the contact
//! hold, the recovery step and a hand's reach; it answers with a torque vector per joint:
//!
//! ```
//! use control_core::articulated::nalgebra::{UnitQuaternion, Vector3};
//! use control_core::balance::humanoid::{HumanoidBalance, HumanoidBalanceInput, HumanoidBalanceSpec};
//! use control_core::controller::Controller;
//! use control_core::balance::step::{StepSettings, Stepper};
//! use control_core::balance::{Balance, BalanceSettings, BalanceStatus};
//! use control_core::frames::BodyMotion;
//! use control_core::tree::Tree;
//! use robot_model::humanoid::{BodyPose, HumanoidModel, HumanoidTree};
//!
//! const NV: usize = 36;
//! let urdf = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/humanoid15.urdf");
//! let model = HumanoidModel::load(urdf.as_ref())?;
//! let shape = HumanoidTree::new(&model, &|_| true)?;
//! let tree = Tree::<NV>::new(&shape.spec())?;
//! let soles: [_; 4] = shape.contact_bodies(&model)?.try_into().map_err(|_| "four soles")?;
//! let gravity = Vector3::new(0.0, -9.81, 0.0);
//! let height = HumanoidTree::standing_height(&tree, &soles, &Vector3::y())?;
//! // The plant's bodies standing in the zero pose, soles on y = 0.
//! let up = BodyPose { com_m: [0.0; 3], orientation: [1.0, 0.0, 0.0, 0.0] };
//! let lowest = model.lowest_point_m(&model.pose(up, &[]));
//! let bodies: Vec<BodyMotion> = model
//!     .pose(BodyPose { com_m: [0.0, -lowest, 0.0], ..up }, &[])
//!     .iter()
//!     .map(|p| BodyMotion { com_m: p.com_m, orientation: p.orientation, ..Default::default() })
//!     .collect();
//! let masses: Vec<f64> = model.bodies.iter().map(|b| b.mass_kg).collect();
//! let joints = model.joints.len();
//! let (status, torques) = std::thread::Builder::new().stack_size(64 << 20).spawn(move || {
//!     let qp = Balance::<NV, 80, 144>::new(tree, &soles, &shape.groups, BalanceSettings::DEFAULT)?;
//!     let spec = HumanoidBalanceSpec {
//!         map: shape.map.clone(), contacts: soles, masses: &masses, gravity, com_height_m: height,
//!         stepper: Stepper::new(StepSettings::DEFAULT), contact_hold_ticks: 1,
//!     };
//!     let mut balance = Box::new(HumanoidBalance::new(qp, spec).ok_or("more bodies than a frame")?);
//!     let (targets, mut torques) = (vec![UnitQuaternion::identity(); joints], vec![0.0; 3 * joints]);
//!     // The ground's normal force on the left and right foot and toes, N, as the plant measured.
//!     let status = balance.tick(0.0, &bodies, &targets, &[330.0, 330.0, 10.0, 10.0], &mut torques);
//!     // The same tick behind the one controller trait (`Controller`), a tick later.
//!     let input = HumanoidBalanceInput { time_s: 0.005, bodies: &bodies, targets: &targets,
//!         contact_normal_n: [330.0, 330.0, 10.0, 10.0] };
//!     assert_eq!(Controller::tick(&mut *balance, &input).map(|c| c.status), Ok(BalanceStatus::Solved));
//!     Ok::<_, Box<dyn std::error::Error + Send + Sync>>((status, torques))
//! })?.join().expect("the tick thread")?;
//! assert_eq!(status, Some(BalanceStatus::Solved));
//! assert!(torques.iter().all(|t| t.is_finite()) && torques.iter().any(|t| t.abs() > 1.0));
//! // torques[3 j..3 j + 3]: joint j's world torque vector, +τ on its child, −τ on its parent.
//! # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
//! ```
//!
//! # Walking with `control_core::walker3d`
//! The 3D walker as `walk3d` runs it: Cartwheel's SIMBICON configuration from the joints
//! ([`HumanoidModel::walk_joints`]), stable PD for its bodies ([`HumanoidModel::stable_pd`]),
//! and the ground-contact stabiliser on a reduced model ([`stance_stabiliser`]), all no_std
//! behind `control_core::walker3d::Walker3d`. Roles come from the caller (here the joints'
//! and links' exact names). One tick standing on both feet:
//!
//! ```
//! use control_core::contact_stabiliser::StabiliserSettings;
//! use control_core::contact_stabiliser::stance::{Baseline, ReducedModel, StanceInput};
//! use control_core::frames::BodyMotion;
//! use control_core::simbicon3d::{BipRoles, Side, SideJoints, Simbicon3d, Simbicon3dConfig};
//! use control_core::walker3d::{Walker3d, Walker3dInput, Walker3dSpec};
//! use robot_model::humanoid::{BodyPose, HumanoidModel, stance_stabiliser};
//!
//! let urdf = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/humanoid15.urdf");
//! let model = HumanoidModel::load(urdf.as_ref())?;
//! let joint = |n: String| model.joint_index(&n).ok_or(format!("no joint {n}"));
//! let body = |n: String| model.body_index(&n).ok_or(format!("no link {n}"));
//! let side = |s: &str| -> Result<SideJoints, String> {
//!     Ok(SideJoints {
//!         hip: joint(format!("{s}_hip"))?, knee: joint(format!("{s}_knee"))?,
//!         ankle: joint(format!("{s}_ankle"))?, toe: Some(joint(format!("{s}_toe"))?),
//!         shoulder: Some(joint(format!("{s}_shoulder"))?), elbow: Some(joint(format!("{s}_elbow"))?),
//!         foot_body: body(format!("{s}_foot"))?,
//!     })
//! };
//! let roles = BipRoles {
//!     root_body: body("pelvis".into())?, waist: joint("waist".into())?, neck: joint("neck".into())?,
//!     sides: [side("left")?, side("right")?],
//! };
//! let masses: Vec<f64> = model.bodies.iter().map(|b| b.mass_kg).collect();
//! let config = Simbicon3dConfig::cartwheel_bip_walking(&masses, &model.walk_joints(), roles, Side::Left)
//!     .map_err(|e| e.to_string())?;
//! let gravity = [0.0, -9.81, 0.0]; // the humanoid's world is y up
//! let stabiliser = stance_stabiliser(&model, &roles, ReducedModel::M5, Baseline::Measured, gravity,
//!     StabiliserSettings::DEFAULT)?;
//! let spec = Walker3dSpec { // straight ahead, then 0.2 m/s to the right, 5 steps each
//!     coronal_speeds_m_s: &[0.0, 0.2], steps_per_speed: 5, tuner: None, forward_targets_m_s: &[],
//! };
//! let stable_pd = model.stable_pd(1.0 / 500.0)?; // a 500 Hz control loop
//! let mut walker = Box::new(Walker3d::new(Simbicon3d::new(config)?, Some(stable_pd), Some(stabiliser), &spec)?);
//! // The plant's bodies standing in the zero pose, soles on y = 0.
//! let up = BodyPose { com_m: [0.0; 3], orientation: [1.0, 0.0, 0.0, 0.0] };
//! let lowest = model.lowest_point_m(&model.pose(up, &[]));
//! let bodies: Vec<BodyMotion> = model
//!     .pose(BodyPose { com_m: [0.0, -lowest, 0.0], ..up }, &[])
//!     .iter()
//!     .map(|p| BodyMotion { com_m: p.com_m, orientation: p.orientation, ..Default::default() })
//!     .collect();
//! let plant = StanceInput { // the ground's forces at the last step, N, as the plant measured
//!     bodies: &bodies, contact_normal_n: [330.0, 330.0, 10.0, 10.0], sole_corner_n: [[80.0; 4]; 2],
//! };
//! let c = walker.tick(&Walker3dInput { time_s: 0.0, plant })?; // never allocates or panics
//! assert_eq!((c.len, c.stable_pd), (3 * model.joints.len(), Some(true)));
//! assert!(c.stabiliser.is_some() && c.torques_nm[..c.len].iter().all(|t| t.is_finite()));
//! // c.torques_nm[3 j..3 j + 3]: joint j's world torque vector, +τ on its child, −τ on its parent.
//! # Ok::<(), Box<dyn std::error::Error>>(())
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
//!   [`crate::MAX_URDF_MASS_KG`]] kg, principal moments in (0,
//!   [`crate::MAX_URDF_INERTIA_KG_M2`]] kg·m², every origin coordinate and shape size
//!   within [`crate::MAX_URDF_LENGTH_M`] m. The file is read by
//!   [`crate::read_description`] (a regular file of at most 16 MiB, nested at most 64 elements
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
//! Reads files and allocates: start-up code, never for a control loop. Never panics on any
//! file: every refusal is a [`LoadError`] naming the file, the element and the reason.

use std::path::Path;

use control_core::articulated::nalgebra::Vector3;
use control_core::dynamo::JointKind as ServoKind;
use control_core::dynamo::humanoid::{BodyMass, HumanoidJoint, JointRole};
use control_core::frames::{MAX_BODIES, MAX_JOINTS};
use control_core::simbicon3d::{BipRoles, BodyJoint, Limb, Side};
use control_core::stable_pd::{SpdJoint, StablePd};
use glam::{DQuat, DVec3};

use crate::{
    LoadError, MAX_TORQUE_LIMIT_NM, MAX_URDF_INERTIA_KG_M2, MAX_URDF_LENGTH_M, MAX_URDF_MASS_KG,
    MAX_XML_DEPTH, MAX_XML_ELEMENTS, check_xml, read_description,
};

mod stance;
mod tree;

pub use stance::stance_stabiliser;
pub(crate) use tree::ball_order;
pub use tree::{HumanoidTree, Sole, soles};

/// The bodies whose ground force every state frame carries, in frame order.
pub const CONTACT_BODY_NAMES: [&str; 4] = ["left_foot", "right_foot", "left_toes", "right_toes"];
/// Most joints a humanoid has: 3 torque values each and 3 for the root fit a torque frame.
pub const MAX_HUMANOID_JOINTS: usize = (MAX_JOINTS - 3) / 3;

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
    /// [`crate::read_description`]: a regular file, size and nesting capped).
    pub fn load(path: &Path) -> Result<Self, LoadError> {
        let text = read_description(path)?;
        Self::from_urdf_str(&text, path)
    }

    /// Reads and checks the humanoid of the URDF text `text`; `file` names it in errors. Text
    /// nested deeper than [`MAX_XML_DEPTH`] elements, or with more than
    /// [`MAX_XML_ELEMENTS`], is refused before it is parsed; then the strict pass every robot's
    /// URDF goes through (each number parsed whole and finite, each vector of its length,
    /// required attributes present, the element named: [`crate::parse`]'s) reads it, the
    /// spherical joints' `lower_xyz` / `upper_xyz` included, before urdf-rs does.
    pub fn from_urdf_str(text: &str, file: &Path) -> Result<Self, LoadError> {
        let err = |element: String, reason: String| LoadError {
            file: file.to_path_buf(),
            element,
            reason,
        };
        check_xml(text, MAX_XML_DEPTH, MAX_XML_ELEMENTS)
            .map_err(|reason| err(String::new(), reason))?;
        let (facts, robot) =
            crate::syntax::read(text).map_err(|(element, reason)| err(element, reason))?;
        // One fact per <joint> in file order, urdf-rs's order: the same joints.
        if facts.joints.len() != robot.joints.len() {
            return Err(err(
                String::from("<robot>"),
                format!(
                    "urdf-rs reads {} joints where the strict pass finds {}",
                    robot.joints.len(),
                    facts.joints.len()
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
                    format!("link {:?}", l.name),
                    String::from("two links have this name"),
                ));
            }
            bodies.push(body_model(l).map_err(|(element, reason)| err(element, reason))?);
        }
        let link_index = |name: &str| robot.links.iter().position(|l| l.name == name);

        let mut joints: Vec<JointModel> = Vec::with_capacity(robot.joints.len());
        let mut posed = vec![false; n_links];
        let mut has_parent = vec![false; n_links];
        for (i, j) in robot.joints.iter().enumerate() {
            let at = |what: &str| format!("joint {:?}{what}", j.name);
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
                    format!("names a link {missing:?} the file does not have"),
                ));
            };
            if has_parent[child] {
                return Err(err(
                    at(""),
                    format!(
                        "link {:?} is the child of two joints: the links must form a tree",
                        j.child.link
                    ),
                ));
            }
            if child == 0 {
                return Err(err(
                    at(""),
                    format!(
                        "its child {:?} is the first link, which must be the root (no parent joint)",
                        j.child.link
                    ),
                ));
            }
            has_parent[child] = true;
            if parent != 0 && !posed[parent] {
                return Err(err(
                    at(""),
                    format!(
                        "its parent {:?} is not the root nor the child of an earlier joint: list the joints from the root outwards",
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
            // The strict pass found the same joints in the same order (checked above).
            let per_axis = facts.joints.get(i).map_or([None; 2], |f| f.per_axis);
            let kind = joint_kind(j, per_axis).map_err(|(what, reason)| err(at(what), reason))?;
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
                format!("link {:?}", robot.links[l].name),
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
                            "no non-root link {name:?}: the plant reports the ground's force on {}",
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

    /// Every body index the model holds (each joint's parent and child, the ground contact
    /// bodies) names one of its bodies: true of a model [`Self::load`] read; a model built by
    /// hand is checked by the functions that index with them ([`HumanoidTree::new`],
    /// [`soles`]).
    pub fn check_indices(&self) -> Result<(), String> {
        let n = self.bodies.len();
        for j in &self.joints {
            if j.parent >= n || j.child >= n {
                return Err(format!(
                    "joint {:?}: parent {} or child {} past the {n} bodies",
                    j.name, j.parent, j.child
                ));
            }
        }
        if let Some(b) = self.ground_contact_bodies.iter().find(|b| **b >= n) {
            return Err(format!("ground contact body {b} past the {n} bodies"));
        }
        Ok(())
    }

    /// The whole body's mass, kg.
    pub fn total_mass_kg(&self) -> f64 {
        self.bodies.iter().map(|b| b.mass_kg).sum()
    }

    /// The index of the body named `name`.
    pub fn body_index(&self, name: &str) -> Option<usize> {
        self.bodies.iter().position(|b| b.name == name)
    }

    /// The joints as the 3D walker reads them (its configuration's gains come from their
    /// roles: `control_core::simbicon3d::Simbicon3dConfig::cartwheel_bip_walking`), joint
    /// order.
    pub fn walk_joints(&self) -> Vec<BodyJoint> {
        self.joints
            .iter()
            .map(|j| BodyJoint {
                parent: j.parent,
                child: j.child,
                effort_nm: j.effort_nm,
                kind: match &j.kind {
                    JointKind::Ball { .. } => ServoKind::Ball,
                    JointKind::Hinge { axis, .. } => ServoKind::Hinge {
                        axis: (*axis).into(),
                    },
                    JointKind::TwoAxis { axes, .. } => ServoKind::TwoAxis {
                        axes: [axes[0].into(), axes[1].into()],
                    },
                },
            })
            .collect()
    }

    /// Stable PD (`control_core::stable_pd`) for these bodies and joints at the control
    /// period `period_s`.
    pub fn stable_pd(&self, period_s: f64) -> Result<StablePd, String> {
        let inertia: Vec<[f64; 3]> = self.bodies.iter().map(|b| b.inertia_kg_m2).collect();
        let joints: Vec<SpdJoint> = self
            .joints
            .iter()
            .map(|j| SpdJoint {
                parent: j.parent,
                child: j.child,
            })
            .collect();
        StablePd::new(&inertia, &joints, period_s).map_err(|e| format!("stable PD: {e:?}"))
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

    /// Each joint's role under `roles`, in joint order; why not when a joint plays no part or
    /// two (a controller that drives every joint by its part needs each once).
    pub fn joint_roles(&self, roles: &BipRoles) -> Result<Vec<JointRole>, String> {
        let mut out: Vec<Option<JointRole>> = vec![None; self.joints.len()];
        let mut assign = |joint: usize, role: JointRole| -> Result<(), String> {
            let name = self.joints.get(joint).map_or("?", |j| j.name.as_str());
            match out.get_mut(joint) {
                Some(slot @ None) => {
                    *slot = Some(role);
                    Ok(())
                }
                Some(Some(first)) => Err(format!(
                    "joint `{name}` plays two parts: `{first}` and `{role}`"
                )),
                None => Err(format!("joint {joint} is out of range")),
            }
        };
        assign(roles.waist, JointRole::Waist)?;
        assign(roles.neck, JointRole::Neck)?;
        for (side, joints) in [Side::Left, Side::Right].into_iter().zip(&roles.sides) {
            for limb in Limb::ALL {
                if let Some(j) = joints.limb(limb) {
                    assign(j, JointRole::Limb(side, limb))?;
                }
            }
        }
        out.into_iter()
            .zip(&self.joints)
            .map(|(role, j)| role.ok_or_else(|| format!("joint `{}` plays no part", j.name)))
            .collect()
    }

    /// Each joint's role, in joint order, from a table of (joint name, role) naming every joint
    /// exactly once (exact names: never a substring); why not, naming the joint.
    pub fn roles_by_name(&self, table: &[(&str, JointRole)]) -> Result<Vec<JointRole>, String> {
        for (i, (name, _)) in table.iter().enumerate() {
            if self.joint_index(name).is_none() {
                return Err(format!("`{name}` is no joint of {}", self.name));
            }
            if table.iter().take(i).any(|(n, _)| n == name) {
                return Err(format!("joint `{name}` is named twice"));
            }
        }
        self.joints
            .iter()
            .map(|j| {
                table
                    .iter()
                    .find(|(n, _)| *n == j.name)
                    .map(|&(_, role)| role)
                    .ok_or_else(|| format!("joint `{}` plays no part", j.name))
            })
            .collect()
    }

    /// Every body's mass and principal inertia, body order: what
    /// [`control_core::dynamo::humanoid::HumanoidPose`] is built from.
    pub fn body_masses(&self) -> Vec<BodyMass> {
        self.bodies
            .iter()
            .map(|b| BodyMass {
                mass_kg: b.mass_kg,
                principal_inertia_kgm2: Vector3::from(b.inertia_kg_m2),
            })
            .collect()
    }

    /// Every joint as [`control_core::dynamo::humanoid::HumanoidPose`] drives it, joint
    /// `j` playing `roles[j]`; why not when the roles are not one per joint.
    pub fn pose_joints(&self, roles: &[JointRole]) -> Result<Vec<HumanoidJoint>, String> {
        if roles.len() != self.joints.len() {
            return Err(format!(
                "{} roles for {} joints",
                roles.len(),
                self.joints.len()
            ));
        }
        Ok(self
            .joints
            .iter()
            .zip(roles)
            .map(|(j, &role)| HumanoidJoint {
                parent: j.parent,
                child: j.child,
                kind: match j.kind {
                    JointKind::Ball { .. } => ServoKind::Ball,
                    JointKind::Hinge { axis, .. } => ServoKind::Hinge {
                        axis: Vector3::from(axis),
                    },
                    JointKind::TwoAxis { axes, .. } => ServoKind::TwoAxis {
                        axes: axes.map(Vector3::from),
                    },
                },
                anchor_m: Vector3::from(j.anchor_in_parent_m),
                effort_nm: j.effort_nm,
                role,
            })
            .collect())
    }

    /// The forward lean about the ankles (rad, about +z, negative: forward) that puts the centre
    /// of mass of the pose `joint_rotations` (relative rotations w, x, y, z in joint order,
    /// missing: the identity; `&[]`: the zero pose) above the first ankle of `roles`, so the
    /// pose stands: the leans a [`control_core::dynamo::humanoid::HumanoidSpec`] takes.
    pub fn standing_lean_rad(&self, roles: &[JointRole], joint_rotations: &[[f64; 4]]) -> f64 {
        let up = BodyPose {
            com_m: [0.0; 3],
            orientation: [1.0, 0.0, 0.0, 0.0],
        };
        let poses = self.pose(up, joint_rotations);
        let m = self.total_mass_kg();
        let mut com = [0.0; 2];
        for (b, p) in self.bodies.iter().zip(&poses) {
            com[0] += b.mass_kg * p.com_m[0] / m;
            com[1] += b.mass_kg * p.com_m[1] / m;
        }
        let ankle = roles
            .iter()
            .position(|r| r.is_ankle())
            .and_then(|j| self.joints.get(j))
            .and_then(|j| {
                poses.get(j.parent).map(|p| {
                    [
                        p.com_m[0] + j.anchor_in_parent_m[0],
                        p.com_m[1] + j.anchor_in_parent_m[1],
                    ]
                })
            })
            .unwrap_or([0.0; 2]);
        -(ankle[0] - com[0]).atan2(com[1] - ankle[1])
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
    /// anchor meets its parent's. (A joint of a hand-built model whose indices are past the
    /// bodies, [`Self::check_indices`], moves nothing.)
    pub fn pose(&self, root: BodyPose, joint_rotations: &[[f64; 4]]) -> Vec<BodyPose> {
        let mut out = vec![root; self.bodies.len()];
        for (i, j) in self.joints.iter().enumerate() {
            let q_rel = joint_rotations
                .get(i)
                .map_or(DQuat::IDENTITY, |&q| dquat(q));
            let Some(&p) = out.get(j.parent) else {
                continue;
            };
            let qp = dquat(p.orientation);
            let qc = (qp * q_rel).normalize();
            let at = dvec(p.com_m) + qp * dvec(j.anchor_in_parent_m);
            if let Some(child) = out.get_mut(j.child) {
                *child = BodyPose {
                    com_m: (at - qc * dvec(j.anchor_in_child_m)).to_array(),
                    orientation: quat_array(qc),
                };
            }
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
    let at = |what: &str| format!("link {:?}{what}", l.name);
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
        // Numbered from 1 when there are several, as robot-model names them.
        let at_c = || {
            if l.collision.len() > 1 {
                at(&format!(" <collision #{}>", k + 1))
            } else {
                at(" <collision>")
            }
        };
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

/// The kind of joint `j` with the per-axis ranges `[lower_xyz, upper_xyz]` of its `<limit>`
/// (where written: the strict pass read them); `Err((the element within the joint, reason))`.
pub(crate) fn joint_kind(
    j: &urdf_rs::Joint,
    per_axis: [Option<[f64; 3]>; 2],
) -> Result<JointKind, (&'static str, String)> {
    const LIMIT: &str = " <limit>";
    const AXES: [&str; 3] = ["x", "y", "z"];
    let [lower_xyz, upper_xyz] = per_axis;
    let pi = std::f64::consts::PI;
    let range_ok =
        |lo: f64, hi: f64| lo.is_finite() && hi.is_finite() && -pi <= lo && lo <= hi && hi <= pi;
    match j.joint_type {
        urdf_rs::JointType::Revolute => {
            if lower_xyz.is_some() || upper_xyz.is_some() {
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
            let three = |v: Option<[f64; 3]>, name: &str| {
                v.ok_or_else(|| {
                    (
                        LIMIT,
                        format!(
                            "a spherical joint needs {name}=\"x y z\" (its per-axis range, rad)"
                        ),
                    )
                })
            };
            let (lo, hi) = (
                three(lower_xyz, "lower_xyz")?,
                three(upper_xyz, "upper_xyz")?,
            );
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

#[cfg(test)]
mod tests {
    use super::*;

    const URDF: &str = include_str!("../../models/humanoid15.urdf");

    /// The refusal of the shipped humanoid with `from` replaced by `to` (once).
    fn refusal(from: &str, to: &str) -> LoadError {
        assert_eq!(URDF.matches(from).count(), 1, "{from}");
        HumanoidModel::from_urdf_str(&URDF.replace(from, to), Path::new("h.urdf"))
            .expect_err("refused")
    }

    #[test]
    fn the_shipped_humanoid_reads() {
        let m = HumanoidModel::from_urdf_str(URDF, Path::new("h.urdf")).unwrap();
        assert_eq!((m.bodies.len(), m.joints.len()), (15, 14));
        let waist = &m.joints[m.joint_index("waist").unwrap()];
        assert_eq!(
            waist.kind,
            JointKind::Ball {
                limits_rad: [[-0.6, 0.6]; 3]
            }
        );
    }

    #[test]
    fn roles_come_from_exact_names_every_joint_once() {
        let m = HumanoidModel::from_urdf_str(URDF, Path::new("h.urdf")).unwrap();
        let names: Vec<(String, JointRole)> = m
            .joints
            .iter()
            .map(|j| {
                let role = match j.name.as_str() {
                    "waist" => JointRole::Waist,
                    "neck" => JointRole::Neck,
                    n => {
                        let (side, limb) = n.split_once('_').unwrap();
                        let side = if side == "left" {
                            Side::Left
                        } else {
                            Side::Right
                        };
                        let limb = ["hip", "knee", "ankle", "toe", "shoulder", "elbow"]
                            .iter()
                            .position(|l| *l == limb)
                            .map(|i| Limb::ALL[i])
                            .unwrap();
                        JointRole::Limb(side, limb)
                    }
                };
                (j.name.clone(), role)
            })
            .collect();
        let table: Vec<(&str, JointRole)> = names.iter().map(|(n, r)| (n.as_str(), *r)).collect();
        let roles = m.roles_by_name(&table).unwrap();
        assert_eq!(
            roles[m.joint_index("left_knee").unwrap()],
            table[m.joint_index("left_knee").unwrap()].1
        );
        let joints = m.pose_joints(&roles).unwrap();
        assert_eq!(joints.len(), 14);
        assert_eq!(joints[0].effort_nm, m.joints[0].effort_nm);
        assert_eq!(m.body_masses().len(), 15);
        // Standing upright, the centre of mass is in front of the ankles: a small lean.
        let lean = m.standing_lean_rad(&roles, &[]);
        assert!(lean.abs() < 0.1 && lean != 0.0, "{lean}");
        // Refusals name the joint.
        let mut short = table.clone();
        short.pop();
        let last = &m.joints.last().unwrap().name;
        assert_eq!(
            m.roles_by_name(&short).unwrap_err(),
            format!("joint `{last}` plays no part")
        );
        let mut twice = table.clone();
        twice.push(("waist", JointRole::Neck));
        assert_eq!(
            m.roles_by_name(&twice).unwrap_err(),
            "joint `waist` is named twice"
        );
        let mut unknown = table.clone();
        unknown[0].0 = "left_hip_x";
        assert!(
            m.roles_by_name(&unknown)
                .unwrap_err()
                .contains("`left_hip_x` is no joint")
        );
        assert!(
            m.pose_joints(&roles[1..])
                .unwrap_err()
                .contains("13 roles for 14 joints")
        );
    }

    #[test]
    fn loose_numbers_are_refused_naming_the_attribute() {
        // urdf-rs alone reads `0.01 foo 0.33 0` as (0.01, 0.33, 0).
        let e = refusal(
            r#"<origin xyz="0.01 0.33 0"/>"#,
            r#"<origin xyz="0.01 foo 0.33 0"/>"#,
        );
        assert_eq!(e.element, r#"joint "neck" <origin xyz>"#);
        assert!(e.reason.contains("not a number"), "{e}");
        let waist = r#"<limit effort="400" velocity="100" lower_xyz="-0.6 -0.6 -0.6" upper_xyz="0.6 0.6 0.6"/>"#;
        let e = refusal(
            waist,
            &waist.replace(r#"lower_xyz="-0.6 -0.6 -0.6""#, r#"lower_xyz="-0.6 -0.6""#),
        );
        assert_eq!(e.element, r#"joint "waist" <limit lower_xyz>"#);
        assert!(e.reason.contains("3 numbers expected, got 2"), "{e}");
        let e = refusal(
            waist,
            &waist.replace(r#"upper_xyz="0.6 0.6 0.6""#, r#"upper_xyz="0.6 nan 0.6""#),
        );
        assert_eq!(e.element, r#"joint "waist" <limit upper_xyz>"#);
        assert!(e.reason.contains("not a finite number"), "{e}");
    }

    #[test]
    fn a_hand_built_model_with_indices_past_its_bodies_is_refused_not_a_panic() {
        let mut m = HumanoidModel::from_urdf_str(URDF, Path::new("h.urdf")).unwrap();
        m.joints[3].child = 99;
        assert!(
            m.check_indices()
                .unwrap_err()
                .contains("past the 15 bodies")
        );
        assert!(HumanoidTree::new(&m, &|_| true).is_err());
        assert!(soles(&m).is_err());
        let root = BodyPose {
            com_m: [0.0; 3],
            orientation: [1.0, 0.0, 0.0, 0.0],
        };
        assert_eq!(m.pose(root, &[]).len(), 15);
        let mut m = HumanoidModel::from_urdf_str(URDF, Path::new("h.urdf")).unwrap();
        m.ground_contact_bodies[2] = 15;
        assert!(soles(&m).is_err());
    }

    #[test]
    fn per_axis_ranges_belong_to_spherical_joints() {
        let e = refusal(
            r#"<limit effort="400" velocity="100" lower_xyz="-0.6 -0.6 -0.6" upper_xyz="0.6 0.6 0.6"/>"#,
            r#"<limit effort="400" velocity="100" upper_xyz="0.6 0.6 0.6"/>"#,
        );
        assert_eq!(e.element, r#"joint "waist" <limit>"#);
        assert!(e.reason.contains("needs lower_xyz"), "{e}");
    }

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
}
