//! One robot model for the plant and the controller: a URDF file read into a kinematic tree.
//!
//! Both sides load a description through [`load`]: `sim-host` builds its Rapier plant from the
//! [`RobotModel`] (bodies with merged mass properties, shapes with resolved mesh files, named
//! frames), and the controller builds [`control_core::tree::Tree`] from
//! [`RobotModel::tree_spec`] (or [`RobotModel::tree`]). It reads files and allocates: it is
//! start-up code, never for the control loop (the [`Tree`] it gives is what the loop uses).
//! Ball joints (the 15-body humanoid's, `models/humanoid15.urdf`) load as the revolute
//! coordinates the tree represents them with (below); [`humanoid`] reads the same file as the
//! humanoid character's description (its bodies, roles and soles), through the same reader and
//! strict pass, for the humanoid plant and its controllers.
//!
//! # Reading
//! [`read_description`] reads the file without trusting it: a regular file only (a FIFO, a
//! device, a socket or a folder is refused from its metadata, and the file is opened with
//! `O_NONBLOCK` and checked again through the open descriptor, so nothing can block), at most
//! [`MAX_URDF_BYTES`] (16 MiB) of UTF-8, elements nested at most [`MAX_XML_DEPTH`] (64) deep and
//! at most [`MAX_XML_ELEMENTS`] (100 000) of them, checked by a linear scan ([`check_xml`])
//! before any XML parser sees the text. The limits and messages are those of
//! `sim_host::input::read_urdf`.
//!
//! [`parse`] then reads the text with `urdf-rs` 0.9 (`urdf_rs::read_from_string`), after a strict pass over the same XML tree, because urdf-rs reads
//! loosely: it drops the tokens of a vector that are not numbers (`xyz="1 foo 0 0"` reads as
//! (1, 0, 0)), reads `nan` and `inf`, fills an absent `<limit>` with zeros and says "missing
//! field" without saying where. The strict pass refuses all that, naming the element. urdf-rs
//! ignores everything but `<link>`, `<joint>` and `<material>` (`<transmission>`, `<gazebo>`,
//! sensors); of a joint it keeps `<mimic>`, `<dynamics>` (both used here), `<safety_controller>`
//! and `<calibration>` (checked to be numbers, then unused). URDF 1.1's `<origin quat_xyzw>` is
//! read as urdf-rs reads it (converted to rpy).
//!
//! # What is accepted
//! One kinematic **tree**: links joined by joints, exactly one root link, every other link the
//! child of exactly one joint.
//! - `revolute` and `prismatic` joints (each with its `<limit lower upper effort velocity>`, as
//!   URDF requires) and `continuous` joints (a revolute joint without position limits: its
//!   [`Joint::limits`] is `None`) become the movable [`Joint`]s, each carrying one [`Body`].
//! - `fixed` joints are **merged**: the child link becomes part of the body it is fixed to (see
//!   "Merging").
//! - `spherical` joints in this project's convention ([`humanoid`]'s: per-axis ranges as
//!   `<limit lower_xyz="…" upper_xyz="…">` about the joint frame's x, y, z, `lower`/`upper`
//!   left out; a range of [0, 0] locks its axis) become revolute joints through massless
//!   links, the coordinates [`humanoid::HumanoidTree`] gives the same joint: a ball joint three
//!   Euler angles about the frame's axes, the axis of the smallest range in the middle (the
//!   farthest from gimbal lock in use), a two-axis joint its two free axes. Each is named
//!   `<joint>_<axis>` (`left_hip_x`) and takes the axis's range and the joint's effort,
//!   velocity and `<dynamics>`; the links between are `<joint>_<axis>_link`. A note says so for
//!   each joint: the effort then bounds each coordinate's torque, not the norm of the three,
//!   and the ranges are Euler angles', not the humanoid plant's per-axis measure (the two agree
//!   for a turn about one axis).
//! - `<dynamics damping friction>` (0 when absent), `<limit effort velocity>` are kept on the
//!   joint; `<safety_controller>` and `<calibration>` are not used.
//! - `<mimic>` on a movable joint only when [`LoadOptions::mimic_as_independent`] asks for it:
//!   the joint is then an ordinary independent joint with [`Joint::mimic`] set, and a line in
//!   [`RobotModel::notes`] (Pinocchio's default). A `<mimic>` on a fixed joint means nothing (the
//!   joint does not move): it is ignored, with a note.
//! - Masses: a link without `<inertial>` has mass 0. Zero-mass links are fine wherever they add
//!   to a body that has a mass from elsewhere (a tool frame fixed to a hand), and on a fixed base.
//!   A moving body with no mass at all (no centre or inertia either) is a **massless frame**
//!   when it carries, through its joints, a body that has mass: the links between the chained
//!   revolute joints of a multi-axis joint, as ROS descriptions write a hip or a wrist
//!   (example-robot-data's `human.urdf` has 19). The tree takes it as
//!   [`control_core::tree::Inertial::ZERO`], and [`RobotModel::notes`] lists them. A massless
//!   body that carries nothing with mass is refused: the mass matrix would be singular; so are
//!   two joints about one line (or along one direction) with only a massless link between
//!   them, the same motion twice. Chained axes that line up only at some poses (three revolute
//!   joints at one point in gimbal lock: `human.urdf`'s shoulders at X = ±π/2) make the mass
//!   matrix singular at those poses, as in Pinocchio; a controller or plant near them sees a
//!   nearly singular matrix.
//!
//! # The base
//! - A root link named `world` with exactly one joint, `fixed`: the base is that joint's child,
//!   welded to the world at the joint's origin ([`RobotModel::base_placement`]),
//!   [`BaseKind::Fixed`]. `world` becomes a frame on the base (at the inverse placement).
//! - A root link named `world` with exactly one joint, `floating`: the base is its child,
//!   [`BaseKind::Floating`]; the joint's origin is ignored (with a note: the scene places a
//!   floating base) and `world` is no frame (it is fixed to no body).
//! - Otherwise the root link is the base: [`BaseKind::Fixed`] at the identity, unless
//!   [`LoadOptions::floating_base`] asks for a floating base. A URDF cannot say whether a robot
//!   is bolted down; the scene says so. Asking for a floating base of a file that welds its
//!   robot to `world`, or whose root link is `world`, is refused.
//!
//! # What is refused
//! Every refusal is a [`LoadError`] naming the file, the URDF element (`joint "panda_joint3"
//! <axis xyz>`, `link "base" <inertial><mass value>`) and the reason:
//! - anything the reader refuses (above), malformed XML, a root element other than `<robot>`;
//! - a number that does not parse whole, a vector with the wrong count of numbers, NaN or ±inf
//!   anywhere, a missing required attribute or element (a link's or joint's name, a joint's type,
//!   parent or child, a `<mass>`, an `<inertia>` entry, `<limit velocity>`, a shape in each
//!   `<geometry>`), an element URDF allows once given twice;
//! - no link; two links or two joints of one name; a joint naming a link the file does not have;
//!   a joint from a link to itself; a link that is the child of two joints (a closed loop);
//!   several root links; a loop of joints;
//! - `floating` joints (except as the one joint of the root `world`), `planar` joints; a
//!   `spherical` joint without its per-axis ranges, with more than one axis locked, or whose
//!   coordinates' names would repeat a name the file has;
//! - `<mimic>` on a movable joint unless [`LoadOptions::mimic_as_independent`] (and then one
//!   naming a joint the file does not have, itself, or a joint that does not move);
//! - a revolute or prismatic joint without `<limit>`, or with the degenerate limit urdf-rs
//!   reads for an absent one (lower = upper = 0 and effort 0), a `<limit>` without `effort`,
//!   lower > upper, a negative effort or velocity, a negative damping or friction, an axis of
//!   zero length;
//! - a negative mass, a mass above [`MAX_URDF_MASS_KG`], an inertia entry beyond
//!   ±[`MAX_URDF_INERTIA_KG_M2`], a link inertia that is not positive semidefinite (to 1e-12
//!   relative); a coordinate of any `<origin xyz>`, a prismatic limit or a shape size beyond
//!   [`MAX_URDF_LENGTH_M`] (the bounds of `sim_host::input`); a negative size, a mesh scale of 0;
//! - a **moving** body (every body but a fixed base) whose merged mass is not > 0, or whose
//!   merged inertia is not positive definite (Sylvester's criterion), naming the body's link. A
//!   fixed base's mass may be anything ≥ 0: it moves nothing;
//! - a mesh file that cannot be found (see "Meshes"), unless
//!   [`LoadOptions::skip_missing_meshes`].
//!
//! # Merging
//! A link fixed (through any number of fixed joints) to a body's link is merged into that body,
//! exactly:
//! - its frame is the composition of the fixed joints' origins: a [`Frame`] of the link's name
//!   on the body at that [`Frame::placement`] (every link, merged or not, is a frame; a body's
//!   own link is at the identity);
//! - its `<inertial>` joins the body's: the masses are summed, the centre of mass is the
//!   mass-weighted mean of the centres (each placed in the body frame), each inertia tensor is
//!   rotated into the body frame, R I Rᵀ with R the composed rotation of the link and of its
//!   `<inertial><origin rpy>`, and moved to the combined centre of mass by the parallel-axis
//!   theorem (+ m (|d|² E − d dᵀ)). A body of one link keeps its link's numbers bit for bit;
//! - its `<visual>` and `<collision>` shapes move to the body, their placements composed;
//! - a movable joint hanging from it hangs from the body, its [`Joint::origin`] composed with
//!   the fixed joints' origins.
//!
//! # Order
//! Body 0 is the base; joint k carries body k + 1 and hangs from a body before it. Joints are
//! numbered **depth-first from the base, visiting each link's child joints in file order**
//! (pre-order; the order of the `<joint>` elements in the file), walking through fixed joints
//! as through movable ones. Pinocchio also numbers depth-first, in urdfdom's order of child
//! links: the two may differ, so compare by joint name ([`RobotModel::joint_index`]).
//! [`RobotModel::frames`] are in URDF link order; each body's shapes in walk order, then file
//! order within a link.
//!
//! # Meshes
//! Each `<mesh filename>` is resolved to an existing regular file, kept with its `scale`:
//! - `package://PKG/rest` (and `package:///PKG/rest`, as `talos_data` writes it): `rest` in the
//!   first folder of package `PKG` that holds it, looking in order at the URDF's ancestors (its
//!   own folder up to `/`: an ancestor named `PKG`, or an ancestor's child `PKG`), then each
//!   `ROS_PACKAGE_PATH` entry (the entry if named `PKG`, `entry/PKG`, and `entry/*/PKG` one
//!   level down), then each `AMENT_PREFIX_PATH` entry (`entry/share/PKG`);
//! - `file:///abs/path`, an absolute path: that file; a relative path (or `file://` followed by
//!   one): relative to the URDF's folder;
//! - other schemes are refused.
//!
//! A mesh not found is refused naming the link, the filename and where the loader looked, or,
//! with [`LoadOptions::skip_missing_meshes`], dropped with a note. [`load`] and [`parse`] take
//! the search path from the environment ([`MeshSearch::from_env`]); [`load_with`] and
//! [`parse_with`] take it given.
//!
//! # Units and the up axis
//! SI units as URDF gives them (m, kg, kg·m², rad). URDF descriptions are z-up; the model rotates
//! nothing: everything is in the file's frames. A scene that wants another up axis places the
//! base accordingly (the plant's and the controller's job), and gives gravity in the same world
//! frame.

use std::fmt;
use std::path::{Path, PathBuf};

use control_core::balance;
use control_core::tree::{
    BaseKind, Inertial, JointSpec, JointType, Placement, SpecField, Tree, TreeError, TreeSpec,
};

// The README's Rust examples (the arm's controller; a legged robot's balance from its URDF),
// compiled and run as doctests by `cargo test`.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

pub mod humanoid;

mod build;
mod math;
mod mesh;
mod read;
mod syntax;

pub use mesh::MeshSearch;
pub use read::{
    MAX_URDF_BYTES, MAX_XML_DEPTH, MAX_XML_ELEMENTS, check_xml, file_type_name, read_description,
    size_name,
};

/// Largest `<mass value>` of a URDF link, kg (`sim_host::input`'s bound).
pub const MAX_URDF_MASS_KG: f64 = 1e6;
/// Largest magnitude of a URDF link's inertia tensor entry (`ixx` … `izz`), kg·m²
/// (`sim_host::input`'s bound).
pub const MAX_URDF_INERTIA_KG_M2: f64 = 1e6;
/// Largest magnitude of a URDF length, m: each coordinate of an `<origin xyz>`, a prismatic
/// joint's limits, a shape's size (`sim_host::input`'s bound).
pub const MAX_URDF_LENGTH_M: f64 = 1e3;

/// Largest joint torque bound a description or a scene may give, N·m (a humanoid's `<limit
/// effort>`, a plant scene's torque limit: `sim_host::scene`'s bound).
pub const MAX_TORQUE_LIMIT_NM: f64 = 1e6;

/// A robot read from a URDF: bodies (fixed-jointed links merged), movable joints, named frames.
#[derive(Debug, Clone, PartialEq)]
pub struct RobotModel {
    /// The `<robot name>`.
    pub name: String,
    /// The file it was read from (as given, made absolute).
    pub source: PathBuf,
    /// Fixed (the root link welded to the world, or a `world` link with a fixed joint to it) or
    /// floating (a root link not welded to anything).
    pub base: BaseKind,
    /// The base's pose in the world when the file welds it to a root link `world` (the fixed
    /// joint's origin); the identity otherwise (the scene places the base).
    pub base_placement: Placement,
    /// The bodies: index 0 is the base, body k + 1 the child of joint k. Each is one URDF link
    /// with every link fixed to it merged in.
    pub bodies: Vec<Body>,
    /// The movable joints, parents first; joint k carries body k + 1.
    pub joints: Vec<Joint>,
    /// Every URDF link as a named frame on the body it was merged into (a body's own link at the
    /// identity), in URDF link order. (A root `world` holding a floating base is fixed to no
    /// body and is not a frame.)
    pub frames: Vec<Frame>,
    /// What the loader accepted only because the caller asked it to (mimic joints loaded as
    /// independent joints, meshes skipped) or ignored (a `<mimic>` on a fixed joint, a floating
    /// joint's origin): one line each, for the run's report. Empty otherwise.
    pub notes: Vec<String>,
}

/// The first eight of `names`, quoted and joined, and "… N in all" when there are more.
fn some_names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    const SHOWN: usize = 8;
    let names: Vec<&str> = names.collect();
    let mut list = names
        .iter()
        .take(SHOWN)
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        list.push_str(&format!(", … {} in all", names.len()));
    }
    if names.is_empty() {
        list.push_str("none");
    }
    list
}
/// The mass each body carries through its joints: its moving descendants' masses summed (its
/// own left out). `bodies` and `joints` as in [`RobotModel`] (body k + 1 the child of joint k);
/// a joint whose parent is not an earlier body adds nothing, so a hand-made, inconsistent model
/// gives a result, never a panic.
pub fn carried_masses(bodies: &[Body], joints: &[Joint]) -> Vec<f64> {
    let mut carried = vec![0.0f64; bodies.len()];
    for b in (1..bodies.len()).rev() {
        let Some(parent) = joints.get(b - 1).map(|j| j.parent_body) else {
            continue;
        };
        let below = carried[b] + bodies[b].inertial.mass_kg;
        if let Some(c) = carried.get_mut(parent).filter(|_| parent < b) {
            *c += below;
        }
    }
    carried
}

/// One rigid body of the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    /// The URDF link that is this body's frame.
    pub link: String,
    /// The merged mass properties in this body's frame (the link's own `<inertial>` with those of
    /// every link fixed to it, combined exactly: masses summed, centre of mass the weighted mean,
    /// inertias rotated into this frame and moved by the parallel-axis theorem).
    pub inertial: Inertial,
    /// Collision shapes in this body's frame (those of merged links included).
    pub collisions: Vec<Shape>,
    /// Visual shapes in this body's frame (those of merged links included).
    pub visuals: Vec<Shape>,
}

/// A shape placed on a body.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// The URDF link it was declared on (which may have been merged into the body).
    pub link: String,
    /// Its placement in the body's frame.
    pub placement: Placement,
    /// What it is.
    pub geometry: Geometry,
}

/// A URDF geometry. Sizes in m.
#[derive(Debug, Clone, PartialEq)]
pub enum Geometry {
    /// A box with these full side lengths.
    Box {
        /// x, y, z side lengths.
        size: [f64; 3],
    },
    /// A cylinder along the shape frame's z.
    Cylinder {
        /// Radius.
        radius: f64,
        /// Full length.
        length: f64,
    },
    /// A capsule along the shape frame's z (`urdf-rs`'s extension).
    Capsule {
        /// Radius.
        radius: f64,
        /// Length of the cylindrical part.
        length: f64,
    },
    /// A sphere.
    Sphere {
        /// Radius.
        radius: f64,
    },
    /// A mesh file, its path resolved (`package://` or relative) to an existing regular file.
    Mesh {
        /// The resolved path.
        path: PathBuf,
        /// The `<mesh filename>` as written.
        filename: String,
        /// Per-axis scale (1, 1, 1 when not given).
        scale: [f64; 3],
    },
}

/// A movable joint.
#[derive(Debug, Clone, PartialEq)]
pub struct Joint {
    /// The URDF joint name.
    pub name: String,
    /// Revolute (URDF `revolute` or `continuous`) or prismatic.
    pub kind: JointType,
    /// True for URDF `continuous` (no position limits).
    pub continuous: bool,
    /// The body it hangs from (0 = the base; k + 1 = joint k's child); always ≤ its own index.
    pub parent_body: usize,
    /// The joint frame in the parent body's frame at q = 0 (the fixed joints between the parent
    /// body's link and this joint's parent link composed in).
    pub origin: Placement,
    /// The unit axis in the joint frame.
    pub axis: [f64; 3],
    /// Position limits (lower, upper), rad or m; `None` for a continuous joint.
    pub limits: Option<(f64, f64)>,
    /// `<limit effort>`: N·m or N, if given.
    pub effort: Option<f64>,
    /// `<limit velocity>`: rad/s or m/s, if given.
    pub velocity: Option<f64>,
    /// `<dynamics damping>`: N·m·s/rad or N·s/m (0 when absent).
    pub damping: f64,
    /// `<dynamics friction>`: N·m or N (0 when absent).
    pub friction: f64,
    /// `Some` when the URDF says `<mimic>` and the caller allowed mimic joints as independent
    /// joints: (leader joint name, multiplier, offset).
    pub mimic: Option<(String, f64, f64)>,
}

/// A named frame: a URDF link, on the body it belongs to after merging.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// The URDF link name.
    pub name: String,
    /// The body it is fixed to.
    pub body: usize,
    /// Its placement in that body's frame.
    pub placement: Placement,
}

/// What the loader may accept when asked, beyond what it accepts by default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Load `<mimic>` joints as independent joints (as Pinocchio does by default) instead of
    /// refusing them; each is listed in [`RobotModel::notes`].
    pub mimic_as_independent: bool,
    /// Give the root link a floating base (6 degrees of freedom) instead of welding it at the
    /// world origin. A URDF cannot say whether its robot is bolted down: the scene says so.
    /// Refused for a file that welds its robot to a root link `world`. (A file whose root `world`
    /// holds the robot by a `floating` joint floats without it.)
    pub floating_base: bool,
    /// Drop a shape whose mesh file cannot be found (listed in [`RobotModel::notes`]) instead of
    /// refusing the file.
    pub skip_missing_meshes: bool,
}

/// Why a URDF gives no model: the file, the element and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// The URDF file, as given.
    pub file: PathBuf,
    /// The element refused, as the file names it: `<robot>`, `joint "elbow"`,
    /// `joint "elbow" <origin xyz>`, `link "hand" <inertial><mass value>`,
    /// `link "hand" <visual #2><geometry><mesh filename>`. Empty when the file itself is refused
    /// before it is parsed (not a regular file, too large, too deep).
    pub element: String,
    /// Why: "not a regular file (a FIFO)", "names a link \"x\" the file does not have", …
    pub reason: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.element.is_empty() {
            write!(f, "{}: {}", self.file.display(), self.reason)
        } else {
            write!(
                f,
                "{}: {}: {}",
                self.file.display(),
                self.element,
                self.reason
            )
        }
    }
}

impl std::error::Error for LoadError {}

/// Reads and loads the URDF at `path` ([`read_description`] then [`parse`]); `package://` meshes
/// are searched with this process's `ROS_PACKAGE_PATH` and `AMENT_PREFIX_PATH`.
pub fn load(path: &Path, options: &LoadOptions) -> Result<RobotModel, LoadError> {
    load_with(path, options, &MeshSearch::from_env())
}

/// [`load`] with the package search path given.
pub fn load_with(
    path: &Path,
    options: &LoadOptions,
    search: &MeshSearch,
) -> Result<RobotModel, LoadError> {
    let text = read_description(path)?;
    parse_with(&text, path, options, search)
}

/// Loads the URDF `text`, read from `source` (for relative and `package://` mesh paths, which
/// are searched with this process's `ROS_PACKAGE_PATH` and `AMENT_PREFIX_PATH`, and for
/// messages). The text is bounded ([`check_xml`]) as [`read_description`] bounds a file's.
pub fn parse(text: &str, source: &Path, options: &LoadOptions) -> Result<RobotModel, LoadError> {
    parse_with(text, source, options, &MeshSearch::from_env())
}

/// [`parse`] with the package search path given.
pub fn parse_with(
    text: &str,
    source: &Path,
    options: &LoadOptions,
    search: &MeshSearch,
) -> Result<RobotModel, LoadError> {
    let fail = |(element, reason): (String, String)| LoadError {
        file: source.to_path_buf(),
        element,
        reason,
    };
    if text.len() as u64 > MAX_URDF_BYTES {
        return Err(fail((
            String::new(),
            format!(
                "larger than the 16 MiB limit for a URDF file ({} bytes)",
                text.len()
            ),
        )));
    }
    check_xml(text, MAX_XML_DEPTH, MAX_XML_ELEMENTS).map_err(|r| fail((String::new(), r)))?;
    let (mut facts, mut robot) = syntax::read(text).map_err(fail)?;
    let expanded = build::expand_spherical(&mut robot, &mut facts).map_err(fail)?;
    let absolute = std::path::absolute(source).unwrap_or_else(|_| source.to_path_buf());
    // A refusal of what the rewrite made names what the file wrote.
    let mut model =
        build::build(&robot, &facts, &absolute, options, search).map_err(|(element, reason)| {
            fail((
                expanded.name_in_file(&element),
                expanded.name_in_file(&reason),
            ))
        })?;
    model.notes.splice(0..0, expanded.notes);
    Ok(model)
}

/// A [`TreeSpec`] that owns its joints: what [`RobotModel::tree_spec`] gives.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeSpecBuf {
    /// Fixed or floating.
    pub base: BaseKind,
    /// The base body's merged mass properties.
    pub base_body: Inertial,
    /// Joint k: its parent body, type, origin, unit axis and child body's merged mass properties.
    pub joints: Vec<JointSpec>,
}

impl TreeSpecBuf {
    /// The borrowed spec [`Tree::new`] takes.
    pub fn as_spec(&self) -> TreeSpec<'_> {
        TreeSpec {
            base: self.base,
            base_body: self.base_body,
            joints: &self.joints,
        }
    }
}

impl Body {
    /// No mass, centre or inertia at all ([`Inertial::ZERO`]): a massless frame when it moves and
    /// carries a body that has mass ([`carried_masses`]).
    pub fn is_massless(&self) -> bool {
        self.inertial == Inertial::ZERO
    }
}

impl RobotModel {
    /// The tree's spec: the base, its body, and one [`JointSpec`] per joint (same order).
    pub fn tree_spec(&self) -> TreeSpecBuf {
        TreeSpecBuf {
            base: self.base,
            base_body: self.bodies[0].inertial,
            joints: self
                .joints
                .iter()
                .enumerate()
                .map(|(k, j)| JointSpec {
                    parent_body: j.parent_body,
                    kind: j.kind,
                    origin: j.origin,
                    axis: j.axis,
                    body: self.bodies[k + 1].inertial,
                })
                .collect(),
        }
    }

    /// The control tree of capacity `N` ([`Tree::new`] on [`Self::tree_spec`]); a refusal names
    /// the URDF element it concerns (the joint, or the link of the body).
    pub fn tree<const N: usize>(&self) -> Result<Tree<N>, LoadError> {
        Tree::<N>::new(&self.tree_spec().as_spec()).map_err(|e| LoadError {
            file: self.source.clone(),
            element: self.tree_error_element(&e),
            reason: e.to_string(),
        })
    }

    /// The URDF element a [`TreeError`] concerns.
    fn tree_error_element(&self, e: &TreeError) -> String {
        let joint = |k: usize, sub: &str| match self.joints.get(k) {
            Some(j) if sub.is_empty() => format!("joint {:?}", j.name),
            Some(j) => format!("joint {:?} {sub}", j.name),
            None => "<robot>".to_owned(),
        };
        let body = |k: Option<usize>, sub: &str| {
            let b = k.map_or(0, |k| k + 1);
            match self.bodies.get(b) {
                Some(body) => format!("link {:?} {sub}", body.link),
                None => "<robot>".to_owned(),
            }
        };
        match *e {
            TreeError::ParentAfterChild { joint: k, .. } => joint(k, ""),
            TreeError::NonFinite { joint: k, field } => match (k, field) {
                (Some(k), SpecField::Origin) => joint(k, "<origin>"),
                (Some(k), SpecField::Axis) => joint(k, "<axis xyz>"),
                (k, SpecField::Mass) => body(k, "<inertial><mass value>"),
                (k, SpecField::Centre) => body(k, "<inertial><origin xyz>"),
                (k, _) => body(k, "<inertial><inertia>"),
            },
            TreeError::NotARotation { joint: k } => joint(k, "<origin rpy>"),
            TreeError::NonPositiveMass { joint: k } => body(k, "<inertial><mass value>"),
            TreeError::InertiaNotPositiveDefinite { joint: k } => body(k, "<inertial><inertia>"),
            TreeError::ZeroAxis { joint: k } => joint(k, "<axis xyz>"),
            _ => "<robot>".to_owned(),
        }
    }

    /// The frame of URDF link `name`.
    pub fn frame(&self, name: &str) -> Option<&Frame> {
        self.frames.iter().find(|f| f.name == name)
    }

    /// The index of movable joint `name` (into [`Self::joints`]; its body is the index + 1).
    pub fn joint_index(&self, name: &str) -> Option<usize> {
        self.joints.iter().position(|j| j.name == name)
    }

    /// "no such moving joint (its moving joints: …)": the first few of the model's moving
    /// joints, so that a misspelt or foreign name shows what the file has.
    fn no_such_joint(&self) -> String {
        format!(
            "no such moving joint (its moving joints: {})",
            some_names(self.joints.iter().map(|j| j.name.as_str()))
        )
    }

    /// "no such link (its links: …)", likewise: the bodies' links and the merged frames.
    pub fn no_such_link(&self) -> String {
        let bodies = self.bodies.iter().map(|b| b.link.as_str());
        let merged = self
            .frames
            .iter()
            .map(|f| f.name.as_str())
            .filter(|n| !self.bodies.iter().any(|b| b.link == *n));
        format!(
            "no such link (its links: {})",
            some_names(bodies.chain(merged))
        )
    }

    /// A refusal of this model's `element`.
    fn refuse(&self, element: String, reason: String) -> LoadError {
        LoadError {
            file: self.source.clone(),
            element,
            reason,
        }
    }

    /// A foot for [`control_core::balance`]: the points `points_m` (1 to
    /// [`balance::MAX_POINTS`], m) given in the frame of URDF link `link` (a body's link, or a
    /// link merged into one: a sole frame), as a contact body of that link's body, the points
    /// in the body's frame. Refused, naming the link: a link the model does not have, the
    /// floating base's (a foot hangs from a joint), no points or too many, a non-finite one.
    pub fn contact_body(
        &self,
        link: &str,
        points_m: &[[f64; 3]],
    ) -> Result<balance::ContactBody, LoadError> {
        let element = format!("link {link:?}");
        let (body, placement) = match self.frame(link) {
            Some(f) => (f.body, f.placement),
            None => match self.bodies.iter().position(|b| b.link == link) {
                Some(b) => (b, Placement::IDENTITY),
                None => return Err(self.refuse(element, self.no_such_link())),
            },
        };
        if body == 0 && self.base == BaseKind::Floating {
            return Err(self.refuse(
                element,
                String::from("is on the floating base: a foot must hang from a joint"),
            ));
        }
        if points_m.is_empty() || points_m.len() > balance::MAX_POINTS {
            return Err(self.refuse(
                element,
                format!(
                    "1 to {} contact points (got {})",
                    balance::MAX_POINTS,
                    points_m.len()
                ),
            ));
        }
        let mut points = [[0.0; 3]; balance::MAX_POINTS];
        for (slot, p) in points.iter_mut().zip(points_m) {
            if !p.iter().all(|c| c.is_finite()) {
                return Err(self.refuse(element, format!("a contact point is not finite: {p:?}")));
            }
            let r = &placement.rotation;
            for (k, out) in slot.iter_mut().enumerate() {
                *out = r[k][0] * p[0] + r[k][1] * p[1] + r[k][2] * p[2] + placement.xyz_m[k];
            }
        }
        Ok(balance::ContactBody {
            body,
            points,
            count: points_m.len(),
        })
    }

    /// Every joint as its own [`balance::JointGroup`] bounded by its URDF `<limit effort>`, model
    /// order. Refused, naming the joint: one without a positive effort.
    pub fn joint_groups(&self) -> Result<Vec<balance::JointGroup>, LoadError> {
        self.joints
            .iter()
            .enumerate()
            .map(|(k, j)| match j.effort {
                Some(effort) if effort > 0.0 => Ok(balance::JointGroup {
                    first: k,
                    count: 1,
                    effort,
                }),
                _ => Err(self.refuse(
                    format!("joint {:?} <limit effort>", j.name),
                    String::from(
                        "a balance controller bounds every joint by its effort: none given",
                    ),
                )),
            })
            .collect()
    }

    /// Joint positions by joint name, as the tree takes them (model order, 0 for a joint not
    /// named and past the last joint). Refused, naming the joint: a name the model has no moving
    /// joint of, a value that is not finite or lies outside the joint's limits, and a joint not
    /// named whose limits exclude 0.
    pub fn positions<const N: usize>(
        &self,
        by_name: &[(&str, f64)],
    ) -> Result<[f64; N], LoadError> {
        let mut q = [0.0; N];
        for &(name, v) in by_name {
            let element = format!("joint {name:?}");
            let Some(j) = self.joint_index(name).filter(|&j| j < N) else {
                return Err(self.refuse(element, self.no_such_joint()));
            };
            if !v.is_finite() {
                return Err(self.refuse(element, format!("position {v} is not finite")));
            }
            if let Some((lo, hi)) = self.joints[j].limits
                && !(lo..=hi).contains(&v)
            {
                return Err(self.refuse(
                    element,
                    format!("position {v} lies outside its limits [{lo}, {hi}]"),
                ));
            }
            q[j] = v;
        }
        for joint in &self.joints {
            if !by_name.iter().any(|(n, _)| *n == joint.name)
                && let Some((lo, hi)) = joint.limits
                && !(lo..=hi).contains(&0.0)
            {
                return Err(self.refuse(
                    format!("joint {:?}", joint.name),
                    format!("its limits [{lo}, {hi}] exclude 0: give its position"),
                ));
            }
        }
        Ok(q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"<robot name="r"><link name="a"/>
        <link name="b"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
        <joint name="j" type="continuous"><parent link="a"/><child link="b"/></joint></robot>"#;

    /// A floating base, a hip with limits and effort, a knee whose limits exclude 0 and that has
    /// an effort of 0, and a sole frame turned about z.
    const LEG: &str = r#"<robot name="leg">
        <link name="base"><inertial><mass value="2"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
        <link name="thigh"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
        <link name="shin"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
        <link name="sole"/>
        <joint name="hip" type="revolute"><parent link="base"/><child link="thigh"/><axis xyz="0 1 0"/>
          <limit lower="-1" upper="1" effort="30" velocity="5"/></joint>
        <joint name="knee" type="revolute"><parent link="thigh"/><child link="shin"/><axis xyz="0 1 0"/>
          <origin xyz="0 0 -0.4"/><limit lower="0.1" upper="2" effort="0" velocity="1"/></joint>
        <joint name="fix" type="fixed"><parent link="shin"/><child link="sole"/>
          <origin xyz="0.1 0 -0.4" rpy="0 0 1.5707963267948966"/></joint></robot>"#;

    #[test]
    fn feet_efforts_and_positions_for_a_balance_controller_name_what_they_refuse() {
        let options = LoadOptions {
            floating_base: true,
            ..LoadOptions::default()
        };
        let m = parse_with(
            LEG,
            Path::new("/leg.urdf"),
            &options,
            &MeshSearch::default(),
        )
        .unwrap();
        // The sole's point (1, 0, 0) in the shin's frame: turned a quarter about z, then moved.
        let foot = m.contact_body("sole", &[[1.0, 0.0, 0.0]]).unwrap();
        assert_eq!((foot.body, foot.count), (2, 1));
        for (got, want) in foot.points[0].iter().zip([0.1, 1.0, -0.4]) {
            assert!((got - want).abs() < 1e-12, "{:?}", foot.points[0]);
        }
        let refused = |r: Result<balance::ContactBody, LoadError>| r.unwrap_err().element;
        assert_eq!(refused(m.contact_body("toe", &[[0.0; 3]])), "link \"toe\"");
        assert_eq!(
            refused(m.contact_body("base", &[[0.0; 3]])),
            "link \"base\""
        );
        assert_eq!(refused(m.contact_body("sole", &[])), "link \"sole\"");
        assert_eq!(
            refused(m.contact_body("sole", &[[0.0; 3]; 5])),
            "link \"sole\""
        );
        assert_eq!(
            refused(m.contact_body("sole", &[[f64::NAN, 0.0, 0.0]])),
            "link \"sole\""
        );
        assert_eq!(
            m.joint_groups().unwrap_err().element,
            "joint \"knee\" <limit effort>"
        );
        let q: [f64; 4] = m.positions(&[("hip", 0.5), ("knee", 1.0)]).unwrap();
        assert_eq!(q, [0.5, 1.0, 0.0, 0.0]);
        let refused = |by: &[(&str, f64)]| m.positions::<4>(by).unwrap_err().element;
        assert_eq!(refused(&[("ankle", 0.0), ("knee", 1.0)]), "joint \"ankle\"");
        assert_eq!(refused(&[("hip", 1.5), ("knee", 1.0)]), "joint \"hip\"");
        assert_eq!(
            refused(&[("hip", f64::NAN), ("knee", 1.0)]),
            "joint \"hip\""
        );
        assert_eq!(refused(&[("hip", 0.0)]), "joint \"knee\"");
        // A name the model does not have is refused with the names it has.
        let reason = m.positions::<4>(&[("ankle", 0.0)]).unwrap_err().reason;
        assert_eq!(
            reason,
            "no such moving joint (its moving joints: \"hip\", \"knee\")"
        );
        let reason = m.contact_body("toe", &[[0.0; 3]]).unwrap_err().reason;
        assert_eq!(
            reason,
            "no such link (its links: \"base\", \"thigh\", \"shin\", \"sole\")"
        );
    }

    #[test]
    fn some_names_shows_eight_and_counts_the_rest() {
        assert_eq!(some_names([].into_iter()), "none");
        assert_eq!(some_names(["a", "b"].into_iter()), "\"a\", \"b\"");
        let many: Vec<String> = (0..10).map(|i| format!("j{i}")).collect();
        assert_eq!(
            some_names(many.iter().map(String::as_str)),
            "\"j0\", \"j1\", \"j2\", \"j3\", \"j4\", \"j5\", \"j6\", \"j7\", … 10 in all"
        );
    }

    #[test]
    fn tree_errors_name_the_urdf_element() {
        let m = parse_with(
            TWO,
            Path::new("/r.urdf"),
            &LoadOptions::default(),
            &MeshSearch::default(),
        )
        .unwrap();
        let cases = [
            (
                TreeError::CapacityExceeded {
                    dofs: 1,
                    capacity: 0,
                },
                "<robot>",
            ),
            (
                TreeError::ParentAfterChild {
                    joint: 0,
                    parent_body: 1,
                },
                r#"joint "j""#,
            ),
            (
                TreeError::NonFinite {
                    joint: Some(0),
                    field: SpecField::Origin,
                },
                r#"joint "j" <origin>"#,
            ),
            (
                TreeError::NonFinite {
                    joint: Some(0),
                    field: SpecField::Axis,
                },
                r#"joint "j" <axis xyz>"#,
            ),
            (
                TreeError::NonFinite {
                    joint: Some(0),
                    field: SpecField::Inertia,
                },
                r#"link "b" <inertial><inertia>"#,
            ),
            (
                TreeError::NonFinite {
                    joint: None,
                    field: SpecField::Centre,
                },
                r#"link "a" <inertial><origin xyz>"#,
            ),
            (
                TreeError::NonFinite {
                    joint: None,
                    field: SpecField::Mass,
                },
                r#"link "a" <inertial><mass value>"#,
            ),
            (
                TreeError::NotARotation { joint: 0 },
                r#"joint "j" <origin rpy>"#,
            ),
            (
                TreeError::NonPositiveMass { joint: Some(0) },
                r#"link "b" <inertial><mass value>"#,
            ),
            (
                TreeError::NonPositiveMass { joint: None },
                r#"link "a" <inertial><mass value>"#,
            ),
            (
                TreeError::InertiaNotPositiveDefinite { joint: Some(0) },
                r#"link "b" <inertial><inertia>"#,
            ),
            (TreeError::ZeroAxis { joint: 0 }, r#"joint "j" <axis xyz>"#),
            (TreeError::ZeroAxis { joint: 5 }, "<robot>"),
        ];
        for (e, element) in cases {
            assert_eq!(m.tree_error_element(&e), element, "{e}");
        }
        let e = m.tree::<0>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "/r.urdf: <robot>: tree: 1 degrees of freedom, capacity 0"
        );
        assert_eq!(m.tree::<1>().unwrap().nv(), 1);
    }

    #[test]
    fn errors_show_file_element_and_reason() {
        let e = LoadError {
            file: "/a.urdf".into(),
            element: r#"joint "j" <axis xyz>"#.into(),
            reason: "zero".into(),
        };
        assert_eq!(e.to_string(), r#"/a.urdf: joint "j" <axis xyz>: zero"#);
        let e = LoadError {
            element: String::new(),
            ..e
        };
        assert_eq!(e.to_string(), "/a.urdf: zero");
        let big = " ".repeat((16 << 20) + 1);
        let e = parse(&big, Path::new("x.urdf"), &LoadOptions::default()).unwrap_err();
        assert_eq!(
            e.reason,
            format!(
                "larger than the 16 MiB limit for a URDF file ({} bytes)",
                big.len()
            )
        );
    }
}
