//! The controller's model of a chain, read from the same URDF file the plant is built from.
//!
//! `sim-host` builds the Rapier plant from a URDF (`rapier3d-urdf`, which parses with `urdf-rs`
//! 0.9); [`chain_from_urdf`] reads the same file with the same `urdf-rs` and turns it into the
//! core's fixed-capacity [`Chain`] (forward kinematics, Jacobians, CRBA, gravity torques,
//! composite inertia), so that plant and controller are described once. Users can bring their own
//! URDF: whatever the core cannot represent is refused, with a [`ModelLoadError`] naming the
//! file, the URDF element and the reason.
//!
//! # The mapping
//! URDF joint i (in file order, which is also the plant's joint order, the order of the wire
//! frames and of the returned names) becomes the chain's link i:
//! - `<joint><origin xyz rpy>` → [`LinkSpec::origin_xyz_m`], [`LinkSpec::origin_rpy_rad`] (the
//!   same fixed-axis roll–pitch–yaw convention on both sides);
//! - `<joint><axis xyz>` → [`LinkSpec::axis`] (normalised by the core; URDF's default when
//!   absent is x, as `urdf-rs` fills it in);
//! - the child link's `<inertial>`: `<mass value>` → [`LinkSpec::mass_kg`], `<origin xyz>` →
//!   [`LinkSpec::com_m`], `<inertia>` rotated by `<origin rpy>` into the link frame
//!   (R·I·Rᵀ, R = R_z(yaw)·R_y(pitch)·R_x(roll)) → [`LinkSpec::inertia_kgm2`]. The plant rotates
//!   the same way (`rapier3d-urdf` 0.36 ignores that rotation; `sim_host::chain` corrects it).
//! - The root link (the first joint's parent) is the fixed base, the world frame: its
//!   `<inertial>`, if any, moves nothing and is only checked to be finite.
//!
//! # What is accepted
//! A serial chain of 1 to `N` joints of type `revolute` or `continuous` (a revolute joint without
//! limits: the model has no limits; `<limit>`, `<dynamics>`, geometry and materials are the
//! plant's business and are not read here), listed root to tip: joint 0 hangs from the root and
//! joint i from joint i − 1's child, every link is the root or some joint's child, and every
//! moving link has an `<inertial>` with a mass > 0 and a positive definite inertia.
//!
//! **Fixed joints are refused**, not merged. Merging a fixed child's mass properties into its
//! parent (and composing the fixed origin into the next joint's) is what a model of a real robot
//! would want, but the plant (`sim_host::chain`) refuses fixed joints: a merged model would
//! describe a file that no plant here can run, and the two sides would no longer be built from
//! one description that both accept. The refusal says so; when the plant learns fixed joints,
//! the model should merge them.
//!
//! Everything else is refused: joint types other than revolute, continuous (`prismatic`,
//! `floating`, `planar`, `spherical`, `fixed`), branching trees, joints listed out of chain
//! order, links connected to nothing, names used twice or naming no link, more joints than `N`,
//! missing inertials, non-finite numbers in anything read, numbers beyond the URDF bounds of
//! `sim_host::input` (mass, inertia entries, origins), and whatever the core's own validation
//! refuses (a zero axis, an inertia that is not positive definite). The file is read by
//! `sim_host::input::read_urdf` (a regular file, never a FIFO or a device, at most 16 MiB, nested
//! at most 64 elements deep).
//!
//! # Checked against the plant (the tests below, in-process, Rapier in f32)
//! On `models/arm3.urdf` at 64 random configurations within the joint limits, and on a user's
//! two-link file with rotated inertial frames and a skew axis at 32: link masses within 4e-8
//! relative, world joint axes within 4.8e-7, world centres of mass within 1.8e-7 m, the composite
//! inertia about each axis within 1.4e-6 of Rapier's M_ii and the whole CRBA within 1.4e-6 of
//! Rapier's mass matrix (relative to √(M_ii M_jj)); the gravity torques hold the plant still for
//! a step to 2.3e-6 of the free fall. All at Rapier's f32 precision: the 1e-9 of an f64 model
//! against itself needs an f64 plant.
//!
//! Must never: panic on any file (everything is checked, and the core's [`Chain::new`] validates
//! again), guess (no default mass, no reordering of joints, no dropped element that carries
//! mass), or run in the control loop (it reads a file and allocates: it is for start-up; the
//! [`Chain`] it returns is what the loop uses).

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use control_core::articulated::nalgebra::{Matrix3, Rotation3};
use control_core::articulated::{Chain, ChainError, LinkField, LinkSpec};
use sim_host::input::{MAX_URDF_INERTIA_KG_M2, MAX_URDF_LENGTH_M, MAX_URDF_MASS_KG};

/// Why a URDF file gives no chain model: the file, the element and the reason.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelLoadError {
    /// The URDF file.
    pub file: PathBuf,
    /// The element refused, as the file names it: `<robot>`, ``joint `elbow` ``,
    /// ``joint `elbow` <origin xyz>``, ``link `hand` <inertial><mass value>``.
    pub element: String,
    /// Why.
    pub reason: Refusal,
}

/// What is wrong with the element of a [`ModelLoadError`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Refusal {
    /// The file cannot be read or parsed as URDF (`urdf-rs`'s message).
    Unreadable(String),
    /// The robot has no joint: nothing moves.
    NoJoints,
    /// More joints than the model's capacity.
    TooManyJoints {
        /// Joints in the file.
        count: usize,
        /// The capacity `N`.
        capacity: usize,
    },
    /// A joint type the chain cannot represent (`prismatic`, `floating`, `planar`, `spherical`).
    UnsupportedJoint(String),
    /// A `fixed` joint: refused, not merged (see the module docs).
    FixedJoint,
    /// A link or joint name used twice.
    DuplicateName,
    /// The joint names a link the file does not have.
    UnknownLink(String),
    /// Not a serial chain (a link carrying two joints, a link that is the child of two joints,
    /// a second root, a loop); what was found.
    NotSerial(String),
    /// A serial chain whose joints are not listed root to tip: this joint's parent link is not
    /// the previous joint's child (the root for the first joint).
    OutOfOrder {
        /// The link this joint had to hang from.
        expected_parent: String,
    },
    /// A link that is neither the root nor any joint's child.
    Disconnected,
    /// A moving link without an `<inertial>` (or with a mass of exactly 0, which `urdf-rs`
    /// cannot tell from a missing one).
    MissingInertial,
    /// A number read is NaN or infinite.
    NonFinite,
    /// A number read is beyond its physical bound (`sim_host::input`'s URDF bounds): a mass
    /// above `MAX_URDF_MASS_KG`, an inertia entry or a length beyond ±its bound.
    TooLarge {
        /// The bound.
        max: f64,
        /// Its unit.
        unit: &'static str,
    },
    /// The core model refuses the value (a zero axis, a negative mass, an inertia that is not
    /// positive definite).
    Invalid(ChainError),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unreadable(e) => write!(f, "cannot load the URDF: {e}"),
            Self::NoJoints => write!(f, "no joint: the chain model needs 1 or more"),
            Self::TooManyJoints { count, capacity } => write!(
                f,
                "{count} joints: this chain model holds at most {capacity}"
            ),
            Self::UnsupportedJoint(kind) => write!(
                f,
                "a {kind} joint: the chain model has revolute and continuous joints only"
            ),
            Self::FixedJoint => write!(
                f,
                "a fixed joint: not merged, because the plant refuses fixed joints too (merge the \
                 child link into its parent in the URDF)"
            ),
            Self::DuplicateName => write!(f, "the name is used twice"),
            Self::UnknownLink(link) => write!(f, "names a link `{link}` the file does not have"),
            Self::NotSerial(what) => write!(f, "not a serial chain: {what}"),
            Self::OutOfOrder { expected_parent } => write!(
                f,
                "joints must be listed root to tip, each hanging from the previous joint's child \
                 (the first from the root): this one should hang from `{expected_parent}`"
            ),
            Self::Disconnected => write!(f, "the link is attached to no joint"),
            Self::MissingInertial => write!(
                f,
                "no <inertial> (or a mass of 0): every moving link needs a mass and an inertia"
            ),
            Self::NonFinite => write!(f, "not a finite number"),
            Self::TooLarge { max, unit } => write!(f, "beyond the bound of {max} {unit}"),
            Self::Invalid(e) => write!(f, "refused by the chain model: {e}"),
        }
    }
}

impl fmt::Display for ModelLoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}: {}",
            self.file.display(),
            self.element,
            self.reason
        )
    }
}

impl std::error::Error for ModelLoadError {}

/// Reads the URDF at `path` with `urdf-rs` (the parser the plant uses) and builds the chain
/// model of its joints, with the joints' names, both in URDF joint order (the plant's). See the
/// module docs for the mapping and for what is refused.
pub fn chain_from_urdf<const N: usize>(
    path: &Path,
) -> Result<(Chain<N>, Vec<String>), ModelLoadError> {
    let fail = |element: String, reason: Refusal| ModelLoadError {
        file: path.to_path_buf(),
        element,
        reason,
    };
    // The one input reader: a regular file of at most 16 MiB, nested at most 64 elements deep
    // (checked before the parser, which recurses per level, sees it).
    let text = sim_host::input::read_urdf(path)
        .map_err(|e| fail(String::from("<robot>"), Refusal::Unreadable(e.reason)))?;
    let robot = urdf_rs::read_from_string(&text)
        .map_err(|e| fail(String::from("<robot>"), Refusal::Unreadable(e.to_string())))?;
    chain_from_robot::<N>(&robot).map_err(|(element, reason)| fail(element, reason))
}

/// An element refused and why.
type Refused = (String, Refusal);

fn joint_el(j: &urdf_rs::Joint, sub: &str) -> String {
    if sub.is_empty() {
        format!("joint `{}`", j.name)
    } else {
        format!("joint `{}` {sub}", j.name)
    }
}

fn link_el(name: &str, sub: &str) -> String {
    if sub.is_empty() {
        format!("link `{name}`")
    } else {
        format!("link `{name}` {sub}")
    }
}

fn finite(values: &[f64]) -> bool {
    values.iter().all(|v| v.is_finite())
}

/// Every value within ±`max`.
fn within(values: &[f64], max: f64) -> bool {
    values.iter().all(|v| v.abs() <= max)
}

fn chain_from_robot<const N: usize>(
    robot: &urdf_rs::Robot,
) -> Result<(Chain<N>, Vec<String>), Refused> {
    let joints = &robot.joints;
    let robot_el = || String::from("<robot>");
    if joints.is_empty() {
        return Err((robot_el(), Refusal::NoJoints));
    }
    if joints.len() > N {
        return Err((
            robot_el(),
            Refusal::TooManyJoints {
                count: joints.len(),
                capacity: N,
            },
        ));
    }

    // Names.
    let mut link_names = HashSet::new();
    for l in &robot.links {
        if !link_names.insert(l.name.as_str()) {
            return Err((link_el(&l.name, ""), Refusal::DuplicateName));
        }
    }
    let mut joint_names = HashSet::new();
    for j in joints {
        if !joint_names.insert(j.name.as_str()) {
            return Err((joint_el(j, ""), Refusal::DuplicateName));
        }
    }

    // Each joint on its own: its type, the links it names, its numbers.
    for j in joints {
        match j.joint_type {
            urdf_rs::JointType::Revolute | urdf_rs::JointType::Continuous => {}
            urdf_rs::JointType::Fixed => return Err((joint_el(j, ""), Refusal::FixedJoint)),
            ref other => {
                let kind = format!("{other:?}").to_lowercase();
                return Err((joint_el(j, ""), Refusal::UnsupportedJoint(kind)));
            }
        }
        for (sub, link) in [("<parent>", &j.parent.link), ("<child>", &j.child.link)] {
            if !link_names.contains(link.as_str()) {
                return Err((joint_el(j, sub), Refusal::UnknownLink(link.clone())));
            }
        }
        if !finite(&j.origin.xyz.0) {
            return Err((joint_el(j, "<origin xyz>"), Refusal::NonFinite));
        }
        if !finite(&j.origin.rpy.0) {
            return Err((joint_el(j, "<origin rpy>"), Refusal::NonFinite));
        }
        if !finite(&j.axis.xyz.0) {
            return Err((joint_el(j, "<axis xyz>"), Refusal::NonFinite));
        }
        if !within(&j.origin.xyz.0, MAX_URDF_LENGTH_M) {
            return Err((
                joint_el(j, "<origin xyz>"),
                Refusal::TooLarge {
                    max: MAX_URDF_LENGTH_M,
                    unit: "m",
                },
            ));
        }
    }

    // The topology: one serial chain, listed root to tip. Each link the child of one joint at
    // most; then the root is where the first joint's ancestry ends.
    let mut children: Vec<&str> = Vec::with_capacity(joints.len());
    for j in joints {
        let child = j.child.link.as_str();
        if let Some(k) = children.iter().position(|&c| c == child) {
            return Err((
                link_el(child, ""),
                Refusal::NotSerial(format!(
                    "the child of both joint `{}` and joint `{}`",
                    joints[k].name, j.name
                )),
            ));
        }
        children.push(child);
    }
    let mut root = joints[0].parent.link.as_str();
    let mut steps = 0;
    while let Some(k) = children.iter().position(|&c| c == root) {
        steps += 1;
        if steps > joints.len() {
            return Err((
                joint_el(&joints[k], ""),
                Refusal::NotSerial(String::from("the joints form a loop")),
            ));
        }
        root = joints[k].parent.link.as_str();
    }
    for (i, j) in joints.iter().enumerate() {
        let parent = j.parent.link.as_str();
        let expected = if i == 0 { root } else { children[i - 1] };
        if parent == expected {
            continue;
        }
        // A link higher up the chain that already carries a joint: a branch; a link that is no
        // joint's child other than the root: a second root; the child of a joint listed later:
        // the chain is listed out of order.
        let carrier = if parent == root {
            Some(0)
        } else {
            match children.iter().position(|&c| c == parent) {
                Some(k) if k + 1 < i => Some(k + 1),
                Some(_) => None,
                None => {
                    return Err((
                        joint_el(j, "<parent>"),
                        Refusal::NotSerial(format!(
                            "link `{parent}` is a second root (the chain hangs from `{root}`)"
                        )),
                    ));
                }
            }
        };
        return Err(match carrier {
            Some(k) => (
                joint_el(j, "<parent>"),
                Refusal::NotSerial(format!(
                    "link `{parent}` carries both joint `{}` and joint `{}`",
                    joints[k].name, j.name
                )),
            ),
            None => (
                joint_el(j, "<parent>"),
                Refusal::OutOfOrder {
                    expected_parent: expected.to_owned(),
                },
            ),
        });
    }
    if let Some(l) = robot
        .links
        .iter()
        .find(|l| l.name != root && !children.contains(&l.name.as_str()))
    {
        return Err((link_el(&l.name, ""), Refusal::Disconnected));
    }

    // The links' inertials (the root's only for finiteness: it is the fixed world).
    for l in &robot.links {
        let inertial = &l.inertial;
        let i = &inertial.inertia;
        for (sub, values) in [
            ("<inertial><mass value>", &[inertial.mass.value][..]),
            ("<inertial><origin xyz>", &inertial.origin.xyz.0[..]),
            ("<inertial><origin rpy>", &inertial.origin.rpy.0[..]),
            (
                "<inertial><inertia>",
                &[i.ixx, i.ixy, i.ixz, i.iyy, i.iyz, i.izz][..],
            ),
        ] {
            if !finite(values) {
                return Err((link_el(&l.name, sub), Refusal::NonFinite));
            }
        }
        if l.name != root && inertial.mass.value == 0.0 {
            return Err((link_el(&l.name, "<inertial>"), Refusal::MissingInertial));
        }
        for (sub, values, max, unit) in [
            (
                "<inertial><mass value>",
                &[inertial.mass.value][..],
                MAX_URDF_MASS_KG,
                "kg",
            ),
            (
                "<inertial><inertia>",
                &[i.ixx, i.ixy, i.ixz, i.iyy, i.iyz, i.izz][..],
                MAX_URDF_INERTIA_KG_M2,
                "kg·m²",
            ),
            (
                "<inertial><origin xyz>",
                &inertial.origin.xyz.0[..],
                MAX_URDF_LENGTH_M,
                "m",
            ),
        ] {
            if !within(values, max) {
                return Err((link_el(&l.name, sub), Refusal::TooLarge { max, unit }));
            }
        }
    }

    let mut specs: Vec<LinkSpec> = Vec::with_capacity(joints.len());
    for j in joints {
        // Present: checked above.
        let Some(link) = robot.links.iter().find(|l| l.name == j.child.link) else {
            return Err((
                joint_el(j, "<child>"),
                Refusal::UnknownLink(j.child.link.clone()),
            ));
        };
        specs.push(LinkSpec {
            origin_xyz_m: j.origin.xyz.0,
            origin_rpy_rad: j.origin.rpy.0,
            axis: j.axis.xyz.0,
            mass_kg: link.inertial.mass.value,
            com_m: link.inertial.origin.xyz.0,
            inertia_kgm2: inertia_in_link_frame(&link.inertial),
        });
    }
    let chain = Chain::<N>::new(&specs).map_err(|e| {
        let element = chain_error_element(e, joints).unwrap_or_else(robot_el);
        (element, Refusal::Invalid(e))
    })?;
    Ok((chain, joints.iter().map(|j| j.name.clone()).collect()))
}

/// The `<inertial>`'s inertia tensor in its link's frame: R·I·Rᵀ with R the rotation of its
/// `<origin rpy>` (R = R_z(yaw)·R_y(pitch)·R_x(roll), URDF's convention), as ixx, ixy, ixz, iyy,
/// iyz, izz. Exactly the tensor when there is no rotation.
fn inertia_in_link_frame(inertial: &urdf_rs::Inertial) -> [f64; 6] {
    let i = &inertial.inertia;
    let [roll, pitch, yaw] = inertial.origin.rpy.0;
    if roll == 0.0 && pitch == 0.0 && yaw == 0.0 {
        return [i.ixx, i.ixy, i.ixz, i.iyy, i.iyz, i.izz];
    }
    let tensor = Matrix3::new(
        i.ixx, i.ixy, i.ixz, i.ixy, i.iyy, i.iyz, i.ixz, i.iyz, i.izz,
    );
    let r = Rotation3::from_euler_angles(roll, pitch, yaw).into_inner();
    let t = r * tensor * r.transpose();
    // Symmetric up to rounding: take the mean of each off-diagonal pair.
    let sym = |a: usize, b: usize| 0.5 * (t[(a, b)] + t[(b, a)]);
    [
        t[(0, 0)],
        sym(0, 1),
        sym(0, 2),
        t[(1, 1)],
        sym(1, 2),
        t[(2, 2)],
    ]
}

/// The URDF element behind a core refusal of link `link` (joint `link` and its child link).
fn chain_error_element(e: ChainError, joints: &[urdf_rs::Joint]) -> Option<String> {
    let (link, field) = match e {
        ChainError::NonFinite { link, field } => (link, field),
        ChainError::NonPositiveMass { link } => (link, LinkField::Mass),
        ChainError::InertiaNotPositiveDefinite { link } => (link, LinkField::Inertia),
        ChainError::ZeroAxis { link } => (link, LinkField::Axis),
        _ => return None,
    };
    let j = joints.get(link)?;
    let child = j.child.link.as_str();
    Some(match field {
        LinkField::OriginXyz => joint_el(j, "<origin xyz>"),
        LinkField::OriginRpy => joint_el(j, "<origin rpy>"),
        LinkField::Axis => joint_el(j, "<axis xyz>"),
        LinkField::Mass => link_el(child, "<inertial><mass value>"),
        LinkField::CentreOfMass => link_el(child, "<inertial><origin xyz>"),
        LinkField::Inertia => link_el(child, "<inertial><inertia>"),
        _ => joint_el(j, ""),
    })
}

#[cfg(test)]
mod tests {
    //! The model against the Rapier plant built from the same file, in-process.
    //!
    //! Rapier computes in f32 (`sim_host::chain`), the model in f64: the tolerances below are
    //! those of f32 (unit roundoff u = 2⁻²⁴ ≈ 6e-8), not the 1e-9 an f64 plant would allow. The
    //! measured worst differences are printed (`cargo test --release -p hil model --
    //! --nocapture`).

    use std::path::PathBuf;

    use control_core::articulated::nalgebra::{DMatrix, DVector, Vector3};
    use sim_host::chain::{ChainPlant, ChainScene};

    use super::*;

    /// The capacity the tests build with: more than any file here, as a controller would.
    const CAP: usize = 8;
    const G: [f64; 3] = [0.0, -9.81, 0.0];

    fn arm3() -> PathBuf {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../models/arm3.urdf")).to_path_buf()
    }

    /// A URDF in a temporary file of this test process.
    fn urdf_file(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("hil-model-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// A user's two-link arm: a continuous joint then a revolute one about a skew axis, tilted
    /// joint origins, both inertial frames rotated and offset off the link axis, and products
    /// of inertia.
    const USER2: &str = r#"<?xml version="1.0"?>
<robot name="user2">
  <link name="mount"/>
  <link name="l1">
    <inertial>
      <origin xyz="0.1 0.02 -0.03" rpy="0.3 -0.7 1.1"/>
      <mass value="1.5"/>
      <inertia ixx="0.004" ixy="0.0005" ixz="-0.0003" iyy="0.012" iyz="0.0002" izz="0.010"/>
    </inertial>
  </link>
  <link name="l2">
    <inertial>
      <origin xyz="0.12 0 0.01" rpy="1.2 0.4 -0.5"/>
      <mass value="0.8"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.006" iyz="0" izz="0.0055"/>
    </inertial>
  </link>
  <joint name="j1" type="continuous">
    <parent link="mount"/>
    <child link="l1"/>
    <origin xyz="0.05 0.1 0" rpy="0 0.2 0"/>
    <axis xyz="0 0 1"/>
    <limit effort="50" velocity="10"/>
  </joint>
  <joint name="j2" type="revolute">
    <parent link="l1"/>
    <child link="l2"/>
    <origin xyz="0.25 0 0.02" rpy="0.1 0 0.3"/>
    <axis xyz="0 1 1"/>
    <limit lower="-2" upper="2" effort="30" velocity="10"/>
  </joint>
</robot>
"#;

    /// SplitMix64: reproducible configurations without a dependency.
    struct Rng(u64);

    impl Rng {
        fn next_f64(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            (z >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// `count` configurations within the file's joint limits, 0.05 rad inside them (a continuous
    /// joint: anywhere in (−π, π)), the first all zeros.
    fn configurations(path: &Path, count: usize, seed: u64) -> Vec<Vec<f64>> {
        let robot = urdf_rs::read_file(path).unwrap();
        let mut rng = Rng(seed);
        let mut out = vec![vec![0.0; robot.joints.len()]];
        while out.len() < count {
            out.push(
                robot
                    .joints
                    .iter()
                    .map(|j| {
                        let (lo, hi) = match j.joint_type {
                            urdf_rs::JointType::Revolute => (j.limit.lower, j.limit.upper),
                            _ => (-std::f64::consts::PI, std::f64::consts::PI),
                        };
                        let (lo, hi) = (lo + 0.05, hi - 0.05);
                        lo + (hi - lo) * rng.next_f64()
                    })
                    .collect(),
            );
        }
        out
    }

    /// A fresh plant of `path` at rest at `q` (the plant cannot be moved to a configuration
    /// once built: one plant per configuration).
    fn plant_at(path: &Path, q: &[f64], gravity: [f64; 3]) -> ChainPlant {
        plant_at_dt(path, q, gravity, sim_host::scene::DEFAULT_DT_S)
    }

    fn plant_at_dt(path: &Path, q: &[f64], gravity: [f64; 3], dt_s: f64) -> ChainPlant {
        let mut scene = ChainScene::new(path, 1.0, gravity);
        scene.dt_s = dt_s;
        scene.initial_positions_rad = q.to_vec();
        ChainPlant::new(&scene).unwrap()
    }

    /// The plant's joint angles, as f64 (the f32 angles Rapier holds).
    fn plant_q(plant: &ChainPlant) -> [f64; CAP] {
        let mut q = [0.0; CAP];
        for (slot, s) in q.iter_mut().zip(plant.joint_states()) {
            *slot = s.position_rad;
        }
        q
    }

    /// The plant's link index of each joint's child link, in joint order.
    fn child_link_slots(path: &Path, plant: &ChainPlant) -> Vec<usize> {
        let robot = urdf_rs::read_file(path).unwrap();
        let names = plant.link_names();
        robot
            .joints
            .iter()
            .map(|j| names.iter().position(|&n| n == j.child.link).unwrap())
            .collect()
    }

    /// Worst differences between model and plant over `configs`.
    #[derive(Debug, Default)]
    struct Worst {
        /// |m_model / m_plant − 1|.
        mass: f64,
        /// |s_model − s_plant| (unit vectors).
        axis: f64,
        /// |c_model − c_plant|, m.
        com_m: f64,
        /// |m_i / M_ii − 1|.
        diag: f64,
        /// |M_model,ij − M_plant,ij| / √(M_ii M_jj) (|M_ij| ≤ √(M_ii M_jj) for an SPD M).
        whole: f64,
    }

    /// Model and plant of `path` compared at every configuration: masses, world joint axes,
    /// world centres of mass, the composite inertias against Rapier's diagonal, the model's CRBA
    /// against Rapier's whole mass matrix. The model is evaluated at the angles the plant holds
    /// (its f32 rounding of the configuration).
    fn compare(path: &Path, configs: &[Vec<f64>]) -> Worst {
        let (chain, names) = chain_from_urdf::<CAP>(path).unwrap();
        let mut w = Worst::default();
        for q in configs {
            let mut plant = plant_at(path, q, [0.0; 3]);
            assert_eq!(plant.joint_names(), names);
            let n = names.len();
            let slots = child_link_slots(path, &plant);
            let kin = chain.forward_kinematics(&plant_q(&plant)).unwrap();
            let masses = plant.link_masses();
            let coms = plant.link_coms_world();
            let axes = plant.joint_axes_world();
            for i in 0..n {
                let m_plant = masses[slots[i]];
                w.mass = w
                    .mass
                    .max((kin.link_mass(i).unwrap() / m_plant - 1.0).abs());
                let s = kin.joint_axis(i).unwrap() - Vector3::from(axes[i]);
                w.axis = w.axis.max(s.norm());
                let c = kin.link_com(i).unwrap() - Vector3::from(coms[slots[i]]);
                w.com_m = w.com_m.max(c.norm());
            }
            let m_plant = plant.mass_matrix();
            let composite = kin.composite().unwrap();
            let m_model = kin.mass_matrix().unwrap();
            for i in 0..n {
                let mi = composite.axis_inertia()[i];
                w.diag = w.diag.max((mi / m_plant[i][i] - 1.0).abs());
                for j in 0..n {
                    let scale = (m_plant[i][i] * m_plant[j][j]).sqrt();
                    w.whole = w.whole.max((m_model[(i, j)] - m_plant[i][j]).abs() / scale);
                }
            }
        }
        w
    }

    /// Tolerances, all from Rapier's f32:
    /// - a mass is the URDF's f64 rounded to f32 once: ≤ u = 6e-8 relative; 1.2e-7 (2u) allowed;
    /// - a world axis is a unit vector through a few f32 rotation products (each a few u):
    ///   1e-6;
    /// - a world centre of mass: positions up to 0.8 m through three f32 poses, each rounding at
    ///   u·0.8 m ≈ 5e-8 m per operation: 1e-6 m;
    /// - the mass matrix: assembled in f32 from the links' f32 inertias and Jacobians and
    ///   rebuilt from its f32 LU factors (`ChainPlant::mass_matrix`); relative errors of order
    ///   1e-7 to 1e-6 measured: 1e-5, relative to M_ii on the diagonal and to √(M_ii M_jj) off it.
    const MASS_TOL: f64 = 1.2e-7;
    const AXIS_TOL: f64 = 1e-6;
    const COM_TOL_M: f64 = 1e-6;
    const M_TOL: f64 = 1e-5;

    /// The URDF round trip on `models/arm3.urdf`, and the composite inertia and the whole CRBA
    /// against Rapier's mass matrix at 64 random configurations within the joint limits.
    #[test]
    fn arm3_model_and_plant_agree_on_masses_axes_coms_and_mass_matrix() {
        let (chain, names) = chain_from_urdf::<CAP>(&arm3()).unwrap();
        assert_eq!(names, ["shoulder", "elbow", "wrist"]);
        assert_eq!(chain.len(), 3);
        let w = compare(&arm3(), &configurations(&arm3(), 64, 0x00A4_3A11));
        println!("arm3, 64 configurations: {w:?}");
        assert!(w.mass <= MASS_TOL, "{w:?}");
        assert!(w.axis <= AXIS_TOL, "{w:?}");
        assert!(w.com_m <= COM_TOL_M, "{w:?}");
        assert!(w.diag <= M_TOL, "{w:?}");
        assert!(w.whole <= M_TOL, "{w:?}");
    }

    /// The model's gravity torques are the torques that hold the plant still: applied for one
    /// step (the default 5 ms) from rest, the joints stay (nearly) at rest; without them the
    /// plant falls with q̇ = −dt·M⁻¹τ_g, which checks their sign and size at once.
    fn gravity_holds(path: &Path, configs: &[Vec<f64>]) -> (f64, f64) {
        let (chain, _) = chain_from_urdf::<CAP>(path).unwrap();
        let g = Vector3::from(G);
        let inf = |v: &[f64]| v.iter().fold(0.0f64, |a, x| a.max(x.abs()));
        // With a = M⁻¹τ_g from the model (the free fall's joint acceleration at rest, negated):
        // worst |q̇_held|∞ / (dt |a|∞) and worst |q̇_free + dt a|∞ / (dt |a|∞).
        let (mut held, mut fall) = (0.0f64, 0.0f64);
        for q in configs {
            let mut plant = plant_at(path, q, G);
            let n = plant.joint_count();
            let dt = plant.dt_s();
            let kin = chain.forward_kinematics(&plant_q(&plant)).unwrap();
            let tau = kin.gravity_torques(&g).unwrap();
            let tau: Vec<f64> = tau.iter().take(n).copied().collect();
            assert!(plant.check_torques(&tau).is_ok(), "{tau:?}");
            let m = kin.mass_matrix().unwrap();
            let m = DMatrix::from_fn(n, n, |i, j| m[(i, j)]);
            let a = m.lu().solve(&DVector::from_column_slice(&tau)).unwrap();
            let a_inf = inf(a.as_slice());
            assert!(a_inf > 1.0, "{q:?}: gravity pulls the chain: {a}");
            let v_held: Vec<f64> = plant
                .step(&tau)
                .joints
                .iter()
                .map(|j| j.velocity_rad_s)
                .collect();
            held = held.max(inf(&v_held) / (dt * a_inf));

            let mut plant = plant_at_dt(path, q, G, FALL_DT_S);
            let dt = plant.dt_s();
            let v_free: Vec<f64> = plant
                .step(&[])
                .joints
                .iter()
                .map(|j| j.velocity_rad_s)
                .collect();
            let miss: Vec<f64> = v_free.iter().zip(&a).map(|(v, a)| v + dt * a).collect();
            fall = fall.max(inf(&miss) / (dt * a_inf));
        }
        (held, fall)
    }

    /// What one f32 step leaves of an exact holding torque, relative to the velocity the free
    /// fall reaches in the same step: the torques enter as f32 (u relative of up to 11 N·m),
    /// gravity and the bodies' forces are f32 and the joint accelerations come out of an f32 LU
    /// solve, so the residual is of the order of u times the mass matrix's conditioning.
    /// Measured 2.3e-6 (arm3, the same at dt = 0.5, 1, 2 and 5 ms) and 6.9e-7 (user2): 2e-5
    /// allowed. A gravity torque wrong by 2e-5 relative would fail it.
    const HOLD_TOL: f64 = 2e-5;
    /// The free fall is compared with −dt·M⁻¹τ_g, the first step of an exact integrator from
    /// rest. Rapier moves the chain within its step (4 solver substeps, each integrating the
    /// positions), so its velocity after one step differs from that by a relative error second
    /// order in dt, from the change of M⁻¹τ_g over the Δq ∝ dt² the chain falls: measured on
    /// arm3 9.5e-4 at 5 ms, 1.5e-4 at 2 ms, 3.9e-5 at 1 ms, 9.4e-6 at 0.5 ms. Compared at
    /// 0.5 ms, with 5e-5 allowed (the dt² term and the f32 floor of the hold check).
    const FALL_DT_S: f64 = 0.0005;
    const FALL_TOL: f64 = 5e-5;

    #[test]
    fn arm3_gravity_torques_hold_the_plant_still() {
        let (held, fall) = gravity_holds(&arm3(), &configurations(&arm3(), 16, 0x6EA7_17E5));
        println!(
            "arm3 gravity, 16 configurations: |q̇ held| ≤ {held:.3e} and |q̇ free + dt M⁻¹τ_g| ≤ {fall:.3e} of dt |M⁻¹τ_g|"
        );
        assert!(held <= HOLD_TOL, "{held}");
        assert!(fall <= FALL_TOL, "{fall}");
    }

    /// A user's URDF with rotated inertial frames, a continuous joint and a skew axis: both sides
    /// read it the same way (the same checks as for arm3), and reading it without the inertial
    /// rotation would not pass them.
    #[test]
    fn a_user_urdf_with_rotated_inertials_loads_the_same_on_both_sides() {
        let path = urdf_file("user2.urdf", USER2);
        let configs = configurations(&path, 32, 0x05E2_0002);
        let w = compare(&path, &configs);
        println!("user2, 32 configurations: {w:?}");
        assert!(w.mass <= MASS_TOL, "{w:?}");
        assert!(w.axis <= AXIS_TOL, "{w:?}");
        assert!(w.com_m <= COM_TOL_M, "{w:?}");
        assert!(w.diag <= M_TOL, "{w:?}");
        assert!(w.whole <= M_TOL, "{w:?}");
        let (held, fall) = gravity_holds(&path, &configs[..8]);
        println!("user2 gravity, 8 configurations: held {held:.3e}, fall {fall:.3e}");
        assert!(held <= HOLD_TOL, "{held}");
        assert!(fall <= FALL_TOL, "{fall}");

        // The same file with its inertial rotations dropped is a different arm, which the
        // comparison tells apart.
        let unrotated = USER2
            .replacen(r#"rpy="0.3 -0.7 1.1""#, r#"rpy="0 0 0""#, 1)
            .replacen(r#"rpy="1.2 0.4 -0.5""#, r#"rpy="0 0 0""#, 1);
        let (wrong, _) = chain_from_urdf::<CAP>(&urdf_file("user2-flat.urdf", &unrotated)).unwrap();
        let (right, _) = chain_from_urdf::<CAP>(&path).unwrap();
        let mut plant = plant_at(&path, &configs[1], [0.0; 3]);
        let q = plant_q(&plant);
        let m_plant = plant.mass_matrix();
        let m_wrong = wrong.forward_kinematics(&q).unwrap().mass_matrix().unwrap();
        let m_right = right.forward_kinematics(&q).unwrap().mass_matrix().unwrap();
        let off = |m: &control_core::articulated::nalgebra::SMatrix<f64, CAP, CAP>| {
            (0..2)
                .flat_map(|i| (0..2).map(move |j| (i, j)))
                .map(|(i, j)| (m[(i, j)] - m_plant[i][j]).abs() / m_plant[i][i])
                .fold(0.0f64, f64::max)
        };
        println!(
            "user2 at {:?}: M relative error read rotated {:.2e}, unrotated {:.2e}",
            &configs[1],
            off(&m_right),
            off(&m_wrong)
        );
        assert!(off(&m_right) <= M_TOL);
        assert!(off(&m_wrong) > 100.0 * M_TOL);
    }

    /// Every refusal names the file, the element and the reason, as a typed error.
    #[test]
    fn what_the_model_cannot_represent_is_refused_naming_the_element() {
        let cases: Vec<(&str, &str, &str, Refusal)> = vec![
            (
                r#"<joint name="j2" type="revolute">"#,
                r#"<joint name="j2" type="prismatic">"#,
                "joint `j2`",
                Refusal::UnsupportedJoint(String::from("prismatic")),
            ),
            (
                r#"<joint name="j2" type="revolute">"#,
                r#"<joint name="j2" type="fixed">"#,
                "joint `j2`",
                Refusal::FixedJoint,
            ),
            (
                r#"<joint name="j1" type="continuous">"#,
                r#"<joint name="j1" type="floating">"#,
                "joint `j1`",
                Refusal::UnsupportedJoint(String::from("floating")),
            ),
            // A dangling link: in the file, attached to nothing.
            (
                r#"<link name="mount"/>"#,
                r#"<link name="mount"/><link name="spare"/>"#,
                "link `spare`",
                Refusal::Disconnected,
            ),
            // A joint hanging from a link the file does not have.
            (
                r#"<parent link="l1"/>"#,
                r#"<parent link="l9"/>"#,
                "joint `j2` <parent>",
                Refusal::UnknownLink(String::from("l9")),
            ),
            (
                r#"<mass value="0.8"/>"#,
                r#"<mass value="NaN"/>"#,
                "link `l2` <inertial><mass value>",
                Refusal::NonFinite,
            ),
            (
                r#"<origin xyz="0.25 0 0.02" rpy="0.1 0 0.3"/>"#,
                r#"<origin xyz="0.25 inf 0.02" rpy="0.1 0 0.3"/>"#,
                "joint `j2` <origin xyz>",
                Refusal::NonFinite,
            ),
            (
                r#"rpy="1.2 0.4 -0.5""#,
                r#"rpy="1.2 nan -0.5""#,
                "link `l2` <inertial><origin rpy>",
                Refusal::NonFinite,
            ),
            (
                r#"<axis xyz="0 1 1"/>"#,
                r#"<axis xyz="0 0 0"/>"#,
                "joint `j2` <axis xyz>",
                Refusal::Invalid(ChainError::ZeroAxis { link: 1 }),
            ),
            (
                r#"<mass value="0.8"/>"#,
                r#"<mass value="-0.8"/>"#,
                "link `l2` <inertial><mass value>",
                Refusal::Invalid(ChainError::NonPositiveMass { link: 1 }),
            ),
            (
                r#"ixx="0.001" ixy="0""#,
                r#"ixx="0.001" ixy="0.01""#,
                "link `l2` <inertial><inertia>",
                Refusal::Invalid(ChainError::InertiaNotPositiveDefinite { link: 1 }),
            ),
            // No <inertial> at all on a moving link.
            (
                r#"<link name="l2">
    <inertial>
      <origin xyz="0.12 0 0.01" rpy="1.2 0.4 -0.5"/>
      <mass value="0.8"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.006" iyz="0" izz="0.0055"/>
    </inertial>
  </link>"#,
                r#"<link name="l2"/>"#,
                "link `l2` <inertial>",
                Refusal::MissingInertial,
            ),
            // A branch: a second joint from the mount.
            (
                r#"<parent link="l1"/>"#,
                r#"<parent link="mount"/>"#,
                "joint `j2` <parent>",
                Refusal::NotSerial(String::from(
                    "link `mount` carries both joint `j1` and joint `j2`",
                )),
            ),
            (
                r#"<link name="l1">"#,
                r#"<link name="l2">"#,
                "link `l2`",
                Refusal::DuplicateName,
            ),
            // A link hanging from two joints.
            (
                r#"<child link="l2"/>"#,
                r#"<child link="l1"/>"#,
                "link `l1`",
                Refusal::NotSerial(String::from("the child of both joint `j1` and joint `j2`")),
            ),
            // A loop: l1 hangs from l2, which hangs from l1.
            (
                r#"<parent link="mount"/>"#,
                r#"<parent link="l2"/>"#,
                "joint `j2`",
                Refusal::NotSerial(String::from("the joints form a loop")),
            ),
            (
                "<robot",
                "<rowboat",
                "<robot>",
                Refusal::Unreadable(String::new()),
            ),
        ];
        for (i, (from, to, element, reason)) in cases.into_iter().enumerate() {
            assert!(USER2.contains(from), "{from}");
            let path = urdf_file(&format!("bad{i}.urdf"), &USER2.replacen(from, to, 1));
            let e = chain_from_urdf::<CAP>(&path).unwrap_err();
            println!("{e}");
            assert_eq!(e.file, path);
            assert_eq!(e.element, element, "{to}: {e}");
            match (&e.reason, &reason) {
                (Refusal::Unreadable(_), Refusal::Unreadable(_)) => {}
                (got, want) => assert_eq!(got, want, "{to}"),
            }
            let text = e.to_string();
            assert!(text.starts_with(path.to_str().unwrap()), "{text}");
            assert!(text.contains(element), "{text}");
        }

        // Out of order: the same chain listed tip first.
        let (head, rest) = USER2.split_at(USER2.find(r#"  <joint name="j1""#).unwrap());
        let (j1, j2) = rest.split_at(rest.find(r#"  <joint name="j2""#).unwrap());
        let j2 = j2.replacen("</robot>\n", "", 1);
        let swapped = format!("{head}{j2}{j1}</robot>\n");
        let path = urdf_file("swapped.urdf", &swapped);
        let e = chain_from_urdf::<CAP>(&path).unwrap_err();
        println!("{e}");
        assert_eq!(e.element, "joint `j2` <parent>");
        assert_eq!(
            e.reason,
            Refusal::OutOfOrder {
                expected_parent: String::from("mount")
            }
        );

        // A second root: the second joint hangs from a link of its own.
        let two_roots = USER2
            .replacen(
                r#"<link name="mount"/>"#,
                r#"<link name="mount"/><link name="other"/>"#,
                1,
            )
            .replacen(r#"<parent link="l1"/>"#, r#"<parent link="other"/>"#, 1);
        let e = chain_from_urdf::<CAP>(&urdf_file("two-roots.urdf", &two_roots)).unwrap_err();
        println!("{e}");
        assert_eq!(e.element, "joint `j2` <parent>");
        assert_eq!(
            e.reason,
            Refusal::NotSerial(String::from(
                "link `other` is a second root (the chain hangs from `mount`)"
            ))
        );

        // More joints than the capacity, and a file that is not there.
        let path = urdf_file("user2.urdf", USER2);
        let e = chain_from_urdf::<1>(&path).unwrap_err();
        assert_eq!(
            (e.element.as_str(), &e.reason),
            (
                "<robot>",
                &Refusal::TooManyJoints {
                    count: 2,
                    capacity: 1
                }
            )
        );
        let missing = path.with_file_name("no-such.urdf");
        let e = chain_from_urdf::<CAP>(&missing).unwrap_err();
        assert!(matches!(e.reason, Refusal::Unreadable(_)), "{e}");
        assert_eq!(e.file, missing);
    }
}
