//! From urdf-rs's `Robot` (and what [`crate::syntax`] recorded) to a [`RobotModel`]: the link
//! graph checked to be one tree, the base chosen, fixed joints merged, joints numbered
//! depth-first, every value checked. See the crate docs for the rules.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use control_core::tree::{BaseKind, Inertial, JointType, Placement};
use urdf_rs::JointType as Urdf;

use crate::math::{self, M3, V3};
use crate::mesh::{MeshSearch, Resolver};
use crate::syntax::{Facts, JointFacts, Refusal};
use crate::{
    Body, Frame, Geometry, Joint, LoadOptions, MAX_URDF_INERTIA_KG_M2, MAX_URDF_LENGTH_M,
    MAX_URDF_MASS_KG, RobotModel, Shape,
};

fn link_el(name: &str, sub: &str) -> String {
    if sub.is_empty() {
        format!("link {name:?}")
    } else {
        format!("link {name:?} {sub}")
    }
}

fn joint_el(name: &str, sub: &str) -> String {
    if sub.is_empty() {
        format!("joint {name:?}")
    } else {
        format!("joint {name:?} {sub}")
    }
}

/// Names to their indices (of links, or of joints), in file order.
type NameIndex<'a> = HashMap<&'a str, usize>;

/// Each link's and each joint's index by name; a name declared twice is refused (links first).
fn name_indices(robot: &urdf_rs::Robot) -> Result<(NameIndex<'_>, NameIndex<'_>), Refusal> {
    let links = index_names(robot.links.iter().map(|l| l.name.as_str()), link_el, "link")?;
    let joints = index_names(
        robot.joints.iter().map(|j| j.name.as_str()),
        joint_el,
        "joint",
    )?;
    Ok((links, joints))
}

/// `names` to their indices; the first name declared twice is refused as `element(name, "")`.
fn index_names<'a>(
    names: impl ExactSizeIterator<Item = &'a str>,
    element: fn(&str, &str) -> String,
    kind: &str,
) -> Result<NameIndex<'a>, Refusal> {
    let mut ix: NameIndex = HashMap::with_capacity(names.len());
    for (i, name) in names.enumerate() {
        if ix.insert(name, i).is_some() {
            return Err((
                element(name, ""),
                format!("declared twice: {kind} names must be unique"),
            ));
        }
    }
    Ok(ix)
}

/// Joint `j`'s parent and child links by index; a link the file does not have, or a joint
/// from a link to itself, is refused.
fn joint_links(
    j: &urdf_rs::Joint,
    link_ix: &HashMap<&str, usize>,
) -> Result<(usize, usize), Refusal> {
    let find = |end: &str, name: &str| {
        link_ix.get(name).copied().ok_or_else(|| {
            (
                joint_el(&j.name, &format!("<{end} link>")),
                format!("names a link {name:?} the file does not have"),
            )
        })
    };
    let p = find("parent", &j.parent.link)?;
    let c = find("child", &j.child.link)?;
    if p == c {
        return Err((
            joint_el(&j.name, ""),
            format!("joins link {:?} to itself", j.parent.link),
        ));
    }
    Ok((p, c))
}

/// The names of a ball joint's coordinates: joint `name`'s Euler angle about axis `n`.
fn euler_joint_name(name: &str, n: usize) -> String {
    format!("{name}_{}", ["x", "y", "z"].get(n).copied().unwrap_or("?"))
}

/// Rewrites every `spherical` joint (this project's convention, [`crate::humanoid`]'s: per-axis
/// ranges in `<limit lower_xyz upper_xyz>`, a range of [0, 0] locking its axis) as the
/// revolute joints the tree represents it with, in place, keeping `facts` aligned with the
/// joints: a ball joint as three Euler angles about its frame's axes, the one of the smallest
/// range in the middle (as `HumanoidTree` orders them), a two-axis joint as its two free axes;
/// each named `<joint>_<axis>` (`left_hip_x`), joined by massless links `<joint>_<axis>_link`,
/// the first at the joint's origin, each with the joint's range about its axis, its effort,
/// velocity and dynamics. Returns one note per joint rewritten, and the names it made, each with
/// the name a refusal should give instead ([`Expanded::name_in_file`]). A joint the convention
/// refuses, whose values or links are wrong, or whose names would clash with the file's, is
/// refused naming it (names declared twice and unknown links are refused here, before the new
/// joints could hide them).
pub(crate) fn expand_spherical(
    robot: &mut urdf_rs::Robot,
    facts: &mut Facts,
) -> Result<Expanded, Refusal> {
    let mut expanded = Expanded::default();
    if !robot.joints.iter().any(|j| j.joint_type == Urdf::Spherical) {
        return Ok(expanded);
    }
    // The file's names, checked (as `build` checks them) before the new joints could hide a
    // fault, and kept to refuse a clash with the names the rewrite makes.
    let (joint_names, link_names): (HashSet<String>, HashSet<String>) = {
        let (link_ix, joint_ix) = name_indices(robot)?;
        for (k, j) in robot.joints.iter().enumerate() {
            if j.joint_type != Urdf::Spherical {
                continue;
            }
            joint_links(j, &link_ix)?;
            check_joint(j, facts.joints.get(k).copied().unwrap_or_default())?;
        }
        // A mimic on a ball joint, or of one, has no single coordinate to follow; one naming a
        // coordinate the rewrite makes names a joint the file does not have.
        for j in &robot.joints {
            if let Some(m) = &j.mimic {
                if j.joint_type == Urdf::Spherical {
                    return Err((
                        joint_el(&j.name, "<mimic>"),
                        "a spherical joint cannot mimic a joint (it has three coordinates)"
                            .to_owned(),
                    ));
                }
                let Some(&target) = joint_ix.get(m.joint.as_str()) else {
                    return Err((
                        joint_el(&j.name, "<mimic joint>"),
                        format!("names a joint {:?} the file does not have", m.joint),
                    ));
                };
                if robot.joints[target].joint_type == Urdf::Spherical {
                    return Err((
                        joint_el(&j.name, "<mimic joint>"),
                        format!(
                            "names joint {:?}, which is spherical: a joint can mimic only a revolute, continuous or prismatic joint",
                            m.joint
                        ),
                    ));
                }
            }
        }
        let names = |ix: NameIndex<'_>| ix.into_keys().map(str::to_owned).collect();
        (names(joint_ix), names(link_ix))
    };
    let old = std::mem::take(&mut robot.joints);
    let old_facts = std::mem::take(&mut facts.joints);
    for (k, j) in old.into_iter().enumerate() {
        let f = old_facts.get(k).copied().unwrap_or_default();
        if j.joint_type != Urdf::Spherical {
            robot.joints.push(j);
            facts.joints.push(f);
            continue;
        }
        let kind = crate::humanoid::joint_kind(&j, f.per_axis)
            .map_err(|(what, reason)| (format!("joint {:?}{what}", j.name), reason))?;
        let axes: Vec<(usize, [f64; 2])> = match kind {
            crate::humanoid::JointKind::Ball { limits_rad } => {
                crate::humanoid::ball_order(&limits_rad)
                    .iter()
                    .map(|&n| (n, limits_rad[n]))
                    .collect()
            }
            crate::humanoid::JointKind::TwoAxis { axes, limits_rad } => axes
                .iter()
                .zip(limits_rad)
                .filter_map(|(a, l)| a.iter().position(|&x| x == 1.0).map(|n| (n, l)))
                .collect(),
            crate::humanoid::JointKind::Hinge { .. } => {
                return Err((
                    joint_el(&j.name, ""),
                    "a spherical joint read as a hinge (not a case the convention has)".to_owned(),
                ));
            }
        };
        let names: Vec<String> = axes
            .iter()
            .map(|&(n, _)| euler_joint_name(&j.name, n))
            .collect();
        let links = names[..names.len().saturating_sub(1)]
            .iter()
            .map(|n| format!("{n}_link"));
        if let Some(clash) = names
            .iter()
            .filter(|n| joint_names.contains(*n))
            .cloned()
            .chain(links.clone().filter(|l| link_names.contains(l)))
            .next()
        {
            return Err((
                joint_el(&j.name, ""),
                format!(
                    "a spherical joint is loaded as revolute joints named <joint>_<axis> through links <joint>_<axis>_link, but the file already has {clash:?}"
                ),
            ));
        }
        for n in &names {
            expanded.renamed.push((n.clone(), j.name.clone()));
        }
        for l in links {
            expanded.renamed.push((l, j.child.link.clone()));
        }
        for (i, (&(n, [lower, upper]), name)) in axes.iter().zip(&names).enumerate() {
            let last = i + 1 == axes.len();
            let child = if last {
                j.child.link.clone()
            } else {
                format!("{name}_link")
            };
            if !last {
                robot.links.push(urdf_rs::Link {
                    name: child.clone(),
                    inertial: urdf_rs::Inertial::default(),
                    visual: Vec::new(),
                    collision: Vec::new(),
                });
            }
            let mut axis = [0.0; 3];
            axis[n] = 1.0;
            robot.joints.push(urdf_rs::Joint {
                name: name.clone(),
                joint_type: Urdf::Revolute,
                origin: if i == 0 {
                    j.origin.clone()
                } else {
                    urdf_rs::Pose::default()
                },
                parent: urdf_rs::LinkName {
                    link: if i == 0 {
                        j.parent.link.clone()
                    } else {
                        format!("{}_link", names[i - 1])
                    },
                },
                child: urdf_rs::LinkName { link: child },
                axis: urdf_rs::Axis {
                    xyz: urdf_rs::Vec3(axis),
                },
                limit: urdf_rs::JointLimit {
                    lower,
                    upper,
                    effort: j.limit.effort,
                    velocity: j.limit.velocity,
                },
                calibration: None,
                dynamics: j.dynamics.clone(),
                mimic: None,
                safety_controller: None,
            });
            facts.joints.push(JointFacts {
                limit: true,
                effort: true,
                per_axis: [None; 2],
            });
        }
        expanded.notes.push(format!(
            "joint {:?} (spherical, {} free axes): loaded as revolute joints {} (Euler angles, each with its axis's range) through massless links; each takes the joint's effort {} N·m, so together they are not held to it as one norm",
            j.name,
            axes.len(),
            names.join(", "),
            j.limit.effort
        ));
    }
    Ok(expanded)
}

/// What [`expand_spherical`] did: its notes, and each name it made with the file's name for it.
#[derive(Debug, Default)]
pub(crate) struct Expanded {
    /// One note per spherical joint rewritten.
    pub notes: Vec<String>,
    /// (a name the rewrite made, the file's): a coordinate's joint → the spherical joint, a link
    /// between coordinates → the spherical joint's child link.
    pub renamed: Vec<(String, String)>,
}

impl Expanded {
    /// `text` (a refusal's element or reason) with every quoted name the rewrite made replaced
    /// by the file's name for it.
    pub fn name_in_file(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (made, file) in &self.renamed {
            out = out.replace(&format!("{made:?}"), &format!("{file:?}"));
        }
        out
    }
}

/// At most 8 names, quoted, then how many more.
fn names<'a>(list: impl IntoIterator<Item = &'a str>) -> String {
    let all: Vec<&str> = list.into_iter().collect();
    let mut s = all
        .iter()
        .take(8)
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    if all.len() > 8 {
        s.push_str(&format!(", … ({} more)", all.len() - 8));
    }
    s
}

fn placement(p: &urdf_rs::Pose) -> Placement {
    Placement::from_xyz_rpy(p.xyz.0, p.rpy.0)
}

/// `x` is NaN or less than `min`.
fn below(x: f64, min: f64) -> bool {
    x.is_nan() || x < min
}

/// `x` as a message shows it: plainly, or in exponent form when plainly would take more than
/// a few digits (1e300 is "1e300", not 301 digits).
fn num(x: f64) -> String {
    let a = x.abs();
    if a != 0.0 && a.is_finite() && !(1e-4..1e7).contains(&a) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// `x` is NaN or beyond ±`max`.
fn beyond(x: f64, max: f64) -> bool {
    x.is_nan() || x.abs() > max
}

/// Every coordinate of `xyz` finite and within ±[`MAX_URDF_LENGTH_M`].
fn check_xyz(xyz: &[f64; 3], element: impl FnOnce() -> String) -> Result<(), Refusal> {
    match xyz.iter().find(|x| beyond(**x, MAX_URDF_LENGTH_M)) {
        Some(x) => Err((
            element(),
            format!(
                "{} m is beyond the bound of ±{MAX_URDF_LENGTH_M} m",
                num(*x)
            ),
        )),
        None => Ok(()),
    }
}

/// A size (radius, length, box side): finite, ≥ 0, at most [`MAX_URDF_LENGTH_M`].
fn check_size(v: f64, element: impl FnOnce() -> String) -> Result<(), Refusal> {
    if (0.0..=MAX_URDF_LENGTH_M).contains(&v) {
        Ok(())
    } else {
        Err((
            element(),
            format!(
                "{} m: a size must be ≥ 0 and at most {MAX_URDF_LENGTH_M} m",
                num(v)
            ),
        ))
    }
}

/// The values of one link: mass, inertia, the inertial's origin, the shapes' origins and sizes.
fn check_link(l: &urdf_rs::Link) -> Result<(), Refusal> {
    let el = |sub: &str| link_el(&l.name, sub);
    let i = &l.inertial;
    let m = i.mass.value;
    if below(m, 0.0) {
        return Err((
            el("<inertial><mass value>"),
            format!("{m} kg: a mass must be ≥ 0"),
        ));
    }
    if m > MAX_URDF_MASS_KG {
        return Err((
            el("<inertial><mass value>"),
            format!("{} kg is beyond the bound of {MAX_URDF_MASS_KG} kg", num(m)),
        ));
    }
    let t = &i.inertia;
    let entries = [t.ixx, t.ixy, t.ixz, t.iyy, t.iyz, t.izz];
    if let Some(x) = entries.iter().find(|x| beyond(**x, MAX_URDF_INERTIA_KG_M2)) {
        return Err((
            el("<inertial><inertia>"),
            format!(
                "an entry of {} kg·m² is beyond the bound of ±{MAX_URDF_INERTIA_KG_M2} kg·m²",
                num(*x)
            ),
        ));
    }
    let tensor = math::sym(&entries);
    if !math::positive_semidefinite(&tensor) {
        let e = math::eigenvalues(&tensor);
        return Err((
            el("<inertial><inertia>"),
            format!(
                "not a possible inertia tensor: not positive semidefinite (principal moments {:.6e}, {:.6e}, {:.6e} kg·m²)",
                e[0], e[1], e[2]
            ),
        ));
    }
    check_xyz(&i.origin.xyz.0, || el("<inertial><origin xyz>"))?;
    if let Some(a) = i.origin.rpy.0.iter().find(|a| !a.is_finite()) {
        return Err((el("<inertial><origin rpy>"), format!("{a}: not finite")));
    }
    let shapes = l
        .visual
        .iter()
        .map(|v| ("visual", &v.origin, &v.geometry, l.visual.len()))
        .chain(
            l.collision
                .iter()
                .map(|c| ("collision", &c.origin, &c.geometry, l.collision.len())),
        );
    let mut k = [0usize; 2];
    for (tag, origin, geometry, count) in shapes {
        let n = &mut k[usize::from(tag == "collision")];
        let at = shape_el(&l.name, tag, *n, count);
        *n += 1;
        check_xyz(&origin.xyz.0, || format!("{at}<origin xyz>"))?;
        if let Some(a) = origin.rpy.0.iter().find(|a| !a.is_finite()) {
            return Err((format!("{at}<origin rpy>"), format!("{a}: not finite")));
        }
        match geometry {
            urdf_rs::Geometry::Box { size } => {
                for s in size.0 {
                    check_size(s, || format!("{at}<geometry><box size>"))?;
                }
            }
            urdf_rs::Geometry::Cylinder { radius, length } => {
                check_size(*radius, || format!("{at}<geometry><cylinder radius>"))?;
                check_size(*length, || format!("{at}<geometry><cylinder length>"))?;
            }
            urdf_rs::Geometry::Capsule { radius, length } => {
                check_size(*radius, || format!("{at}<geometry><capsule radius>"))?;
                check_size(*length, || format!("{at}<geometry><capsule length>"))?;
            }
            urdf_rs::Geometry::Sphere { radius } => {
                check_size(*radius, || format!("{at}<geometry><sphere radius>"))?;
            }
            urdf_rs::Geometry::Mesh { scale, .. } => {
                if let Some(x) = scale
                    .iter()
                    .flat_map(|s| s.0)
                    .find(|x| !x.is_finite() || *x == 0.0)
                {
                    return Err((
                        format!("{at}<geometry><mesh scale>"),
                        format!("{x}: a scale must be finite and not 0"),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// `link "a" <visual>` or `link "a" <visual #2>` (1-based, when the link has several).
fn shape_el(link: &str, tag: &str, k: usize, count: usize) -> String {
    if count > 1 {
        format!("link {link:?} <{tag} #{}>", k + 1)
    } else {
        format!("link {link:?} <{tag}>")
    }
}

fn is_movable(t: &Urdf) -> bool {
    matches!(t, Urdf::Revolute | Urdf::Continuous | Urdf::Prismatic)
}

fn type_name(t: &Urdf) -> &'static str {
    match t {
        Urdf::Revolute => "revolute",
        Urdf::Continuous => "continuous",
        Urdf::Prismatic => "prismatic",
        Urdf::Fixed => "fixed",
        Urdf::Floating => "floating",
        Urdf::Planar => "planar",
        Urdf::Spherical => "spherical",
    }
}

/// The values of one movable, fixed or spherical joint: origin, axis, limits, dynamics.
fn check_joint(j: &urdf_rs::Joint, facts: JointFacts) -> Result<(), Refusal> {
    let el = |sub: &str| joint_el(&j.name, sub);
    check_xyz(&j.origin.xyz.0, || el("<origin xyz>"))?;
    if let Some(a) = j.origin.rpy.0.iter().find(|a| !a.is_finite()) {
        return Err((el("<origin rpy>"), format!("{a}: not finite")));
    }
    // A spherical joint's ranges are its per-axis ones (checked by `expand_spherical`); its
    // effort, velocity and dynamics are checked here as any moving joint's.
    let spherical = j.joint_type == Urdf::Spherical;
    if !is_movable(&j.joint_type) && !spherical {
        return Ok(());
    }
    let kind = type_name(&j.joint_type);
    let axis = j.axis.xyz.0;
    let norm = axis.iter().map(|a| a * a).sum::<f64>().sqrt();
    if !spherical && (norm.is_nan() || norm <= 1e-12) {
        return Err((
            el("<axis xyz>"),
            format!("{axis:?} has length {norm:e}: a joint axis must not be zero"),
        ));
    }
    let limit = &j.limit;
    if j.joint_type != Urdf::Continuous && !spherical {
        if !facts.limit {
            return Err((
                el(""),
                format!(
                    "a {kind} joint without <limit>: URDF requires <limit lower upper effort velocity> on revolute and prismatic joints (a revolute joint without position limits is `continuous`)"
                ),
            ));
        }
        if limit.lower == 0.0 && limit.upper == 0.0 && limit.effort == 0.0 {
            return Err((
                el("<limit>"),
                format!(
                    "lower = upper = 0 and effort 0: a {kind} joint that can neither move nor be driven (what urdf-rs reads for an absent <limit>); give its real limits, or make it fixed"
                ),
            ));
        }
        if below(limit.upper, limit.lower) {
            return Err((
                el("<limit>"),
                format!("lower {} > upper {}", limit.lower, limit.upper),
            ));
        }
        if j.joint_type == Urdf::Prismatic {
            check_xyz(&[limit.lower, limit.upper, 0.0], || el("<limit>"))?;
        }
    }
    if facts.limit {
        if !facts.effort {
            return Err((
                el("<limit effort>"),
                "missing: URDF requires effort in <limit>".to_owned(),
            ));
        }
        if below(limit.effort, 0.0) {
            return Err((
                el("<limit effort>"),
                format!("{}: must be ≥ 0", limit.effort),
            ));
        }
        if below(limit.velocity, 0.0) {
            return Err((
                el("<limit velocity>"),
                format!("{}: must be ≥ 0", limit.velocity),
            ));
        }
    }
    if let Some(d) = &j.dynamics {
        if below(d.damping, 0.0) {
            return Err((
                el("<dynamics damping>"),
                format!("{}: must be ≥ 0", d.damping),
            ));
        }
        if below(d.friction, 0.0) {
            return Err((
                el("<dynamics friction>"),
                format!("{}: must be ≥ 0", d.friction),
            ));
        }
    }
    Ok(())
}

/// How the base is anchored, from the root link and its joints.
#[derive(Clone, Copy, PartialEq)]
enum Anchor {
    /// The root link is the base.
    Root,
    /// The root link is `world`, and its one joint, fixed, welds the base to it.
    WorldWeld(usize),
    /// The root link is `world`, and its one joint, floating, carries the base.
    WorldFloat(usize),
}

/// How a link is reached in the depth-first walk.
#[derive(Clone, Copy)]
enum Via {
    Base,
    Fixed,
    Movable(usize),
}

/// One link's mass properties in its body's frame: mass, centre of mass, inertia about it.
type Part = (f64, V3, M3);

/// The exact combination of `parts`: masses summed, the centre of mass their weighted mean,
/// inertias moved to it by the parallel-axis theorem. A single massive part is returned as it
/// is, bit for bit.
fn combine(parts: &[Part]) -> Inertial {
    let mass: f64 = parts.iter().map(|p| p.0).sum();
    // Weighted mean relative to the first massive part's centre: exact for one part.
    let com = match parts.iter().find(|p| p.0 > 0.0) {
        Some(first) => {
            let mut s = [0.0; 3];
            for (m, c, _) in parts {
                for k in 0..3 {
                    s[k] += m * (c[k] - first.1[k]);
                }
            }
            [
                first.1[0] + s[0] / mass,
                first.1[1] + s[1] / mass,
                first.1[2] + s[2] / mass,
            ]
        }
        None => [0.0; 3],
    };
    let mut inertia = [[0.0; 3]; 3];
    for (m, c, i) in parts {
        let d = [c[0] - com[0], c[1] - com[1], c[2] - com[2]];
        let pa = math::parallel_axis(*m, &d);
        for r in 0..3 {
            for k in 0..3 {
                inertia[r][k] += i[r][k] + pa[r][k];
            }
        }
    }
    Inertial {
        mass_kg: mass,
        com_m: com,
        inertia_kgm2: math::unsym(&inertia),
    }
}

/// A massless body `b` whose one child joint moves exactly as the joint that moves `b` does
/// (two revolute joints about one line, or two prismatic joints along one direction, with
/// nothing of mass between them): their columns of the mass matrix are equal at every pose, so
/// the matrix is singular everywhere; refused, naming both. (Axes that line up only at some
/// poses, the gimbal lock of three revolute joints at one point, make it singular there only,
/// as for Pinocchio: not refused.)
fn same_motion(b: usize, joints: &[Joint], link: &str) -> Option<Refusal> {
    let into = joints.get(b.checked_sub(1)?)?;
    let mut children = joints.iter().filter(|j| j.parent_body == b);
    let (Some(out), None) = (children.next(), children.next()) else {
        return None;
    };
    if into.kind != out.kind {
        return None;
    }
    // `out`'s axis and origin in `b`'s frame (= `into`'s joint frame, where `into`'s axis lies
    // through the origin).
    let axis = math::mul_v(&out.origin.rotation, &out.axis);
    let along = |v: &V3| math::norm(&math::cross(&into.axis, v)) <= 1e-9;
    let parallel = along(&axis);
    let same_line = match into.kind {
        JointType::Revolute => along(&out.origin.xyz_m),
        JointType::Prismatic => true,
    };
    (parallel && same_line).then(|| {
        (
            link_el(link, "<inertial><mass value>"),
            format!(
                "joints {:?} and {:?} move about one line with only this massless link between them: the same motion twice, a mass matrix singular at every pose; merge them, or give the link a mass",
                into.name, out.name
            ),
        )
    })
}

/// The cycle reached by following parent joints up from `start`: (the joint into the first link
/// met twice, the links in parent-to-child order around the loop).
fn cycle(
    start: usize,
    parent_of: &[Option<usize>],
    parent_link: &[usize],
) -> Option<(usize, Vec<usize>)> {
    // Where each link sits on the path walked so far (linear, however long the loop).
    let mut at: Vec<Option<usize>> = vec![None; parent_of.len()];
    let mut path = vec![start];
    at[start] = Some(0);
    let mut l = start;
    loop {
        let j = parent_of[l]?;
        l = parent_link[j];
        if let Some(first) = at[l] {
            let mut ring: Vec<usize> = path[first..].to_vec();
            ring.reverse();
            ring.push(ring[0]);
            return Some((j, ring));
        }
        at[l] = Some(path.len());
        path.push(l);
    }
}

/// Builds the model (see the crate docs). `source` is absolute.
pub(crate) fn build(
    robot: &urdf_rs::Robot,
    facts: &Facts,
    source: &Path,
    options: &LoadOptions,
    search: &MeshSearch,
) -> Result<RobotModel, Refusal> {
    let links = &robot.links;
    let joints = &robot.joints;
    if links.is_empty() {
        return Err((
            "<robot>".to_owned(),
            "no <link>: a robot has at least one".to_owned(),
        ));
    }
    let (link_ix, joint_ix) = name_indices(robot)?;
    // The graph: one parent joint per link, joints between known links.
    let mut parent_of: Vec<Option<usize>> = vec![None; links.len()];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); links.len()];
    let mut parent_link = Vec::with_capacity(joints.len());
    let mut child_link = Vec::with_capacity(joints.len());
    for (k, j) in joints.iter().enumerate() {
        let (p, c) = joint_links(j, &link_ix)?;
        if let Some(k0) = parent_of[c] {
            return Err((
                link_el(&j.child.link, ""),
                format!(
                    "is the child of two joints, {:?} and {:?}: a closed loop (the model is a tree: one parent joint per link)",
                    joints[k0].name, j.name
                ),
            ));
        }
        parent_of[c] = Some(k);
        children[p].push(k);
        parent_link.push(p);
        child_link.push(c);
    }
    let loop_error = |start: usize| -> Refusal {
        match cycle(start, &parent_of, &parent_link) {
            Some((j, ring)) => (
                joint_el(&joints[j].name, ""),
                format!(
                    "closes a loop of links {}: the model is a tree",
                    if ring.len() <= 9 {
                        ring.iter()
                            .map(|&l| format!("{:?}", links[l].name))
                            .collect::<Vec<_>>()
                            .join(" → ")
                    } else {
                        format!(
                            "{} → … ({} links)",
                            ring[..8]
                                .iter()
                                .map(|&l| format!("{:?}", links[l].name))
                                .collect::<Vec<_>>()
                                .join(" → "),
                            ring.len() - 1
                        )
                    }
                ),
            ),
            None => (
                link_el(&links[start].name, ""),
                "is not connected to the root link".to_owned(),
            ),
        }
    };
    let roots: Vec<usize> = (0..links.len())
        .filter(|&l| parent_of[l].is_none())
        .collect();
    let root = match roots.as_slice() {
        [] => return Err(loop_error(0)),
        [r] => *r,
        _ => {
            return Err((
                "<robot>".to_owned(),
                format!(
                    "{} root links ({}): a tree has exactly one (every other link is the child of a joint)",
                    roots.len(),
                    names(roots.iter().map(|&l| links[l].name.as_str()))
                ),
            ));
        }
    };
    // Every link reached from the root (one parent per link: the others are on a loop).
    let mut reached = vec![false; links.len()];
    let mut stack = vec![root];
    while let Some(l) = stack.pop() {
        reached[l] = true;
        stack.extend(children[l].iter().map(|&k| child_link[k]));
    }
    if let Some(l) = reached.iter().position(|r| !r) {
        return Err(loop_error(l));
    }

    // The base.
    let world_root = links[root].name == "world";
    let anchor = match children[root].as_slice() {
        [k] if world_root && joints[*k].joint_type == Urdf::Fixed => Anchor::WorldWeld(*k),
        [k] if world_root && joints[*k].joint_type == Urdf::Floating => Anchor::WorldFloat(*k),
        _ => Anchor::Root,
    };
    let mut notes = Vec::new();
    if facts.textures_without_file > 0 {
        notes.push(format!(
            "{} <material><texture> without a filename left out (no texture to show; textures are not used)",
            facts.textures_without_file
        ));
    }

    // Joint types, values, mimics, in file order.
    for (k, j) in joints.iter().enumerate() {
        match j.joint_type {
            Urdf::Floating if anchor != Anchor::WorldFloat(k) => {
                return Err((
                    joint_el(&j.name, ""),
                    "a floating joint: accepted only as the one joint of a root link named \"world\" (a floating base); otherwise make the root link the base and ask for a floating base (LoadOptions::floating_base)".to_owned(),
                ));
            }
            Urdf::Planar => {
                return Err((
                    joint_el(&j.name, ""),
                    "a planar joint: the tree model has revolute, continuous and prismatic joints (fixed joints merged), no planar joints".to_owned(),
                ));
            }
            Urdf::Spherical => {
                return Err((
                    joint_el(&j.name, ""),
                    "a spherical joint left after they were rewritten as revolute joints (expand_spherical)".to_owned(),
                ));
            }
            _ => {}
        }
        check_joint(j, facts.joints.get(k).copied().unwrap_or_default())?;
        if let Some(m) = &j.mimic {
            if !is_movable(&j.joint_type) {
                notes.push(format!(
                    "joint {:?} is {}: its <mimic joint={:?}> is ignored",
                    j.name,
                    type_name(&j.joint_type),
                    m.joint
                ));
                continue;
            }
            if !options.mimic_as_independent {
                return Err((
                    joint_el(&j.name, "<mimic>"),
                    format!(
                        "mimics joint {:?}: the tree model has no coupled joints (LoadOptions::mimic_as_independent loads it as an independent joint, as Pinocchio does)",
                        m.joint
                    ),
                ));
            }
            match joint_ix.get(m.joint.as_str()) {
                None => {
                    return Err((
                        joint_el(&j.name, "<mimic joint>"),
                        format!("names a joint {:?} the file does not have", m.joint),
                    ));
                }
                Some(&l) if l == k => {
                    return Err((
                        joint_el(&j.name, "<mimic joint>"),
                        "names the joint itself".to_owned(),
                    ));
                }
                Some(&l) if !is_movable(&joints[l].joint_type) => {
                    return Err((
                        joint_el(&j.name, "<mimic joint>"),
                        format!(
                            "names joint {:?}, which is {}: a joint can mimic only a revolute, continuous or prismatic joint",
                            m.joint,
                            type_name(&joints[l].joint_type)
                        ),
                    ));
                }
                Some(_) => {}
            }
            notes.push(format!(
                "joint {:?} mimics {:?} (multiplier {}, offset {}): loaded as an independent joint",
                j.name,
                m.joint,
                m.multiplier.unwrap_or(1.0),
                m.offset.unwrap_or(0.0)
            ));
        }
    }
    for l in links {
        check_link(l)?;
    }

    let (base_link, base, base_placement) = match anchor {
        Anchor::Root => {
            if options.floating_base && world_root {
                return Err((
                    link_el("world", ""),
                    "the root link is \"world\", which cannot float, but a floating base was asked for (LoadOptions::floating_base)".to_owned(),
                ));
            }
            let kind = if options.floating_base {
                BaseKind::Floating
            } else {
                BaseKind::Fixed
            };
            (root, kind, Placement::IDENTITY)
        }
        Anchor::WorldWeld(k) => {
            if options.floating_base {
                return Err((
                    joint_el(&joints[k].name, ""),
                    "welds the robot to \"world\" (a fixed joint), but a floating base was asked for (LoadOptions::floating_base)".to_owned(),
                ));
            }
            (child_link[k], BaseKind::Fixed, placement(&joints[k].origin))
        }
        Anchor::WorldFloat(k) => {
            let w = &links[root];
            if w.inertial.mass.value != 0.0 || !w.visual.is_empty() || !w.collision.is_empty() {
                return Err((
                    link_el("world", ""),
                    "has a mass or shapes, but only a floating joint holds the robot to it: they belong to nothing".to_owned(),
                ));
            }
            if !math::is_identity(&placement(&joints[k].origin)) {
                notes.push(format!(
                    "joint {:?} (floating): its <origin> is ignored; the scene places the floating base",
                    joints[k].name
                ));
            }
            (child_link[k], BaseKind::Floating, Placement::IDENTITY)
        }
    };

    // The depth-first walk: bodies, joints, frames, shapes.
    let mut resolver = Resolver::new(source, search);
    let mut bodies: Vec<Body> = Vec::new();
    let mut parts: Vec<Vec<Part>> = Vec::new();
    let mut merged: Vec<Vec<usize>> = Vec::new();
    let mut frames: Vec<Option<Frame>> = vec![None; links.len()];
    let mut out_joints: Vec<Joint> = Vec::new();
    let new_body = |bodies: &mut Vec<Body>,
                    parts: &mut Vec<Vec<Part>>,
                    merged: &mut Vec<Vec<usize>>,
                    l: usize| {
        bodies.push(Body {
            link: links[l].name.clone(),
            inertial: Inertial::ZERO,
            collisions: Vec::new(),
            visuals: Vec::new(),
        });
        parts.push(Vec::new());
        merged.push(Vec::new());
        bodies.len() - 1
    };
    new_body(&mut bodies, &mut parts, &mut merged, base_link);
    let mut add_link = |l: usize,
                        body: usize,
                        place: Placement,
                        bodies: &mut Vec<Body>,
                        parts: &mut Vec<Vec<Part>>,
                        merged: &mut Vec<Vec<usize>>,
                        notes: &mut Vec<String>|
     -> Result<(), Refusal> {
        let link = &links[l];
        frames[l] = Some(Frame {
            name: link.name.clone(),
            body,
            placement: place,
        });
        merged[body].push(l);
        let i = &link.inertial;
        let at = math::compose(&place, &placement(&i.origin));
        let t = &i.inertia;
        let tensor = math::sym(&[t.ixx, t.ixy, t.ixz, t.iyy, t.iyz, t.izz]);
        parts[body].push((
            i.mass.value,
            at.xyz_m,
            math::rotate_inertia(&at.rotation, &tensor),
        ));
        let shapes = link
            .visual
            .iter()
            .map(|v| (false, &v.origin, &v.geometry, link.visual.len()))
            .chain(
                link.collision
                    .iter()
                    .map(|c| (true, &c.origin, &c.geometry, link.collision.len())),
            );
        let mut k = [0usize; 2];
        for (collision, origin, geometry, count) in shapes {
            let tag = if collision { "collision" } else { "visual" };
            let n = &mut k[usize::from(collision)];
            let at = shape_el(&link.name, tag, *n, count);
            *n += 1;
            let geometry = match geometry {
                urdf_rs::Geometry::Box { size } => Geometry::Box { size: size.0 },
                urdf_rs::Geometry::Cylinder { radius, length } => Geometry::Cylinder {
                    radius: *radius,
                    length: *length,
                },
                urdf_rs::Geometry::Capsule { radius, length } => Geometry::Capsule {
                    radius: *radius,
                    length: *length,
                },
                urdf_rs::Geometry::Sphere { radius } => Geometry::Sphere { radius: *radius },
                urdf_rs::Geometry::Mesh { filename, scale } => match resolver.resolve(filename) {
                    Ok(path) => Geometry::Mesh {
                        path,
                        filename: filename.clone(),
                        scale: scale.map_or([1.0; 3], |s| s.0),
                    },
                    Err(why) if options.skip_missing_meshes => {
                        notes.push(format!(
                                "{at}: mesh {filename:?} dropped (LoadOptions::skip_missing_meshes): {why}"
                            ));
                        continue;
                    }
                    Err(why) => {
                        return Err((
                            format!("{at}<geometry><mesh filename>"),
                            format!("{filename:?}: {why}"),
                        ));
                    }
                },
            };
            let shape = Shape {
                link: link.name.clone(),
                placement: math::compose(&place, &placement(origin)),
                geometry,
            };
            if collision {
                bodies[body].collisions.push(shape);
            } else {
                bodies[body].visuals.push(shape);
            }
        }
        Ok(())
    };
    if let Anchor::WorldWeld(_) = anchor {
        // The world link is welded to the base: a frame (and whatever it carries) on body 0.
        add_link(
            root,
            0,
            math::inverse(&base_placement),
            &mut bodies,
            &mut parts,
            &mut merged,
            &mut notes,
        )?;
    }
    let mut stack: Vec<(usize, Via, usize, Placement)> =
        vec![(base_link, Via::Base, 0, Placement::IDENTITY)];
    while let Some((l, via, parent_body, at)) = stack.pop() {
        let (body, place) = match via {
            Via::Base => (0, Placement::IDENTITY),
            Via::Fixed => (parent_body, at),
            Via::Movable(k) => {
                let j = &joints[k];
                let f = facts.joints.get(k).copied().unwrap_or_default();
                let axis = j.axis.xyz.0;
                let norm = axis.iter().map(|a| a * a).sum::<f64>().sqrt();
                let continuous = j.joint_type == Urdf::Continuous;
                out_joints.push(Joint {
                    name: j.name.clone(),
                    kind: if j.joint_type == Urdf::Prismatic {
                        JointType::Prismatic
                    } else {
                        JointType::Revolute
                    },
                    continuous,
                    parent_body,
                    origin: at,
                    axis: [axis[0] / norm, axis[1] / norm, axis[2] / norm],
                    limits: (!continuous).then_some((j.limit.lower, j.limit.upper)),
                    effort: f.limit.then_some(j.limit.effort),
                    velocity: f.limit.then_some(j.limit.velocity),
                    damping: j.dynamics.as_ref().map_or(0.0, |d| d.damping),
                    friction: j.dynamics.as_ref().map_or(0.0, |d| d.friction),
                    mimic: j.mimic.as_ref().map(|m| {
                        (
                            m.joint.clone(),
                            m.multiplier.unwrap_or(1.0),
                            m.offset.unwrap_or(0.0),
                        )
                    }),
                });
                (
                    new_body(&mut bodies, &mut parts, &mut merged, l),
                    Placement::IDENTITY,
                )
            }
        };
        add_link(
            l,
            body,
            place,
            &mut bodies,
            &mut parts,
            &mut merged,
            &mut notes,
        )?;
        for &k in children[l].iter().rev() {
            let j = &joints[k];
            let origin = math::compose(&place, &placement(&j.origin));
            let via = if j.joint_type == Urdf::Fixed {
                Via::Fixed
            } else {
                Via::Movable(k)
            };
            stack.push((child_link[k], via, body, origin));
        }
    }

    // The merged mass properties; every moving body needs a mass and a definite inertia, or
    // is a massless frame (no mass, centre or inertia at all) carrying a body that has mass:
    // the chained revolute joints of a multi-axis joint, with links that have no <inertial>
    // between them. A massless frame whose subtree has no mass would make the mass matrix
    // singular.
    for (body, part) in bodies.iter_mut().zip(&parts) {
        body.inertial = combine(part);
    }
    let carried = crate::carried_masses(&bodies, &out_joints);
    let mut massless = Vec::new();
    for (b, body) in bodies.iter().enumerate() {
        let moving = b > 0 || base == BaseKind::Floating;
        if !moving {
            continue;
        }
        let what = if b == 0 {
            "the floating base".to_owned()
        } else {
            format!("the body joint {:?} moves", out_joints[b - 1].name)
        };
        let with = if merged[b].len() > 1 {
            format!(
                " (link {:?} and the links fixed to it: {})",
                body.link,
                names(merged[b][1..].iter().map(|&l| links[l].name.as_str()))
            )
        } else {
            String::new()
        };
        if b > 0 && body.is_massless() && carried[b] > 0.0 {
            if let Some(refusal) = same_motion(b, &out_joints, &body.link) {
                return Err(refusal);
            }
            massless.push(body.link.as_str());
            continue;
        }
        if body.inertial.mass_kg.is_nan() || body.inertial.mass_kg <= 0.0 {
            let carries = if b > 0 && body.inertial.mass_kg == 0.0 && carried[b] <= 0.0 {
                ", and nothing it carries has any"
            } else {
                ""
            };
            return Err((
                link_el(&body.link, "<inertial><mass value>"),
                format!(
                    "{what} has a total mass of {} kg{with}{carries}: a moving body needs a mass > 0, or none at all (no inertia either) while it carries one that has mass",
                    body.inertial.mass_kg
                ),
            ));
        }
        let tensor = math::sym(&body.inertial.inertia_kgm2);
        if !math::positive_definite(&tensor) {
            let e = math::eigenvalues(&tensor);
            return Err((
                link_el(&body.link, "<inertial><inertia>"),
                format!(
                    "the inertia of {what}{with} is not positive definite (principal moments {:.6e}, {:.6e}, {:.6e} kg·m²): a moving body needs one",
                    e[0], e[1], e[2]
                ),
            ));
        }
    }
    if !massless.is_empty() {
        notes.push(format!(
            "massless moving bodies (no mass, centre or inertia; each carries a body that has mass): {}",
            names(massless.iter().copied())
        ));
    }

    Ok(RobotModel {
        name: robot.name.clone(),
        source: source.to_path_buf(),
        base,
        base_placement,
        bodies,
        joints: out_joints,
        frames: frames.into_iter().flatten().collect(),
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(m: f64, c: V3, i: [f64; 6]) -> Part {
        (m, c, math::sym(&i))
    }

    #[test]
    fn one_part_is_kept_bit_for_bit_and_two_combine_exactly() {
        let one = combine(&[part(0.3, [0.1, 0.2, 0.7], [1.0, 0.1, 0.2, 2.0, 0.3, 3.0])]);
        assert_eq!(one.mass_kg, 0.3);
        assert_eq!(one.com_m, [0.1, 0.2, 0.7]);
        assert_eq!(one.inertia_kgm2, [1.0, 0.1, 0.2, 2.0, 0.3, 3.0]);
        // 1 kg at x = 0 and 3 kg at x = 2: com at 1.5; about it the masses sit at −1.5 and +0.5:
        // iyy = izz = 1·1.5² + 3·0.5² = 3 (plus the own 0.5 each).
        let two = combine(&[
            part(1.0, [0.0; 3], [0.5, 0.0, 0.0, 0.5, 0.0, 0.5]),
            part(3.0, [2.0, 0.0, 0.0], [0.0; 6]),
        ]);
        assert_eq!(two.mass_kg, 4.0);
        assert_eq!(two.com_m, [1.5, 0.0, 0.0]);
        assert_eq!(two.inertia_kgm2, [0.5, 0.0, 0.0, 3.5, 0.0, 3.5]);
        // Massless parts add their (rotated) inertia and nothing else.
        let none = combine(&[part(0.0, [1.0; 3], [0.0; 6])]);
        assert_eq!(none, Inertial::ZERO);
    }

    #[test]
    fn cycles_are_found_in_parent_to_child_order() {
        // Links 0 → 1 → 2 → 0 through joints 0, 1, 2 (joint k: parent k, child k + 1 mod 3),
        // and link 3 hanging off link 2 through joint 3.
        let parent_link = [0, 1, 2, 2];
        let parent_of = [Some(2), Some(0), Some(1), Some(3)];
        let (j, ring) = cycle(3, &parent_of, &parent_link).unwrap();
        assert_eq!(ring, vec![0, 1, 2, 0]);
        // The joint into the link met twice: link 2 → link 0.
        assert_eq!(j, 2);
    }
}
