//! The 15-body humanoid ([`HumanoidModel`]) as a floating-base [`control_core::tree::Tree`],
//! whole or with body parts left out: the map a controller predicts with (the balance QP, the
//! walker's contact stabiliser), and the soles ([`soles`]) its feet and toes stand on.
//!
//! The root (pelvis) is the base, its frame at its centre of mass; each body's frame sits at
//! its joint, axes the link's. A ball joint is three revolute joints (Euler angles, two
//! massless frames between), its middle axis the one with the smallest range (the farthest
//! from gimbal lock in use: the hips' and shoulders' middle axes are their twist); a two-axis
//! joint (the ankles) is its two free axes with the locked one between them, whose angle the
//! plant keeps near zero; a hinge is one joint. Each is one [`JointGroup`] with the joint's
//! effort. Its [`HumanoidTree::map`] maps the plant's body motions to the tree's coordinates
//! (relative rotations to Euler angles, relative angular velocities to their rates).
//!
//! Allocates while building ([`HumanoidTree::new`], [`HumanoidTree::contact_bodies`], [`soles`])
//! only: the map's `state` and `pose_coordinates`, what a tick calls, neither allocate nor
//! panic.

use super::{Geometry, HumanoidModel, JointKind};
use control_core::articulated::nalgebra::{Isometry3, Point3, Vector3};
use control_core::balance::humanoid::{BodyMap, Coordinates, MappedJoint};
use control_core::balance::{ContactBody, JointGroup, MAX_POINTS};
use control_core::frames::MAX_BODIES;
use control_core::tree::{BaseKind, Inertial, JointSpec, JointType, Placement, Tree, TreeSpec};

/// The humanoid (or the part of it kept) as a floating-base tree.
#[derive(Debug, Clone)]
pub struct HumanoidTree {
    /// The tree's joints (a [`control_core::tree::TreeSpec`]'s).
    pub joints: Vec<JointSpec>,
    /// The base body (the root's inertia, its frame at its centre of mass).
    pub base: Inertial,
    /// One group per kept plant joint, in plant joint order: its tree joints and its effort.
    pub groups: Vec<JointGroup>,
    /// The plant's bodies → the tree's coordinates (what a tick maps with).
    pub map: BodyMap<MAX_BODIES>,
    /// The root (plant body).
    pub root: usize,
    /// Each plant body's centre of mass in its tree frame (bodies left out: zero).
    pub com_in_frame: Vec<[f64; 3]>,
    /// Plant body → tree body (`usize::MAX`: left out).
    pub tree_body: Vec<usize>,
    /// Plant joint → its group (`None`: left out).
    pub joint_of: Vec<Option<usize>>,
}

impl HumanoidTree {
    /// The tree of `model`'s bodies that `keep` keeps (a body left out takes its subtree
    /// with it; the root is always kept).
    pub fn new(model: &HumanoidModel, keep: &dyn Fn(usize) -> bool) -> Result<Self, String> {
        model.check_indices()?;
        let root = (0..model.bodies.len())
            .find(|b| model.joints.iter().all(|j| j.child != *b))
            .ok_or("the model has no root")?;
        // Each body's centre of mass in its tree frame (the root's frame is at its centre).
        let mut com_in_frame = vec![[0.0; 3]; model.bodies.len()];
        let mut tree_body = vec![usize::MAX; model.bodies.len()];
        tree_body[root] = 0;
        let inertial = |b: usize, com: [f64; 3]| {
            let body = &model.bodies[b];
            let [ix, iy, iz] = body.inertia_kg_m2;
            Inertial {
                mass_kg: body.mass_kg,
                com_m: com,
                inertia_kgm2: [ix, 0.0, 0.0, iy, 0.0, iz],
            }
        };
        let mut joints = Vec::new();
        let mut groups = Vec::new();
        let mut mapped = Vec::new();
        let mut joint_of = Vec::new();
        let mut removed = vec![false; model.bodies.len()];
        for j in &model.joints {
            if removed[j.parent] || !keep(j.child) {
                removed[j.child] = true;
                joint_of.push(None);
                continue;
            }
            let parent_body = *tree_body
                .get(j.parent)
                .filter(|b| **b != usize::MAX)
                .ok_or_else(|| format!("joint {}: its parent comes after it", j.name))?;
            joint_of.push(Some(mapped.len()));
            let pc = com_in_frame[j.parent];
            let a = j.anchor_in_parent_m;
            let origin = [a[0] + pc[0], a[1] + pc[1], a[2] + pc[2]];
            let child_com = j.anchor_in_child_m.map(|x| -x);
            com_in_frame[j.child] = child_com;
            let first = joints.len();
            let chain = |axes: &[usize], joints: &mut Vec<JointSpec>| {
                for (k, &axis) in axes.iter().enumerate() {
                    let last = k + 1 == axes.len();
                    joints.push(JointSpec {
                        parent_body: if k == 0 { parent_body } else { joints.len() },
                        kind: JointType::Revolute,
                        origin: Placement::from_xyz_rpy(
                            if k == 0 { origin } else { [0.0; 3] },
                            [0.0; 3],
                        ),
                        axis: unit(axis),
                        body: if last {
                            inertial(j.child, child_com)
                        } else {
                            Inertial::ZERO
                        },
                    });
                }
            };
            let coordinates = match j.kind {
                JointKind::Ball { limits_rad } => {
                    let order = ball_order(&limits_rad);
                    chain(&order, &mut joints);
                    Coordinates::Ball { order }
                }
                JointKind::TwoAxis { axes, .. } => {
                    let (Some(a0), Some(a1)) = (coordinate_axis(axes[0]), coordinate_axis(axes[1]))
                    else {
                        return Err(format!(
                            "joint {}: two-axis joint off the coordinate axes",
                            j.name
                        ));
                    };
                    let locked = 3 - a0 - a1;
                    chain(&[a0, a1], &mut joints);
                    Coordinates::TwoAxis {
                        order: [a0, locked, a1],
                    }
                }
                JointKind::Hinge { axis, .. } => {
                    joints.push(JointSpec {
                        parent_body,
                        kind: JointType::Revolute,
                        origin: Placement::from_xyz_rpy(origin, [0.0; 3]),
                        axis,
                        body: inertial(j.child, child_com),
                    });
                    Coordinates::Hinge { axis: v3(axis) }
                }
            };
            tree_body[j.child] = joints.len();
            groups.push(JointGroup {
                first,
                count: joints.len() - first,
                effort: j.effort_nm * (1.0 - 1e-9),
            });
            mapped.push(MappedJoint {
                parent: j.parent,
                child: j.child,
                first,
                count: joints.len() - first,
                coordinates,
            });
        }
        // The C library's atan2, as this map has always used (libm's can differ in the last
        // bit, which a balance run amplifies).
        let map = BodyMap::with_atan2(root, &mapped, f64::atan2).ok_or_else(|| {
            format!(
                "{} joints: the balance map holds at most {MAX_BODIES}",
                mapped.len()
            )
        })?;
        Ok(Self {
            base: inertial(root, [0.0; 3]),
            joints,
            groups,
            map,
            root,
            com_in_frame,
            tree_body,
            joint_of,
        })
    }

    /// The tree to build ([`Tree::new`]): a floating base ([`Self::base`]) and [`Self::joints`].
    pub fn spec(&self) -> TreeSpec<'_> {
        TreeSpec {
            base: BaseKind::Floating,
            base_body: self.base,
            joints: &self.joints,
        }
    }

    /// The contact bodies of the balance QP ([`control_core::balance::Balance::new`]): each of
    /// `model`'s soles ([`soles`]: a foot's four bottom corners, the toes' two front ones), its
    /// corners in its tree body's frame. Errs when a sole cannot be stood on or its body was
    /// left out of this tree.
    pub fn contact_bodies(&self, model: &HumanoidModel) -> Result<Vec<ContactBody>, String> {
        let mut contacts = Vec::new();
        for sole in soles(model)? {
            let (Some(&from), Some(&body)) = (
                self.com_in_frame.get(sole.body),
                self.tree_body.get(sole.body).filter(|b| **b != usize::MAX),
            ) else {
                return Err(format!("body {}: a sole left out of the tree", sole.body));
            };
            let mut points = [[0.0; 3]; MAX_POINTS];
            for (p, c) in points.iter_mut().zip(sole.corners_from(from)) {
                *p = c;
            }
            contacts.push(ContactBody {
                body,
                points,
                count: sole.corners.len(),
            });
        }
        Ok(contacts)
    }

    /// The zero pose's centre of mass above its lowest contact point along `up` (a unit
    /// vector), m: the height the balance QP holds it at ([`control_core::balance::BalanceInput`]'s
    /// `com_height_m`) standing as built.
    pub fn standing_height<const NV: usize>(
        tree: &Tree<NV>,
        contacts: &[ContactBody],
        up: &Vector3<f64>,
    ) -> Result<f64, String> {
        if contacts.iter().all(|c| c.count == 0) {
            return Err("no contact point to stand on".to_owned());
        }
        let kin = tree
            .kinematics(&Isometry3::identity(), &[0.0; NV])
            .map_err(|e| e.to_string())?;
        let (_, com) = kin.center_of_mass().map_err(|e| e.to_string())?;
        let mut lowest = f64::INFINITY;
        for c in contacts {
            let pose = kin
                .body_pose(c.body)
                .ok_or("a contact body past the tree")?;
            for p in c.points.iter().take(c.count) {
                lowest = lowest.min(up.dot(&(pose * Point3::new(p[0], p[1], p[2])).coords));
            }
        }
        Ok(up.dot(&com) - lowest)
    }
}

fn v3(a: [f64; 3]) -> Vector3<f64> {
    Vector3::new(a[0], a[1], a[2])
}

fn unit(n: usize) -> [f64; 3] {
    let mut e = [0.0; 3];
    if let Some(x) = e.get_mut(n) {
        *x = 1.0;
    }
    e
}

fn coordinate_axis(axis: [f64; 3]) -> Option<usize> {
    (0..3).find(|&n| unit(n) == axis)
}

/// The Euler order of a ball joint: the middle axis the one with the smallest range (ties: the
/// later axis), the other two in x, y, z order.
pub(crate) fn ball_order(limits: &[[f64; 2]; 3]) -> [usize; 3] {
    let reach = |n: usize| limits[n][0].abs().max(limits[n][1].abs());
    let mut middle = 0;
    for n in 1..3 {
        if reach(n) <= reach(middle) {
            middle = n;
        }
    }
    let mut rest = (0..3).filter(|&n| n != middle);
    let (a, c) = (rest.next().unwrap_or(0), rest.next().unwrap_or(2));
    [a, middle, c]
}

/// The corners a contact body stands on.
#[derive(Debug, Clone, PartialEq)]
pub struct Sole {
    /// The plant body (feet, then toes: `ground_contact_bodies` order).
    pub body: usize,
    /// The sole box's centre from the body's centre of mass, body axes, m.
    pub center: [f64; 3],
    /// Its corners from the box's centre, body axes, m: a foot's four bottom corners, the
    /// toes' two front ones.
    pub corners: Vec<[f64; 3]>,
}

impl Sole {
    /// The corners from the body's centre of mass plus `from` (body axes), m.
    pub fn corners_from(&self, from: [f64; 3]) -> impl Iterator<Item = [f64; 3]> + '_ {
        let c = self.center;
        self.corners.iter().map(move |o| {
            [
                from[0] + c[0] + o[0],
                from[1] + c[1] + o[1],
                from[2] + c[2] + o[2],
            ]
        })
    }
}

/// The soles of `model`'s ground contact bodies (left foot, right foot, left toes, right toes).
pub fn soles(model: &HumanoidModel) -> Result<Vec<Sole>, String> {
    model.check_indices()?;
    let mut soles = Vec::new();
    for (k, &b) in model.ground_contact_bodies.iter().enumerate() {
        let toes = k >= 2;
        let body = &model.bodies[b];
        let Some((h, shape)) = body.shapes.iter().find_map(|s| match s.geometry {
            Geometry::Box { half_extents_m } => Some((half_extents_m, s)),
            _ => None,
        }) else {
            return Err(format!("link {}: no box to stand on", body.name));
        };
        if shape.orientation != [1.0, 0.0, 0.0, 0.0] {
            return Err(format!("link {}: its sole box is rotated", body.name));
        }
        let mut corners = Vec::new();
        for sx in [-1.0, 1.0] {
            if toes && sx < 0.0 {
                continue;
            }
            for sz in [-1.0, 1.0] {
                corners.push([sx * h[0], -h[1], sz * h[2]]);
            }
        }
        soles.push(Sole {
            body: b,
            center: shape.center_m,
            corners,
        });
    }
    Ok(soles)
}
