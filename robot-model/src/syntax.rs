//! The strict reading of the elements urdf-rs reads loosely, before urdf-rs sees the text.
//!
//! urdf-rs 0.9 parses the text with RustyXML, re-serializes the `<link>`, `<joint>` and
//! `<material>` children of `<robot>` and deserializes them with serde. On the way it:
//! - reads a vector attribute by dropping every token that is not a number (`xyz="1 foo 0 0"`
//!   reads as (1, 0, 0));
//! - reads `nan`, `inf` and `1e400` as numbers;
//! - fills in a missing `<limit>` with zeros, and a missing `effort`, `lower` or `upper` with 0;
//! - reports a missing attribute or element as serde's "missing field" without saying where;
//! - refuses a `<material>`'s `<texture>` without a `filename`, which ROS's urdfdom accepts
//!   (iCub's and Romeo's descriptions have them): [`read`] leaves those out of the text urdf-rs
//!   reads and counts them ([`Facts::textures_without_file`], a note of the model).
//!
//! This pass walks the same RustyXML tree urdf-rs builds (the same parse) and checks every
//! attribute urdf-rs will read, naming the element: each number parses whole and is finite, each
//! vector has exactly its count of numbers, required attributes and elements are there, elements
//! URDF allows once appear at most once, each `<geometry>` holds exactly one shape. It also
//! records what urdf-rs's defaults hide (whether a `<limit>` or its `effort` was written), in
//! file order, for the model builder. Elements URDF does not define (`<transmission>`,
//! `<gazebo>`, extensions inside links and joints) are not looked at, as urdf-rs ignores them;
//! one extension is read: a `<limit>`'s `lower_xyz` and `upper_xyz` (this project's per-axis
//! ranges of a spherical joint, which [`crate::humanoid`] uses), checked like every vector
//! wherever they are written (the tree model, which has no spherical joints, does not use them).

use xml::{Element, Xml};

/// What a refusal names: (element, reason).
pub(crate) type Refusal = (String, String);

/// What the text says that urdf-rs's parse does not keep, in file order.
#[derive(Debug, Default)]
pub(crate) struct Facts {
    /// One per `<joint>`, in file order (urdf-rs's `joints` order).
    pub joints: Vec<JointFacts>,
    /// `<material>`s' `<texture>` elements without a `filename`, left out of what urdf-rs reads
    /// (ROS's urdfdom accepts them; urdf-rs refuses the whole file for a missing field without
    /// saying where; a texture is visual only and never used here).
    pub textures_without_file: usize,
}

/// What a `<joint>` wrote of its `<limit>`.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct JointFacts {
    /// A `<limit>` element is present.
    pub limit: bool,
    /// Its `effort` attribute is present.
    pub effort: bool,
    /// Its `lower_xyz` and `upper_xyz` attributes, three numbers each where present: this
    /// project's per-axis ranges of a spherical joint (the humanoid's, [`crate::humanoid`]),
    /// which urdf-rs does not read.
    pub per_axis: [Option<[f64; 3]>; 2],
}

/// The URDF joint types.
const JOINT_TYPES: [&str; 7] = [
    "revolute",
    "continuous",
    "prismatic",
    "fixed",
    "floating",
    "planar",
    "spherical",
];

/// The element children of `e` named `name` (local name, as urdf-rs matches them).
fn children<'a>(e: &'a Element, name: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
    e.children.iter().filter_map(move |c| match c {
        Xml::ElementNode(c) if c.name == name => Some(c),
        _ => None,
    })
}

/// The one child `name` of `e`, if any; two or more are refused.
fn at_most_one<'a>(e: &'a Element, name: &str, at: &str) -> Result<Option<&'a Element>, Refusal> {
    let mut it = e.children.iter().filter_map(|c| match c {
        Xml::ElementNode(c) if c.name == name => Some(c),
        _ => None,
    });
    let first = it.next();
    let more = it.count();
    if more > 0 {
        return Err((
            format!("{at}<{name}>"),
            format!("{} <{name}> elements: URDF allows one", more + 1),
        ));
    }
    Ok(first)
}

/// The one child `name` of `e`; none, or two or more, are refused.
fn exactly_one<'a>(e: &'a Element, name: &str, at: &str) -> Result<&'a Element, Refusal> {
    at_most_one(e, name, at)?.ok_or_else(|| {
        (
            format!("{at}<{name}>"),
            "missing: URDF requires one here".to_owned(),
        )
    })
}

/// The attribute `attr` of `e`.
fn attribute<'a>(e: &'a Element, attr: &str) -> Option<&'a str> {
    e.get_attribute(attr, None)
}

/// `count` numbers in the attribute `attr` of element `e` (named `{at}<e attr>`: `at` is the path
/// of its parent, `link "a" <inertial>`, or the owner's name and a space, `joint "j" `), each
/// parsed whole and finite; `None` when the attribute is absent and not `required`.
fn numbers(
    e: &Element,
    attr: &str,
    count: usize,
    required: bool,
    at: &str,
) -> Result<Option<Vec<f64>>, Refusal> {
    let element = || format!("{at}<{} {attr}>", e.name);
    let Some(text) = attribute(e, attr) else {
        return if required {
            Err((element(), "missing: URDF requires it".to_owned()))
        } else {
            Ok(None)
        };
    };
    let mut values = Vec::with_capacity(count);
    for token in text.split_whitespace() {
        let v: f64 = token
            .parse()
            .map_err(|_| (element(), format!("not a number: {token:?} in {text:?}")))?;
        if !v.is_finite() {
            return Err((element(), format!("not a finite number: {token:?}")));
        }
        values.push(v);
    }
    if values.len() != count {
        let what = if count == 1 { "number" } else { "numbers" };
        return Err((
            element(),
            format!("{count} {what} expected, got {}: {text:?}", values.len()),
        ));
    }
    Ok(Some(values))
}

/// A non-empty name attribute.
fn name<'a>(e: &'a Element, attr: &str, at: &str) -> Result<&'a str, Refusal> {
    match attribute(e, attr) {
        Some(n) if !n.is_empty() => Ok(n),
        Some(_) => Err((format!("{at}<{} {attr}>", e.name), "empty".to_owned())),
        None => Err((
            format!("{at}<{} {attr}>", e.name),
            "missing: URDF requires it".to_owned(),
        )),
    }
}

/// An optional `<origin xyz rpy>` (and `quat_xyzw`, which urdf-rs reads from URDF 1.1 on).
fn origin(parent: &Element, at: &str, quat: bool) -> Result<(), Refusal> {
    if let Some(o) = at_most_one(parent, "origin", at)? {
        numbers(o, "xyz", 3, false, at)?;
        numbers(o, "rpy", 3, false, at)?;
        if quat {
            numbers(o, "quat_xyzw", 4, false, at)?;
            if attribute(o, "quat_xyzw").is_some() && attribute(o, "rpy").is_some() {
                return Err((
                    format!("{at}<origin>"),
                    "both rpy and quat_xyzw: give one".to_owned(),
                ));
            }
        }
    }
    Ok(())
}

/// An optional `<material>` (its `<color rgba>`; texture and name are not numbers).
fn material(parent: &Element, at: &str) -> Result<(), Refusal> {
    if let Some(m) = at_most_one(parent, "material", at)? {
        check_material(m, &format!("{at}<material>"))?;
    }
    Ok(())
}

fn check_material(m: &Element, at: &str) -> Result<(), Refusal> {
    if let Some(c) = at_most_one(m, "color", at)? {
        numbers(c, "rgba", 4, true, at)?;
    }
    Ok(())
}

/// A `<visual>` or `<collision>`: origin, exactly one geometry holding exactly one shape.
fn shape(e: &Element, at: &str, quat: bool) -> Result<(), Refusal> {
    origin(e, at, quat)?;
    let g = exactly_one(e, "geometry", at)?;
    let at_g = format!("{at}<geometry>");
    let shapes: Vec<&Element> = g
        .children
        .iter()
        .filter_map(|c| match c {
            Xml::ElementNode(c) => Some(c),
            _ => None,
        })
        .collect();
    let [s] = shapes.as_slice() else {
        return Err((
            at_g,
            format!(
                "{} shapes: URDF requires exactly one (box, cylinder, sphere, mesh; capsule)",
                shapes.len()
            ),
        ));
    };
    let at_s = at_g.clone();
    match s.name.as_str() {
        "box" => {
            numbers(s, "size", 3, true, &at_s)?;
        }
        "cylinder" | "capsule" => {
            numbers(s, "radius", 1, true, &at_s)?;
            numbers(s, "length", 1, true, &at_s)?;
        }
        "sphere" => {
            numbers(s, "radius", 1, true, &at_s)?;
        }
        "mesh" => {
            name(s, "filename", &at_s)?;
            numbers(s, "scale", 3, false, &at_s)?;
        }
        other => {
            return Err((
                format!("{at_g}<{other}>"),
                "not a URDF shape (box, cylinder, sphere, mesh; capsule)".to_owned(),
            ));
        }
    }
    Ok(())
}

/// Indexed when there are several: `<visual>`, or `<visual #2>` (1-based).
fn nth(tag: &str, k: usize, count: usize) -> String {
    if count > 1 {
        format!("<{tag} #{}>", k + 1)
    } else {
        format!("<{tag}>")
    }
}

fn link(e: &Element, index: usize, quat: bool) -> Result<(), Refusal> {
    let at = match attribute(e, "name") {
        Some(n) if !n.is_empty() => format!("link {n:?} "),
        _ => format!("<link> #{} ", index + 1),
    };
    name(e, "name", &at)?;
    if let Some(i) = at_most_one(e, "inertial", &at)? {
        let at = format!("{at}<inertial>");
        origin(i, &at, quat)?;
        let m = exactly_one(i, "mass", &at)?;
        numbers(m, "value", 1, true, &at)?;
        let t = exactly_one(i, "inertia", &at)?;
        for a in ["ixx", "ixy", "ixz", "iyy", "iyz", "izz"] {
            numbers(t, a, 1, true, &at)?;
        }
    }
    for tag in ["visual", "collision"] {
        let count = children(e, tag).count();
        for (k, s) in children(e, tag).enumerate() {
            let at = format!("{at}{}", nth(tag, k, count));
            shape(s, &at, quat)?;
            if tag == "visual" {
                material(s, &at)?;
            }
        }
    }
    Ok(())
}

fn joint(e: &Element, index: usize, quat: bool) -> Result<JointFacts, Refusal> {
    let at = match attribute(e, "name") {
        Some(n) if !n.is_empty() => format!("joint {n:?} "),
        _ => format!("<joint> #{} ", index + 1),
    };
    name(e, "name", &at)?;
    let kind = attribute(e, "type").ok_or_else(|| {
        (
            format!("{at}<joint type>"),
            "missing: URDF requires it".to_owned(),
        )
    })?;
    if !JOINT_TYPES.contains(&kind) {
        return Err((
            format!("{at}<joint type>"),
            format!(
                "{kind:?} is not a URDF joint type ({})",
                JOINT_TYPES.join(", ")
            ),
        ));
    }
    origin(e, &at, quat)?;
    for end in ["parent", "child"] {
        let p = exactly_one(e, end, &at)?;
        name(p, "link", &at)?;
    }
    if let Some(a) = at_most_one(e, "axis", &at)? {
        numbers(a, "xyz", 3, true, &at)?;
    }
    let mut facts = JointFacts::default();
    if let Some(l) = at_most_one(e, "limit", &at)? {
        facts.limit = true;
        numbers(l, "lower", 1, false, &at)?;
        numbers(l, "upper", 1, false, &at)?;
        facts.effort = numbers(l, "effort", 1, false, &at)?.is_some();
        numbers(l, "velocity", 1, true, &at)?;
        for (slot, attr) in facts.per_axis.iter_mut().zip(["lower_xyz", "upper_xyz"]) {
            *slot = numbers(l, attr, 3, false, &at)?.and_then(|v| <[f64; 3]>::try_from(v).ok());
        }
    }
    if let Some(d) = at_most_one(e, "dynamics", &at)? {
        numbers(d, "damping", 1, false, &at)?;
        numbers(d, "friction", 1, false, &at)?;
    }
    if let Some(m) = at_most_one(e, "mimic", &at)? {
        name(m, "joint", &at)?;
        numbers(m, "multiplier", 1, false, &at)?;
        numbers(m, "offset", 1, false, &at)?;
    }
    if let Some(s) = at_most_one(e, "safety_controller", &at)? {
        for a in ["soft_lower_limit", "soft_upper_limit", "k_position"] {
            numbers(s, a, 1, false, &at)?;
        }
        numbers(s, "k_velocity", 1, true, &at)?;
    }
    if let Some(c) = at_most_one(e, "calibration", &at)? {
        numbers(c, "rising", 1, false, &at)?;
        numbers(c, "falling", 1, false, &at)?;
    }
    Ok(facts)
}

/// `(major, minor)` of `<robot version>`: 1.0 when absent or malformed (urdf-rs's and urdfdom's
/// rule); `quat_xyzw` is read from 1.1 on.
fn version(robot: &Element) -> (u32, u32) {
    attribute(robot, "version")
        .and_then(|v| {
            let (major, minor) = v.trim().split_once('.')?;
            Some((major.parse().ok()?, minor.parse().ok()?))
        })
        .unwrap_or((1, 0))
}

/// Checks `text` (already bounded by [`crate::check_xml`]) strictly (see the module docs), then
/// reads it with urdf-rs: the text itself, or the text without the filename-less `<texture>`
/// elements where there are any ([`Facts::textures_without_file`]).
pub(crate) fn read(text: &str) -> Result<(Facts, urdf_rs::Robot), Refusal> {
    let mut root: Element = text
        .parse()
        .map_err(|e| ("<robot>".to_owned(), format!("not well-formed XML: {e}")))?;
    let dropped = drop_textures_without_file(&mut root, false);
    let mut facts = check_root(&root)?;
    facts.textures_without_file = dropped;
    let robot = if dropped > 0 {
        urdf_rs::read_from_string(&root.to_string())
    } else {
        urdf_rs::read_from_string(text)
    }
    .map_err(|e| ("<robot>".to_owned(), format!("urdf-rs cannot read it: {e}")))?;
    Ok((facts, robot))
}

/// Removes every `<texture>` without a `filename` from the `<material>`s under `e`; returns how
/// many.
fn drop_textures_without_file(e: &mut Element, in_material: bool) -> usize {
    let before = e.children.len();
    if in_material {
        e.children.retain(|c| {
            !matches!(c, Xml::ElementNode(t) if t.name == "texture" && attribute(t, "filename").is_none())
        });
    }
    let mut dropped = before - e.children.len();
    for c in &mut e.children {
        if let Xml::ElementNode(child) = c {
            let material = child.name == "material";
            dropped += drop_textures_without_file(child, material);
        }
    }
    dropped
}

/// The strict pass alone, on the text as written (the unit tests').
#[cfg(test)]
pub(crate) fn check(text: &str) -> Result<Facts, Refusal> {
    let root: Element = text
        .parse()
        .map_err(|e| ("<robot>".to_owned(), format!("not well-formed XML: {e}")))?;
    check_root(&root)
}

fn check_root(root: &Element) -> Result<Facts, Refusal> {
    if root.name != "robot" {
        return Err((
            format!("<{}>", root.name),
            "the root element of a URDF must be <robot>".to_owned(),
        ));
    }
    let quat = version(root) >= (1, 1);
    let mut facts = Facts::default();
    let (mut links, mut joints) = (0usize, 0usize);
    for c in &root.children {
        let Xml::ElementNode(e) = c else { continue };
        match e.name.as_str() {
            "link" => {
                link(e, links, quat)?;
                links += 1;
            }
            "joint" => {
                facts.joints.push(joint(e, joints, quat)?);
                joints += 1;
            }
            "material" => {
                let at = match attribute(e, "name") {
                    Some(n) => format!("material {n:?} "),
                    None => "<material> ".to_owned(),
                };
                check_material(e, &at)?;
            }
            _ => {}
        }
    }
    Ok(facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(body: &str) -> Refusal {
        check(&format!("<robot name=\"r\">{body}</robot>")).unwrap_err()
    }

    #[test]
    fn loose_numbers_are_refused_naming_the_attribute() {
        let (el, why) = refusal(
            r#"<link name="a"/><link name="b"/><joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="1 foo 0 0"/></joint>"#,
        );
        assert_eq!(el, r#"joint "j" <axis xyz>"#);
        assert_eq!(why, r#"not a number: "foo" in "1 foo 0 0""#);
        let (el, why) = refusal(
            r#"<link name="a"><inertial><mass value="nan"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>"#,
        );
        assert_eq!(el, r#"link "a" <inertial><mass value>"#);
        assert_eq!(why, r#"not a finite number: "nan""#);
        let (el, why) = refusal(
            r#"<link name="a"><visual><origin xyz="0 1e400 0"/><geometry><box size="1 1 1"/></geometry></visual></link>"#,
        );
        assert_eq!(el, r#"link "a" <visual><origin xyz>"#);
        assert!(why.contains("1e400"), "{why}");
        let (el, why) = refusal(
            r#"<link name="a"><collision><geometry><box size="1 1"/></geometry></collision><collision><geometry><sphere radius="1"/></geometry></collision></link>"#,
        );
        assert_eq!(el, r#"link "a" <collision #1><geometry><box size>"#);
        assert_eq!(why, r#"3 numbers expected, got 2: "1 1""#);
    }

    #[test]
    fn missing_and_repeated_elements_are_refused() {
        let (el, why) = refusal(r#"<link name="a"><inertial><mass value="1"/></inertial></link>"#);
        assert_eq!(
            (el.as_str(), why.as_str()),
            (
                r#"link "a" <inertial><inertia>"#,
                "missing: URDF requires one here"
            )
        );
        let (el, why) = refusal(
            r#"<link name="a"><inertial><mass value="1"/><mass value="2"/></inertial></link>"#,
        );
        assert_eq!(el, r#"link "a" <inertial><mass>"#);
        assert_eq!(why, "2 <mass> elements: URDF allows one");
        let (el, _) = refusal(r#"<link/>"#);
        assert_eq!(el, "<link> #1 <link name>");
        let (el, why) = refusal(r#"<link name="a"/><joint name="j" type="hinge"/>"#);
        assert_eq!(el, r#"joint "j" <joint type>"#);
        assert!(
            why.starts_with(r#""hinge" is not a URDF joint type"#),
            "{why}"
        );
        let (el, why) =
            refusal(r#"<link name="a"/><joint name="j" type="fixed"><parent link="a"/></joint>"#);
        assert_eq!(
            (el.as_str(), why.as_str()),
            (r#"joint "j" <child>"#, "missing: URDF requires one here")
        );
        let (el, why) = refusal(r#"<link name="a"><visual><geometry/></visual></link>"#);
        assert_eq!(el, r#"link "a" <visual><geometry>"#);
        assert!(why.starts_with("0 shapes"), "{why}");
        let (el, _) =
            refusal(r#"<link name="a"><visual><geometry><cone/></geometry></visual></link>"#);
        assert_eq!(el, r#"link "a" <visual><geometry><cone>"#);
        let (el, why) = refusal(
            r#"<link name="a"/><link name="b"/><joint name="j" type="revolute"><parent link="a"/><child link="b"/><limit effort="1"/></joint>"#,
        );
        assert_eq!(
            (el.as_str(), why.as_str()),
            (r#"joint "j" <limit velocity>"#, "missing: URDF requires it")
        );
        let (el, why) = check("<robt/>").unwrap_err();
        assert_eq!(
            (el.as_str(), why.as_str()),
            ("<robt>", "the root element of a URDF must be <robot>")
        );
        let (el, why) = check("<robot><link name=\"a\"></robot>").unwrap_err();
        assert_eq!(el, "<robot>");
        assert!(why.starts_with("not well-formed XML"), "{why}");
    }

    #[test]
    fn limit_facts_and_quaternions() {
        let f = check(r#"<robot name="r"><link name="a"/><link name="b"/><link name="c"/>
            <joint name="j" type="revolute"><parent link="a"/><child link="b"/><limit lower="-1" upper="1" velocity="1"/></joint>
            <joint name="k" type="continuous"><parent link="b"/><child link="c"/></joint></robot>"#)
        .unwrap();
        assert!(f.joints[0].limit && !f.joints[0].effort);
        assert!(!f.joints[1].limit);
        // quat_xyzw is read (and checked) from version 1.1 on, ignored before, as urdf-rs does.
        let q = |v: &str, q: &str| {
            check(&format!(
                r#"<robot name="r" version="{v}"><link name="a"><visual><origin quat_xyzw="{q}"/><geometry><sphere radius="1"/></geometry></visual></link></robot>"#
            ))
        };
        assert!(q("1.1", "0 0 0 1").is_ok());
        assert!(q("1.1", "0 0 1").is_err());
        assert!(q("1.0", "0 0 1").is_ok());
    }

    #[test]
    fn textures_without_a_file_are_left_out_and_counted() {
        // As iCub's and Romeo's descriptions write them: urdf-rs refuses the whole file for the
        // missing attribute ("missing field `filename`", no element named).
        let text = r#"<robot name="r"><material name="m"><texture/><color rgba="1 0 0 1"/></material>
            <link name="a"><visual><geometry><sphere radius="1"/></geometry><material name="n"><texture /><color rgba="0 0 0 1"/></material></visual>
            <visual><geometry><box size="1 1 1"/></geometry><material name="t"><texture filename="t.png"/></material></visual></link></robot>"#;
        assert!(urdf_rs::read_from_string(text).is_err());
        let (facts, robot) = read(text).unwrap();
        assert_eq!(facts.textures_without_file, 2);
        let visuals = &robot.links[0].visual;
        assert_eq!(visuals.len(), 2);
        let texture = |k: usize| visuals[k].material.as_ref().unwrap().texture.clone();
        assert!(texture(0).is_none());
        assert_eq!(texture(1).unwrap().filename, "t.png");
        assert_eq!(
            robot.materials[0].color.as_ref().unwrap().rgba.0,
            [1.0, 0.0, 0.0, 1.0]
        );
        // Nothing to leave out: the text goes to urdf-rs as it is.
        let (facts, _) = read(r#"<robot name="r"><link name="a"/></robot>"#).unwrap();
        assert_eq!(facts.textures_without_file, 0);
    }
}
