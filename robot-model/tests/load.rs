//! The loader on small URDFs written here (merging against hand computations, frames, order,
//! the base, meshes, every refusal naming file, element and reason, hostile files) and on the
//! real robots of example-robot-data (found by `scripts/example-robot-data.sh`, through
//! `support`), checked against numbers from Pinocchio 4.1 (`pin.buildModelFromUrdf`).

mod support;

use std::f64::consts::FRAC_PI_2;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use control_core::tree::{BaseKind, JointType, Placement};
use robot_model::{
    Geometry, LoadError, LoadOptions, MeshSearch, RobotModel, load, load_with, parse_with,
    read_description,
};

/// The file name the in-memory tests give their text.
const SOURCE: &str = "/virtual/robot.urdf";

fn parse_opts(text: &str, options: LoadOptions) -> Result<RobotModel, LoadError> {
    parse_with(text, Path::new(SOURCE), &options, &MeshSearch::default())
}

fn parse(text: &str) -> Result<RobotModel, LoadError> {
    parse_opts(text, LoadOptions::default())
}

/// A fresh temporary folder for one test.
fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("robot-model-load-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// An `<inertial>` with a diagonal inertia.
fn inertial(mass: f64, xyz: &str, diag: [f64; 3]) -> String {
    format!(
        r#"<inertial><origin xyz="{xyz}"/><mass value="{mass}"/><inertia ixx="{}" ixy="0" ixz="0" iyy="{}" iyz="0" izz="{}"/></inertial>"#,
        diag[0], diag[1], diag[2]
    )
}

/// A link with a unit-ish body.
fn link(name: &str) -> String {
    format!(
        r#"<link name="{name}">{}</link>"#,
        inertial(1.0, "0 0 0", [0.1, 0.1, 0.1])
    )
}

fn revolute(name: &str, parent: &str, child: &str, xyz: &str) -> String {
    format!(
        r#"<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/><origin xyz="{xyz}"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="10" velocity="2"/></joint>"#
    )
}

fn fixed(name: &str, parent: &str, child: &str, xyz: &str, rpy: &str) -> String {
    format!(
        r#"<joint name="{name}" type="fixed"><parent link="{parent}"/><child link="{child}"/><origin xyz="{xyz}" rpy="{rpy}"/></joint>"#
    )
}

fn robot(body: &str) -> String {
    format!("<?xml version=\"1.0\"?>\n<robot name=\"r\">\n{body}\n</robot>\n")
}

fn close(a: &[f64], b: &[f64], tol: f64) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol)
}

#[test]
fn fixed_links_merge_exactly_as_computed_by_hand() {
    // base ─j1 (revolute)→ arm ─tool_joint (fixed, +1 z)→ tool ─j2 (revolute)→ finger
    // arm: 1 kg at (0, 0, 0.5), diag(0.25, 0.25, 0.125); tool: 3 kg at (0.5, 0, 0.25) in the
    // tool frame, diag(0.0625, 0.0625, 0.03125). Every number dyadic: the sums are exact.
    let text = robot(&format!(
        r#"<link name="base"/>
        <link name="arm">{}</link>
        <link name="tool">{}<visual><origin xyz="0 0 0.125"/><geometry><sphere radius="0.5"/></geometry></visual></link>
        {}
        {}
        {}
        {}"#,
        inertial(1.0, "0 0 0.5", [0.25, 0.25, 0.125]),
        inertial(3.0, "0.5 0 0.25", [0.0625, 0.0625, 0.03125]),
        link("finger"),
        revolute("j1", "base", "arm", "0 0 0.25"),
        fixed("tool_joint", "arm", "tool", "0 0 1", "0 0 0"),
        revolute("j2", "tool", "finger", "0 0 0.5"),
    ));
    let m = parse(&text).unwrap();
    assert_eq!(m.bodies.len(), 3);
    assert_eq!(m.joints.len(), 2);
    let arm = &m.bodies[1];
    assert_eq!(arm.link, "arm");
    // Mass 4; com ((3 · 0.5) / 4, 0, (0.5 + 3 · 1.25) / 4) = (0.375, 0, 1.0625).
    assert_eq!(arm.inertial.mass_kg, 4.0);
    assert_eq!(arm.inertial.com_m, [0.375, 0.0, 1.0625]);
    // Offsets from the combined com: arm (−0.375, 0, −0.5625), tool (0.125, 0, 0.1875).
    // ixx = 0.25 + 1·0.5625² + 0.0625 + 3·0.1875² = 0.734375
    // iyy = 0.25 + 1·(0.375² + 0.5625²) + 0.0625 + 3·(0.125² + 0.1875²) = 0.921875
    // izz = 0.125 + 1·0.375² + 0.03125 + 3·0.125² = 0.34375
    // ixz = −1·(−0.375)(−0.5625) − 3·0.125·0.1875 = −0.28125
    assert_eq!(
        arm.inertial.inertia_kgm2,
        [0.734375, 0.0, -0.28125, 0.921875, 0.0, 0.34375]
    );
    // The joint after the fixed one hangs from the arm's body, its origin composed.
    let j2 = &m.joints[1];
    assert_eq!((j2.name.as_str(), j2.parent_body), ("j2", 1));
    assert_eq!(j2.origin.xyz_m, [0.0, 0.0, 1.5]);
    // Frames: every link, in link order, on its body.
    let names: Vec<(&str, usize, [f64; 3])> = m
        .frames
        .iter()
        .map(|f| (f.name.as_str(), f.body, f.placement.xyz_m))
        .collect();
    assert_eq!(
        names,
        vec![
            ("base", 0, [0.0; 3]),
            ("arm", 1, [0.0; 3]),
            ("tool", 1, [0.0, 0.0, 1.0]),
            ("finger", 2, [0.0; 3]),
        ]
    );
    assert_eq!(m.frame("tool").unwrap().body, 1);
    assert!(m.frame("nope").is_none());
    assert_eq!(m.joint_index("j2"), Some(1));
    assert_eq!(m.joint_index("tool_joint"), None);
    // The tool's sphere moved to the arm's body.
    assert_eq!(arm.visuals.len(), 1);
    assert_eq!(arm.visuals[0].link, "tool");
    assert_eq!(arm.visuals[0].placement.xyz_m, [0.0, 0.0, 1.125]);
    assert_eq!(arm.visuals[0].geometry, Geometry::Sphere { radius: 0.5 });
    // A fixed base with no mass is fine; the defaults of the spec.
    assert_eq!(m.base, BaseKind::Fixed);
    assert_eq!(m.base_placement, Placement::IDENTITY);
    assert_eq!(m.bodies[0].inertial.mass_kg, 0.0);
    assert!(m.notes.is_empty());
    let spec = m.tree_spec();
    assert_eq!(spec.joints.len(), 2);
    assert_eq!(spec.joints[0].body, arm.inertial);
    assert_eq!(spec.as_spec().joints[1].origin.xyz_m, [0.0, 0.0, 1.5]);
    let tree = m.tree::<4>().unwrap();
    assert_eq!(tree.nv(), 2);
}

#[test]
fn rotated_fixed_joints_and_inertial_frames_are_composed() {
    // The tool is fixed at a quarter turn about z; its inertial frame is a quarter turn about x.
    // Rz(π/2)·Rx(π/2) maps x → y, y → z, z → x: the principal moments (a, b, c) about the
    // inertial frame's x, y, z become moments about the arm's y, z, x.
    let text = robot(&format!(
        r#"<link name="base"/>
        <link name="arm"/>
        <link name="tool"><inertial><origin xyz="1 0 0" rpy="{h} 0 0"/><mass value="2"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.3"/></inertial></link>
        {}
        {}"#,
        revolute("j1", "base", "arm", "0 0 0"),
        fixed(
            "tool_joint",
            "arm",
            "tool",
            "0 0 1",
            &format!("0 0 {FRAC_PI_2}")
        ),
        h = FRAC_PI_2,
    ));
    let m = parse(&text).unwrap();
    let b = &m.bodies[1].inertial;
    assert_eq!(b.mass_kg, 2.0);
    // The inertial origin (1, 0, 0) in the tool frame is (0, 1, 1) in the arm's.
    assert!(close(&b.com_m, &[0.0, 1.0, 1.0], 1e-15), "{:?}", b.com_m);
    // ixx = c = 0.3, iyy = a = 0.1, izz = b = 0.2, no products.
    assert!(
        close(&b.inertia_kgm2, &[0.3, 0.0, 0.0, 0.1, 0.0, 0.2], 1e-15),
        "{:?}",
        b.inertia_kgm2
    );
    let tool = m.frame("tool").unwrap();
    let r = tool.placement.rotation;
    assert!(close(
        &r.concat(),
        &[0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0],
        1e-15
    ));
}

#[test]
fn joints_are_numbered_depth_first_in_file_order() {
    // Links: root with two branches a (a1 → a2) and b (b1); the file lists a2's joint first.
    let text = robot(&format!(
        "{}{}{}{}{}{}{}{}{}",
        link("root"),
        link("a"),
        link("a2"),
        link("b"),
        link("mid"),
        revolute("ja2", "a", "a2", "0 0 1"),
        revolute("ja", "mid", "a", "0 0 1"),
        revolute("jb", "root", "b", "0 1 0"),
        fixed("jmid", "root", "mid", "1 0 0", "0 0 0"),
    ));
    let m = parse(&text).unwrap();
    // root's child joints in file order: jb, jmid → jb first; then jmid's subtree: ja, ja2.
    let order: Vec<(&str, usize)> = m
        .joints
        .iter()
        .map(|j| (j.name.as_str(), j.parent_body))
        .collect();
    assert_eq!(order, vec![("jb", 0), ("ja", 0), ("ja2", 2)]);
    assert_eq!(m.joints[1].origin.xyz_m, [1.0, 0.0, 1.0]);
    for (k, j) in m.joints.iter().enumerate() {
        assert!(j.parent_body <= k);
        let own = m.frame(&m.bodies[k + 1].link).unwrap();
        assert_eq!((own.body, own.placement), (k + 1, Placement::IDENTITY));
    }
    // The base carries root and mid (merged), so 2 bodies' worth of mass on the base.
    assert_eq!(m.bodies[0].inertial.mass_kg, 2.0);
}

#[test]
fn joint_values_are_kept() {
    let text = robot(&format!(
        r#"{}{}{}{}
        <joint name="c" type="continuous"><parent link="a"/><child link="b"/><axis xyz="0 0 2"/><limit effort="5" velocity="3"/><dynamics damping="0.5"/></joint>
        <joint name="p" type="prismatic"><parent link="b"/><child link="c"/><axis xyz="1 1 0"/><limit lower="-0.25" upper="0.5" effort="100" velocity="0.5"/><dynamics friction="2"/><safety_controller k_velocity="1" soft_lower_limit="-0.2"/><calibration rising="0"/></joint>
        <joint name="n" type="continuous"><parent link="c"/><child link="d"/></joint>"#,
        link("a"),
        link("b"),
        link("c"),
        link("d"),
    ));
    let m = parse(&text).unwrap();
    let c = &m.joints[0];
    assert_eq!(
        (c.kind, c.continuous, c.limits),
        (JointType::Revolute, true, None)
    );
    assert_eq!(
        (c.effort, c.velocity, c.damping, c.friction),
        (Some(5.0), Some(3.0), 0.5, 0.0)
    );
    assert_eq!(c.axis, [0.0, 0.0, 1.0]);
    let p = &m.joints[1];
    assert_eq!((p.kind, p.continuous), (JointType::Prismatic, false));
    assert_eq!(p.limits, Some((-0.25, 0.5)));
    assert_eq!(
        (p.effort, p.velocity, p.damping, p.friction),
        (Some(100.0), Some(0.5), 0.0, 2.0)
    );
    assert!(close(&p.axis, &[0.5f64.sqrt(), 0.5f64.sqrt(), 0.0], 1e-15));
    // No <limit> on a continuous joint: no effort, no velocity; the default axis is x.
    let n = &m.joints[2];
    assert_eq!(
        (n.effort, n.velocity, n.axis),
        (None, None, [1.0, 0.0, 0.0])
    );
}

#[test]
fn the_base_follows_the_file_and_the_options() {
    let arm = format!("{}{}", link("base"), link("arm"));
    let j = revolute("j", "base", "arm", "0 0 0.5");
    // A world link with one fixed joint: welded at that joint's origin.
    let welded = robot(&format!(
        r#"<link name="world"/>{arm}{j}{}"#,
        fixed("weld", "world", "base", "1 2 0", "0 0 1.5")
    ));
    let m = parse(&welded).unwrap();
    assert_eq!(m.base, BaseKind::Fixed);
    assert_eq!(m.bodies[0].link, "base");
    assert_eq!(
        m.base_placement,
        Placement::from_xyz_rpy([1.0, 2.0, 0.0], [0.0, 0.0, 1.5])
    );
    let w = m.frame("world").unwrap();
    assert_eq!(w.body, 0);
    // world = inverse(base placement): world's origin is at −Rᵀ p in the base frame.
    let (s, c) = 1.5f64.sin_cos();
    let expect = [-(c * 1.0 + s * 2.0), -(-s * 1.0 + c * 2.0), 0.0];
    assert!(
        close(&w.placement.xyz_m, &expect, 1e-15),
        "{:?}",
        w.placement.xyz_m
    );
    assert_eq!(m.frames.len(), 3);
    // ... which cannot float.
    let e = parse_opts(
        &welded,
        LoadOptions {
            floating_base: true,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.element, r#"joint "weld""#);
    assert!(e.reason.contains("floating base was asked for"), "{e}");

    // A world link with one floating joint: a floating base, the origin ignored with a note.
    let floating = robot(&format!(
        r#"<link name="world"/>{arm}{j}<joint name="free" type="floating"><parent link="world"/><child link="base"/><origin xyz="0 0 1"/></joint>"#
    ));
    let m = parse(&floating).unwrap();
    assert_eq!(
        (m.base, m.base_placement),
        (BaseKind::Floating, Placement::IDENTITY)
    );
    assert_eq!(m.bodies[0].link, "base");
    assert!(m.frame("world").is_none());
    assert_eq!(
        m.notes,
        vec![
            r#"joint "free" (floating): its <origin> is ignored; the scene places the floating base"#
        ]
    );
    assert_eq!(m.tree::<7>().unwrap().nv(), 7);

    // Otherwise the root is the base: fixed, or floating when asked.
    let plain = robot(&format!("{arm}{j}"));
    assert_eq!(parse(&plain).unwrap().base, BaseKind::Fixed);
    let m = parse_opts(
        &plain,
        LoadOptions {
            floating_base: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(m.base, BaseKind::Floating);
    assert_eq!(m.tree::<7>().unwrap().nv(), 7);
    let e = m.tree::<6>().unwrap_err();
    assert_eq!(e.element, "<robot>");
    assert_eq!(e.reason, "tree: 7 degrees of freedom, capacity 6");
    assert_eq!(e.file, Path::new(SOURCE));
    // A floating base needs a mass.
    let light = robot(&format!(r#"<link name="base"/>{}{}"#, link("arm"), j));
    let e = parse_opts(
        &light,
        LoadOptions {
            floating_base: true,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.element, r#"link "base" <inertial><mass value>"#);
    assert!(
        e.reason
            .starts_with("the floating base has a total mass of 0 kg"),
        "{e}"
    );
    // A world root with a movable joint is a fixed, massless base; it cannot float.
    let world_root = robot(&format!(
        r#"<link name="world"/>{}{}"#,
        link("arm"),
        revolute("j", "world", "arm", "0 0 0")
    ));
    assert_eq!(parse(&world_root).unwrap().bodies[0].link, "world");
    let e = parse_opts(
        &world_root,
        LoadOptions {
            floating_base: true,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.element, r#"link "world""#);
}

#[test]
fn massless_links_between_joints_are_frames_when_they_carry_mass() {
    // A two-axis hip as ROS describes one: yaw about z, then roll about x, at one point, with
    // a link that has no <inertial> between them. The thigh: 2 kg at the joints' point,
    // diag(0.25, 0.5, 0.125). At q = 0 the mass matrix is diag(izz, ixx) exactly.
    let roll = r#"<joint name="roll" type="revolute"><parent link="virtual"/><child link="thigh"/><axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="10" velocity="2"/></joint>"#;
    let text = robot(&format!(
        r#"{}<link name="virtual"/><link name="thigh">{}</link>{}{roll}"#,
        link("pelvis"),
        inertial(2.0, "0 0 0", [0.25, 0.5, 0.125]),
        revolute("yaw", "pelvis", "virtual", "0 0 -0.1"),
    ));
    let m = parse(&text).unwrap();
    assert_eq!(m.joints.len(), 2);
    let virtual_body = &m.bodies[1].inertial;
    assert_eq!(
        (
            virtual_body.mass_kg,
            virtual_body.com_m,
            virtual_body.inertia_kgm2
        ),
        (0.0, [0.0; 3], [0.0; 6])
    );
    assert_eq!(
        m.notes,
        vec![
            r#"massless moving bodies (no mass, centre or inertia; each carries a body that has mass): "virtual""#
        ]
    );
    let tree = m.tree::<4>().unwrap();
    let kin = tree
        .kinematics(
            &control_core::articulated::nalgebra::Isometry3::identity(),
            &[0.0; 4],
        )
        .unwrap();
    let mass = kin.mass_matrix().unwrap();
    assert_eq!(
        [mass[(0, 0)], mass[(0, 1)], mass[(1, 0)], mass[(1, 1)]],
        [0.125, 0.0, 0.0, 0.25]
    );
    // With nothing massive below it, the same link is refused, naming it.
    let text = robot(&format!(
        r#"{}<link name="virtual"/>{}"#,
        link("pelvis"),
        revolute("yaw", "pelvis", "virtual", "0 0 -0.1"),
    ));
    let e = parse(&text).unwrap_err();
    assert_eq!(e.element, r#"link "virtual" <inertial><mass value>"#);
    assert!(e.reason.contains("nothing it carries has any"), "{e}");
    // Two joints about one line with only the massless link between them move the thigh the
    // same way: refused, naming both. About parallel lines apart, they do not.
    let spin = |xyz: &str| {
        format!(
            r#"<joint name="spin" type="revolute"><parent link="virtual"/><child link="thigh"/><origin xyz="{xyz}"/><axis xyz="0 0 2"/><limit lower="-1" upper="1" effort="10" velocity="2"/></joint>"#
        )
    };
    let text = |xyz: &str| {
        robot(&format!(
            r#"{}<link name="virtual"/><link name="thigh">{}</link>{}{}"#,
            link("pelvis"),
            inertial(2.0, "0 0 0", [0.25, 0.5, 0.125]),
            revolute("yaw", "pelvis", "virtual", "0 0 -0.1"),
            spin(xyz),
        ))
    };
    let e = parse(&text("0 0 -0.3")).unwrap_err();
    assert_eq!(e.element, r#"link "virtual" <inertial><mass value>"#);
    assert!(
        e.reason.starts_with(
            r#"joints "yaw" and "spin" move about one line with only this massless link"#
        ),
        "{e}"
    );
    assert!(parse(&text("0.2 0 0")).is_ok());
    // A link of no mass but some inertia is no frame: refused.
    let text = robot(&format!(
        r#"{}<link name="virtual">{}</link><link name="thigh">{}</link>{}{roll}"#,
        link("pelvis"),
        inertial(0.0, "0 0 0", [0.1, 0.1, 0.1]),
        inertial(2.0, "0 0 0", [0.25, 0.5, 0.125]),
        revolute("yaw", "pelvis", "virtual", "0 0 -0.1"),
    ));
    let e = parse(&text).unwrap_err();
    assert_eq!(e.element, r#"link "virtual" <inertial><mass value>"#);
    assert!(
        e.reason
            .starts_with(r#"the body joint "yaw" moves has a total mass of 0 kg: "#),
        "{e}"
    );
}

#[test]
fn zero_mass_leaves_are_merged_and_mimic_joints_need_the_option() {
    let text = robot(&format!(
        r#"{}{}{}<link name="tcp"/>{}{}{}
        <joint name="f2" type="prismatic"><parent link="hand"/><child link="f2l"/><axis xyz="0 1 0"/><limit lower="0" upper="0.04" effort="20" velocity="0.2"/><mimic joint="f1" multiplier="-1" offset="0.01"/></joint>
        {}"#,
        link("base"),
        link("hand"),
        link("f1l"),
        link("f2l"),
        revolute("j", "base", "hand", "0 0 1"),
        fixed("tcp_joint", "hand", "tcp", "0 0 0.1", "0 0 0"),
        r#"<joint name="f1" type="prismatic"><parent link="hand"/><child link="f1l"/><axis xyz="0 1 0"/><limit lower="0" upper="0.04" effort="20" velocity="0.2"/></joint>"#,
    ));
    let e = parse(&text).unwrap_err();
    assert_eq!(e.element, r#"joint "f2" <mimic>"#);
    assert!(
        e.reason
            .starts_with(r#"mimics joint "f1": the tree model has no coupled joints"#),
        "{e}"
    );
    let m = parse_opts(
        &text,
        LoadOptions {
            mimic_as_independent: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(m.joints.len(), 3);
    let f2 = &m.joints[m.joint_index("f2").unwrap()];
    assert_eq!(f2.mimic, Some(("f1".to_owned(), -1.0, 0.01)));
    assert_eq!(
        m.notes,
        vec![
            r#"joint "f2" mimics "f1" (multiplier -1, offset 0.01): loaded as an independent joint"#
        ]
    );
    // The massless tcp adds nothing to the hand.
    assert_eq!(m.bodies[1].inertial.mass_kg, 1.0);
    assert_eq!(m.frame("tcp").unwrap().placement.xyz_m, [0.0, 0.0, 0.1]);
    // A mimic on a fixed joint means nothing: ignored, with a note.
    let text = robot(&format!(
        r#"{}{}<joint name="fx" type="fixed"><parent link="a"/><child link="b"/><mimic joint="nothing"/></joint>"#,
        link("a"),
        link("b")
    ));
    let m = parse(&text).unwrap();
    assert_eq!(
        m.notes,
        vec![r#"joint "fx" is fixed: its <mimic joint="nothing"> is ignored"#]
    );
}

/// (what to write, the element refused, the start of the reason).
type Case = (String, &'static str, &'static str);

#[test]
fn refusals_name_the_file_the_element_and_the_reason() {
    let two = format!("{}{}", link("a"), link("b"));
    let ok_joint = revolute("j", "a", "b", "0 0 1");
    let joint_with = |inner: &str, kind: &str| {
        format!(
            r#"{two}<joint name="j" type="{kind}"><parent link="a"/><child link="b"/>{inner}</joint>"#
        )
    };
    let lim = r#"<limit lower="-1" upper="1" effort="1" velocity="1"/>"#;
    let body_with =
        |inertial: &str| format!(r#"{}<link name="b">{inertial}</link>{ok_joint}"#, link("a"));
    let cases: Vec<Case> = vec![
        (String::new(), "<robot>", "no <link>"),
        (
            format!("{two}{}", link("a")),
            r#"link "a""#,
            "declared twice",
        ),
        (
            format!("{two}{ok_joint}{ok_joint}"),
            r#"joint "j""#,
            "declared twice",
        ),
        (
            format!("{two}{}", revolute("j", "a", "c", "0 0 0")),
            r#"joint "j" <child link>"#,
            r#"names a link "c" the file does not have"#,
        ),
        (
            format!("{two}{}", revolute("j", "x", "b", "0 0 0")),
            r#"joint "j" <parent link>"#,
            r#"names a link "x""#,
        ),
        (
            format!("{two}{}", revolute("j", "a", "a", "0 0 0")),
            r#"joint "j""#,
            r#"joins link "a" to itself"#,
        ),
        (
            format!("{two}{}", link("c")),
            "<robot>",
            r#"3 root links ("a", "b", "c")"#,
        ),
        (
            format!(
                "{two}{}{ok_joint}{}{}",
                link("c"),
                revolute("k", "a", "c", "0 0 0"),
                revolute("l", "c", "b", "0 0 0")
            ),
            r#"link "b""#,
            r#"is the child of two joints, "j" and "l": a closed loop"#,
        ),
        (
            format!("{two}{ok_joint}{}", revolute("k", "b", "a", "0 0 0")),
            r#"joint "j""#,
            r#"closes a loop of links "b" → "a" → "b""#,
        ),
        (
            format!(
                "{two}{}{}{ok_joint}{}{}",
                link("c"),
                link("d"),
                revolute("k", "c", "d", "0 0 0"),
                revolute("l", "d", "c", "0 0 0")
            ),
            r#"joint "k""#,
            r#"closes a loop of links "d" → "c" → "d""#,
        ),
        (
            joint_with("", "floating"),
            r#"joint "j""#,
            "a floating joint: accepted only as the one joint of a root link named \"world\"",
        ),
        (joint_with("", "planar"), r#"joint "j""#, "a planar joint"),
        (
            joint_with("", "spherical"),
            r#"joint "j" <limit>"#,
            "a spherical joint needs lower_xyz=\"x y z\" (its per-axis range, rad)",
        ),
        (
            joint_with(
                r#"<limit effort="1" velocity="1" lower_xyz="0 0 -1" upper_xyz="0 0 1"/>"#,
                "spherical",
            ),
            r#"joint "j" <limit>"#,
            "more than one axis locked",
        ),
        (
            joint_with(
                r#"<limit velocity="1" lower_xyz="-1 -1 -1" upper_xyz="1 1 1"/>"#,
                "spherical",
            ),
            r#"joint "j" <limit effort>"#,
            "missing: URDF requires effort",
        ),
        (
            format!(
                "{}{}{}",
                link("a"),
                link("j_x_link"),
                r#"<joint name="j" type="spherical"><parent link="a"/><child link="j_x_link"/><limit effort="1" velocity="1" lower_xyz="-1 -1 -1" upper_xyz="1 1 1"/></joint>"#
            ),
            r#"joint "j""#,
            "a spherical joint is loaded as revolute joints named <joint>_<axis> through links <joint>_<axis>_link, but the file already has \"j_x_link\"",
        ),
        // A spherical joint's own faults, and the tree's faults around one, name the file's
        // elements, not the revolute joints and links it is rewritten as.
        (
            joint_with(
                r#"<limit effort="-10" velocity="1" lower_xyz="-1 -1 -1" upper_xyz="1 1 1"/>"#,
                "spherical",
            ),
            r#"joint "j" <limit effort>"#,
            "-10: must be ≥ 0",
        ),
        (
            format!(
                "{two}{}{}",
                r#"<joint name="j" type="spherical"><parent link="a"/><child link="b"/><limit effort="1" velocity="1" lower_xyz="-1 -1 -1" upper_xyz="1 1 1"/></joint>"#,
                revolute("j", "a", "b", "0 0 0")
            ),
            r#"joint "j""#,
            "declared twice",
        ),
        (
            format!(
                "{two}{}",
                r#"<joint name="j" type="spherical"><parent link="b"/><child link="b"/><limit effort="1" velocity="1" lower_xyz="-1 -1 -1" upper_xyz="1 1 1"/></joint>"#
            ),
            r#"joint "j""#,
            r#"joins link "b" to itself"#,
        ),
        (
            format!(
                "{two}{}{}{}",
                link("c"),
                r#"<joint name="j" type="spherical"><parent link="a"/><child link="b"/><limit effort="1" velocity="1" lower_xyz="-1 -1 -1" upper_xyz="1 1 1"/></joint>"#,
                revolute("k", "c", "b", "0 0 0")
            ),
            r#"link "b""#,
            r#"is the child of two joints, "j" and "k""#,
        ),
        (
            format!(
                "{two}{}{}{}",
                link("c"),
                r#"<joint name="j" type="spherical"><parent link="a"/><child link="b"/><limit effort="1" velocity="1" lower_xyz="-1 -1 -1" upper_xyz="1 1 1"/></joint>"#,
                r#"<joint name="k" type="revolute"><parent link="b"/><child link="c"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/><mimic joint="j_x"/></joint>"#
            ),
            r#"joint "k" <mimic joint>"#,
            r#"names a joint "j_x" the file does not have"#,
        ),
        (
            joint_with(
                r#"<limit effort="1" velocity="1" lower_xyz="-1 -1 -1" upper_xyz="1 1 1"/><mimic joint="k"/>"#,
                "spherical",
            ),
            r#"joint "j" <mimic>"#,
            "a spherical joint cannot mimic a joint",
        ),
        (
            format!(
                "{}{}{}{}",
                link("a"),
                link("b"),
                link("c"),
                r#"<joint name="j" type="spherical"><parent link="a"/><child link="b"/><limit effort="1" velocity="1" lower_xyz="-1 -1 -1" upper_xyz="1 1 1"/></joint><joint name="k" type="revolute"><parent link="b"/><child link="c"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/><mimic joint="j"/></joint>"#
            ),
            r#"joint "k" <mimic joint>"#,
            "names joint \"j\", which is spherical",
        ),
        (
            joint_with("", "revolute"),
            r#"joint "j""#,
            "a revolute joint without <limit>: URDF requires",
        ),
        (
            joint_with(r#"<limit velocity="1"/>"#, "prismatic"),
            r#"joint "j" <limit>"#,
            "lower = upper = 0 and effort 0",
        ),
        (
            joint_with(r#"<limit lower="-1" upper="1" velocity="1"/>"#, "revolute"),
            r#"joint "j" <limit effort>"#,
            "missing: URDF requires effort",
        ),
        (
            joint_with(
                r#"<limit lower="1" upper="-1" effort="1" velocity="1"/>"#,
                "revolute",
            ),
            r#"joint "j" <limit>"#,
            "lower 1 > upper -1",
        ),
        (
            joint_with(
                r#"<limit lower="-1" upper="1" effort="-1" velocity="1"/>"#,
                "revolute",
            ),
            r#"joint "j" <limit effort>"#,
            "-1: must be ≥ 0",
        ),
        (
            joint_with(
                r#"<limit lower="-1" upper="1" effort="1" velocity="-2"/>"#,
                "revolute",
            ),
            r#"joint "j" <limit velocity>"#,
            "-2: must be ≥ 0",
        ),
        (
            joint_with(r#"<limit effort="1" velocity="1"/>"#, "continuous"),
            "",
            "",
        ),
        (
            joint_with(&format!(r#"{lim}<dynamics damping="-0.1"/>"#), "revolute"),
            r#"joint "j" <dynamics damping>"#,
            "-0.1: must be ≥ 0",
        ),
        (
            joint_with(&format!(r#"{lim}<dynamics friction="-3"/>"#), "revolute"),
            r#"joint "j" <dynamics friction>"#,
            "-3: must be ≥ 0",
        ),
        (
            joint_with(&format!(r#"{lim}<axis xyz="0 0 0"/>"#), "revolute"),
            r#"joint "j" <axis xyz>"#,
            "[0.0, 0.0, 0.0] has length 0e0: a joint axis must not be zero",
        ),
        (
            joint_with(&format!(r#"{lim}<axis xyz="0 nan 1"/>"#), "revolute"),
            r#"joint "j" <axis xyz>"#,
            r#"not a finite number: "nan""#,
        ),
        (
            joint_with(&format!(r#"{lim}<axis xyz="0 x 1 0"/>"#), "revolute"),
            r#"joint "j" <axis xyz>"#,
            r#"not a number: "x" in "0 x 1 0""#,
        ),
        (
            joint_with(&format!(r#"{lim}<origin xyz="0 0 2000"/>"#), "revolute"),
            r#"joint "j" <origin xyz>"#,
            "2000 m is beyond the bound of ±1000 m",
        ),
        (
            joint_with(&format!(r#"{lim}<origin rpy="0 inf 0"/>"#), "revolute"),
            r#"joint "j" <origin rpy>"#,
            r#"not a finite number: "inf""#,
        ),
        (
            joint_with(&format!(r#"{lim}<mimic joint="zz"/>"#), "revolute"),
            r#"joint "j" <mimic>"#,
            r#"mimics joint "zz""#,
        ),
        (
            body_with(&inertial(-1.0, "0 0 0", [0.1, 0.1, 0.1])),
            r#"link "b" <inertial><mass value>"#,
            "-1 kg: a mass must be ≥ 0",
        ),
        (
            body_with(&inertial(2e6, "0 0 0", [0.1, 0.1, 0.1])),
            r#"link "b" <inertial><mass value>"#,
            "2000000 kg is beyond the bound of 1000000 kg",
        ),
        (
            body_with(&inertial(1.0, "0 0 0", [2e6, 0.1, 0.1])),
            r#"link "b" <inertial><inertia>"#,
            "an entry of 2000000 kg·m² is beyond",
        ),
        (
            body_with(&inertial(1.0, "0 1e4 0", [0.1, 0.1, 0.1])),
            r#"link "b" <inertial><origin xyz>"#,
            "10000 m is beyond the bound",
        ),
        (
            body_with(
                r#"<inertial><mass value="1"/><inertia ixx="1" ixy="2" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>"#,
            ),
            r#"link "b" <inertial><inertia>"#,
            "not a possible inertia tensor: not positive semidefinite (principal moments -1.000000e0",
        ),
        (
            body_with(""),
            r#"link "b" <inertial><mass value>"#,
            r#"the body joint "j" moves has a total mass of 0 kg, and nothing it carries has any: a moving body needs a mass > 0, or none at all"#,
        ),
        (
            body_with(&inertial(1.0, "0 0 0", [0.0, 0.0, 0.0])),
            r#"link "b" <inertial><inertia>"#,
            r#"the inertia of the body joint "j" moves is not positive definite (principal moments 0.000000e0"#,
        ),
        (
            body_with(
                r#"<inertial><mass value="1 2"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>"#,
            ),
            r#"link "b" <inertial><mass value>"#,
            r#"1 number expected, got 2: "1 2""#,
        ),
        (
            body_with(r#"<visual><geometry><box size="1 -1 1"/></geometry></visual>"#),
            r#"link "b" <visual><geometry><box size>"#,
            "-1 m: a size must be ≥ 0",
        ),
        (
            body_with(
                r#"<collision><geometry><mesh filename="meshes/b.stl" scale="1 0 1"/></geometry></collision>"#,
            ),
            r#"link "b" <collision><geometry><mesh scale>"#,
            "0: a scale must be finite and not 0",
        ),
        (
            body_with(
                r#"<collision><geometry><mesh filename="meshes/b.stl"/></geometry></collision>"#,
            ),
            r#"link "b" <collision><geometry><mesh filename>"#,
            r#""meshes/b.stl": resolved to /virtual/meshes/b.stl, which is missing: a mesh must be a regular file"#,
        ),
        (
            body_with(
                r#"<visual><geometry><sphere radius="1"/></geometry></visual><visual><geometry><mesh filename="package://nopkg/b.stl"/></geometry></visual>"#,
            ),
            r#"link "b" <visual #2><geometry><mesh filename>"#,
            r#""package://nopkg/b.stl": no folder of package "nopkg" found (searched the URDF's folder /virtual and its ancestors"#,
        ),
        (
            format!(
                "{two}{}",
                r#"<joint name="j" type="ball"><parent link="a"/><child link="b"/></joint>"#
            ),
            r#"joint "j" <joint type>"#,
            r#""ball" is not a URDF joint type"#,
        ),
        (
            "<robot><link name=\"a\"></robot>".to_owned(),
            "<robot>",
            "not well-formed XML",
        ),
    ];
    for (k, (body, element, reason)) in cases.iter().enumerate() {
        let text = if body.starts_with("<robot>") {
            body.clone()
        } else {
            robot(body)
        };
        match parse(&text) {
            Ok(_) if element.is_empty() => {}
            Ok(m) => panic!("case {k} ({element}): loaded {m:?}"),
            Err(e) => {
                assert_eq!(e.file, Path::new(SOURCE), "case {k}");
                assert_eq!(&e.element, element, "case {k}: {e}");
                assert!(e.reason.starts_with(reason), "case {k}: {e}");
                let shown = e.to_string();
                assert_eq!(
                    shown,
                    format!("{SOURCE}: {element}: {}", e.reason),
                    "case {k}"
                );
            }
        }
    }
}

#[test]
fn meshes_resolve_through_packages_and_can_be_skipped() {
    let root = temp_dir("meshes");
    let urdf = root.join("ws/src/my_robot/urdf/r.urdf");
    for f in [
        "ws/src/my_robot/meshes/base.stl",
        "ws/src/my_robot/meshes/arm.dae",
        "ros/other/meshes/o.stl",
    ] {
        let p = root.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "solid\n").unwrap();
    }
    std::fs::create_dir_all(urdf.parent().unwrap()).unwrap();
    let text = robot(&format!(
        r#"<link name="base">
            <visual><geometry><mesh filename="package://my_robot/meshes/base.stl" scale="0.001 0.001 0.001"/></geometry></visual>
            <collision><geometry><mesh filename="../meshes/base.stl"/></geometry></collision>
        </link>
        <link name="arm">{}
            <visual><geometry><mesh filename="package:///my_robot/meshes/arm.dae"/></geometry></visual>
            <visual><geometry><mesh filename="package://other/meshes/o.stl"/></geometry></visual>
            <collision><geometry><mesh filename="package://my_robot/meshes/missing.stl"/></geometry></collision>
        </link>
        {}"#,
        inertial(1.0, "0 0 0", [0.1, 0.1, 0.1]),
        revolute("j", "base", "arm", "0 0 0")
    ));
    std::fs::write(&urdf, &text).unwrap();
    let search = MeshSearch {
        ros_package_path: vec![root.join("ros")],
        ament_prefix_path: vec![],
    };
    let e = load_with(&urdf, &LoadOptions::default(), &search).unwrap_err();
    assert_eq!(e.file, urdf);
    assert_eq!(
        e.element,
        r#"link "arm" <collision><geometry><mesh filename>"#
    );
    assert!(e.reason.starts_with(r#""package://my_robot/meshes/missing.stl": no regular file "meshes/missing.stl" in package "my_robot": tried "#), "{e}");
    assert!(
        e.reason.contains(
            &root
                .join("ws/src/my_robot/meshes/missing.stl")
                .display()
                .to_string()
        ),
        "{e}"
    );
    let options = LoadOptions {
        skip_missing_meshes: true,
        ..Default::default()
    };
    let m = load_with(&urdf, &options, &search).unwrap();
    assert_eq!(m.source, urdf);
    let mesh = |g: &Geometry| match g {
        Geometry::Mesh { path, scale, .. } => (path.clone(), *scale),
        other => panic!("{other:?}"),
    };
    let base = &m.bodies[0];
    assert_eq!(
        mesh(&base.visuals[0].geometry),
        (root.join("ws/src/my_robot/meshes/base.stl"), [0.001; 3])
    );
    assert_eq!(
        mesh(&base.collisions[0].geometry).0,
        root.join("ws/src/my_robot/urdf/../meshes/base.stl")
    );
    let arm = &m.bodies[1];
    assert_eq!(
        mesh(&arm.visuals[0].geometry),
        (root.join("ws/src/my_robot/meshes/arm.dae"), [1.0; 3])
    );
    assert_eq!(
        mesh(&arm.visuals[1].geometry).0,
        root.join("ros/other/meshes/o.stl")
    );
    assert!(arm.collisions.is_empty());
    assert_eq!(m.notes.len(), 1);
    assert!(m.notes[0].starts_with(r#"link "arm" <collision>: mesh "package://my_robot/meshes/missing.stl" dropped (LoadOptions::skip_missing_meshes): no regular file"#), "{:?}", m.notes);
    // Without the search path, package "other" is not found.
    let e = load_with(&urdf, &options, &MeshSearch::default()).unwrap();
    assert_eq!(e.notes.len(), 2);
}

/// Runs `f` on another thread and fails if it has not returned within 10 s (a FIFO that
/// blocks would hang the test forever otherwise).
fn within_10_s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the loader blocked for 10 s")
}

#[test]
fn fifos_devices_folders_huge_and_deep_files_are_refused() {
    let dir = temp_dir("hostile");
    // A FIFO: refused from its metadata, never opened, nothing blocks.
    let fifo = dir.join("pipe.urdf");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let f = fifo.clone();
    let e = within_10_s(move || load(&f, &LoadOptions::default())).unwrap_err();
    assert_eq!((e.file.as_path(), e.element.as_str()), (fifo.as_path(), ""));
    assert_eq!(e.reason, "not a regular file (a FIFO)");
    assert_eq!(
        e.to_string(),
        format!("{}: not a regular file (a FIFO)", fifo.display())
    );
    // A device and a folder.
    let e = within_10_s(|| read_description(Path::new("/dev/zero"))).unwrap_err();
    assert_eq!(e.reason, "not a regular file (a character device)");
    let e = load(&dir, &LoadOptions::default()).unwrap_err();
    assert_eq!(e.reason, "not a regular file (a folder)");
    let e = load(&dir.join("missing.urdf"), &LoadOptions::default()).unwrap_err();
    assert!(e.reason.starts_with("cannot read: "), "{e}");
    // Over 16 MiB (a sparse file: nothing is written).
    let huge = dir.join("huge.urdf");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len((16 << 20) + 1)
        .unwrap();
    let e = load(&huge, &LoadOptions::default()).unwrap_err();
    assert_eq!(
        e.reason,
        format!(
            "larger than the 16 MiB limit for a URDF file ({} bytes)",
            (16u64 << 20) + 1
        )
    );
    // Nested 100 000 deep: refused by the scan, before any parser could overflow its stack.
    let deep = dir.join("deep.urdf");
    std::fs::write(
        &deep,
        format!(
            "<robot name=\"r\">{}{}</robot>",
            "<link>".repeat(100_000),
            "</link>".repeat(100_000)
        ),
    )
    .unwrap();
    let e = load(&deep, &LoadOptions::default()).unwrap_err();
    assert_eq!(
        e.reason,
        "elements nested deeper than 64 levels (line 1): at most 64"
    );
    // Too many elements, in a file and in a text.
    let many = format!(
        "<robot name=\"r\">{}</robot>",
        "<link name=\"x\"/>".repeat(100_000)
    );
    let e = parse(&many).unwrap_err();
    assert!(
        e.reason.starts_with("more than 100000 elements (line 1)"),
        "{e}"
    );
    assert_eq!(e.element, "");
    // Entity declarations (a "billion laughs") are refused by the XML parser, unexpanded.
    let laughs = format!(
        "<?xml version=\"1.0\"?>\n<!DOCTYPE robot [\n<!ENTITY a \"aaaaaaaa\">\n<!ENTITY b \"{}\">\n]>\n<robot name=\"&b;\"><link name=\"a\"/></robot>",
        "&a;".repeat(1000)
    );
    let e = parse(&laughs).unwrap_err();
    assert_eq!(e.element, "<robot>");
    assert!(e.reason.starts_with("not well-formed XML"), "{e}");
    // Not UTF-8.
    let bin = dir.join("bin.urdf");
    std::fs::write(&bin, b"<robot>\xff</robot>").unwrap();
    let e = load(&bin, &LoadOptions::default()).unwrap_err();
    assert_eq!(e.reason, "not UTF-8 text (invalid byte at offset 7)");
}

/// One real robot: the file, the options, and what it must give.
struct Real {
    file: &'static str,
    floating: bool,
    bodies: usize,
    joints: usize,
    frames: usize,
    meshes: usize,
    notes: usize,
    /// Σ of every body's mass, kg (Pinocchio's total plus a fixed base's own).
    mass_kg: f64,
}

const REAL: [Real; 6] = [
    Real {
        file: "panda_description/urdf/panda.urdf",
        floating: false,
        bodies: 10,
        joints: 9,
        frames: 13,
        meshes: 20,
        notes: 1,
        mass_kg: 17.451901,
    },
    Real {
        file: "ur_description/urdf/ur5_robot.urdf",
        floating: false,
        bodies: 7,
        joints: 6,
        frames: 11,
        meshes: 14,
        notes: 0,
        mass_kg: 20.9939,
    },
    Real {
        file: "talos_data/robots/talos_left_arm.urdf",
        floating: false,
        bodies: 8,
        joints: 7,
        frames: 17,
        meshes: 30,
        notes: 6,
        mass_kg: 9.458441,
    },
    Real {
        file: "so_arm_description/urdf/so100.urdf",
        floating: false,
        bodies: 7,
        joints: 6,
        frames: 7,
        meshes: 18,
        notes: 0,
        mass_kg: 1.6089654,
    },
    Real {
        file: "solo_description/robots/solo12.urdf",
        floating: true,
        bodies: 13,
        joints: 12,
        frames: 17,
        meshes: 34,
        notes: 0,
        mass_kg: 2.50000279,
    },
    Real {
        file: "talos_data/robots/talos_full_v2.urdf",
        floating: true,
        bodies: 45,
        joints: 44,
        frames: 60,
        meshes: 95,
        notes: 12,
        mass_kg: 93.335724,
    },
];

fn real(file: &str, floating: bool) -> RobotModel {
    let path = support::robots_dir().join(file);
    let options = LoadOptions {
        mimic_as_independent: true,
        floating_base: floating,
        skip_missing_meshes: false,
    };
    load(&path, &options).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_real_robots_load_and_build_trees() {
    for r in &REAL {
        let m = real(r.file, r.floating);
        let meshes: Vec<&PathBuf> = m
            .bodies
            .iter()
            .flat_map(|b| b.visuals.iter().chain(&b.collisions))
            .filter_map(|s| match &s.geometry {
                Geometry::Mesh { path, .. } => Some(path),
                _ => None,
            })
            .collect();
        let mass: f64 = m.bodies.iter().map(|b| b.inertial.mass_kg).sum();
        println!(
            "{}: {} bodies, {} joints, {} frames, {} meshes resolved, {} notes, {:.7} kg, base {:?}",
            r.file,
            m.bodies.len(),
            m.joints.len(),
            m.frames.len(),
            meshes.len(),
            m.notes.len(),
            mass,
            m.base
        );
        assert_eq!(
            (
                m.bodies.len(),
                m.joints.len(),
                m.frames.len(),
                meshes.len(),
                m.notes.len()
            ),
            (r.bodies, r.joints, r.frames, r.meshes, r.notes),
            "{}",
            r.file
        );
        assert!((mass - r.mass_kg).abs() < 1e-9, "{}: {mass}", r.file);
        assert!(meshes.iter().all(|p| p.is_file()), "{}", r.file);
        assert_eq!(
            m.base,
            if r.floating {
                BaseKind::Floating
            } else {
                BaseKind::Fixed
            }
        );
        let tree = m.tree::<64>().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(tree.nv(), r.joints + if r.floating { 6 } else { 0 });
        assert_eq!(tree.joint_count(), r.joints);
    }
}

#[test]
fn the_real_robots_agree_with_pinocchio() {
    // Bodies merged through fixed joints, by joint name: (robot, joint, mass, com) from
    // Pinocchio 4.1's model.inertias (mimic joints independent there).
    let cases = [
        (
            "panda_description/urdf/panda.urdf",
            false,
            "panda_joint7",
            1.465522,
            [
                0.0017561014923953414,
                0.0013882015818676191,
                0.09915644298345573,
            ],
        ),
        (
            "talos_data/robots/talos_left_arm.urdf",
            false,
            "arm_left_7_joint",
            1.5236210000000001,
            [
                0.0018300317631484639,
                0.0012079434439404534,
                -0.10198214728597202,
            ],
        ),
        (
            "talos_data/robots/talos_full_v2.urdf",
            true,
            "arm_left_7_joint",
            1.041975,
            [
                0.0021539331337128488,
                0.003616972666330341,
                -0.08379478655054104,
            ],
        ),
        (
            "solo_description/robots/solo12.urdf",
            true,
            "FL_KFE",
            0.03763607,
            [0.0, 0.007899211229132053, -0.10224903071020168],
        ),
    ];
    for (file, floating, joint, mass, com) in cases {
        let m = real(file, floating);
        let k = m.joint_index(joint).unwrap();
        let b = &m.bodies[k + 1].inertial;
        assert!(
            (b.mass_kg - mass).abs() <= 1e-12,
            "{file} {joint}: {}",
            b.mass_kg
        );
        assert!(
            close(&b.com_m, &com, 1e-15),
            "{file} {joint}: {:?}",
            b.com_m
        );
    }
    // Panda's inertia of joint 7's body (link7 with link8, hand and tcp merged): ixx, ixz.
    let m = real("panda_description/urdf/panda.urdf", false);
    let b = &m.bodies[m.joint_index("panda_joint7").unwrap() + 1];
    assert_eq!(b.link, "panda_link7");
    assert!((b.inertial.inertia_kgm2[0] - 0.016396041602866757).abs() < 1e-15);
    assert!((b.inertial.inertia_kgm2[2] - -0.0007101156156540998).abs() < 1e-15);
    // Talos's floating base (base_link with the imu merged): Pinocchio's root_joint body.
    let m = real("talos_data/robots/talos_full_v2.urdf", true);
    assert!((m.bodies[0].inertial.mass_kg - 15.36284).abs() < 1e-12);
    assert!(close(
        &m.bodies[0].inertial.com_m,
        &[-0.05709419, 0.00153054, -0.0762521],
        1e-15
    ));
}

#[test]
fn the_real_robots_refuse_what_needs_an_option() {
    let robots = support::robots_dir();
    let defaults = LoadOptions::default();
    // Panda's second finger and Talos's grippers mimic; Talos's fixed-joint mimics are ignored.
    let e = load(&robots.join("panda_description/urdf/panda.urdf"), &defaults).unwrap_err();
    assert_eq!(e.element, r#"joint "panda_finger_joint2" <mimic>"#);
    let e = load(
        &robots.join("talos_data/robots/talos_full_v2.urdf"),
        &defaults,
    )
    .unwrap_err();
    assert_eq!(
        e.element,
        r#"joint "gripper_left_inner_double_joint" <mimic>"#
    );
    let m = load(
        &robots.join("talos_data/robots/talos_left_arm.urdf"),
        &defaults,
    )
    .unwrap();
    assert!(
        m.notes
            .iter()
            .all(|n| n.ends_with(r#"is fixed: its <mimic joint="gripper_left_joint"> is ignored"#))
    );
    // UR5 is welded to "world" at the identity: "world" is a frame on the base.
    let m = load(
        &robots.join("ur_description/urdf/ur5_robot.urdf"),
        &defaults,
    )
    .unwrap();
    assert_eq!(m.bodies[0].link, "base_link");
    assert_eq!(m.frame("world").unwrap().body, 0);
    let e = load(
        &robots.join("ur_description/urdf/ur5_robot.urdf"),
        &LoadOptions {
            floating_base: true,
            ..defaults
        },
    )
    .unwrap_err();
    assert_eq!(e.element, r#"joint "world_joint""#);
}

/// The humanoid's description (`models/humanoid15.urdf`: ball joints, two-axis ankles, per-axis
/// ranges in `<limit lower_xyz upper_xyz>`) through the one loader: each ball joint becomes the
/// three revolute coordinates the humanoid's own tree (`HumanoidTree`) gives it, in the same
/// order, so the two trees have the same joint-space mass matrix and gravity at any pose.
#[test]
fn the_humanoid_s_ball_joints_load_as_the_coordinates_of_its_own_tree() {
    use control_core::articulated::nalgebra::{Isometry3, Vector3};
    use control_core::tree::Tree;
    use robot_model::humanoid::{HumanoidModel, HumanoidTree, JointKind};

    const N: usize = 34; // 6 + 28
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/humanoid15.urdf");
    let options = LoadOptions {
        floating_base: true,
        ..LoadOptions::default()
    };
    let model = load(&path, &options).unwrap();
    let human = HumanoidModel::load(&path).unwrap();
    let shape = HumanoidTree::new(&human, &|_| true).unwrap();
    assert_eq!((model.joints.len(), shape.joints.len()), (28, 28));
    assert_eq!(model.base, BaseKind::Floating);
    // 6 ball joints and 2 ankles, each with a note; the links between their coordinates are
    // massless frames; every URDF link is still a frame by its name.
    let balls = human
        .joints
        .iter()
        .filter(|j| !matches!(j.kind, JointKind::Hinge { .. }))
        .count();
    assert_eq!(balls, 8);
    let spherical_notes = model
        .notes
        .iter()
        .filter(|n| n.contains("(spherical,"))
        .count();
    assert_eq!(spherical_notes, 8, "{:?}", model.notes);
    assert_eq!(model.bodies.iter().filter(|b| b.is_massless()).count(), 14);
    for body in &human.bodies {
        assert!(model.frame(&body.name).is_some(), "{}", body.name);
    }
    let hip = model.joint_index("left_hip_x").unwrap();
    assert_eq!(model.joints[hip].axis, [1.0, 0.0, 0.0]);
    assert!(model.joint_index("left_hip").is_none());

    // The humanoid tree's coordinate k is the model's joint `perm[k]`: a hinge by its name, a
    // ball's or ankle's coordinate by its joint's name and its axis.
    let mut perm = Vec::new();
    for (g, group) in shape.groups.iter().enumerate() {
        let joint = &human.joints[g];
        for spec in &shape.joints[group.first..group.first + group.count] {
            let name = match joint.kind {
                JointKind::Hinge { .. } => joint.name.clone(),
                _ => {
                    let axis = spec.axis.iter().position(|&a| a == 1.0).unwrap();
                    format!("{}_{}", joint.name, ["x", "y", "z"][axis])
                }
            };
            perm.push(model.joint_index(&name).unwrap_or_else(|| panic!("{name}")));
        }
    }
    let ours: Tree<N> = model.tree().unwrap();
    let theirs = Tree::<N>::new(&shape.spec()).unwrap();
    let gravity = Vector3::new(0.0, -9.81, 0.0);
    let mut seed = 0x5eed_u64;
    let mut uniform = |lo: f64, hi: f64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (hi - lo) * ((seed >> 11) as f64 / (1u64 << 53) as f64)
    };
    let (mut worst_m, mut worst_g) = (0.0f64, 0.0f64);
    for _ in 0..20 {
        let mut q_theirs = [0.0; N];
        let mut q_ours = [0.0; N];
        for (k, &j) in perm.iter().enumerate() {
            let (lo, hi) = model.joints[j].limits.unwrap();
            q_theirs[k] = uniform(lo, hi);
            q_ours[j] = q_theirs[k];
        }
        let base = Isometry3::identity();
        let a = ours.kinematics(&base, &q_ours).unwrap();
        let b = theirs.kinematics(&base, &q_theirs).unwrap();
        let (ma, mb) = (a.mass_matrix().unwrap(), b.mass_matrix().unwrap());
        let (ga, gb) = (a.gravity(&gravity).unwrap(), b.gravity(&gravity).unwrap());
        let scale = mb.abs().max();
        for (k, &j) in perm.iter().enumerate() {
            for (l, &i) in perm.iter().enumerate() {
                worst_m = worst_m.max((ma[(6 + j, 6 + i)] - mb[(6 + k, 6 + l)]).abs() / scale);
            }
            worst_g = worst_g.max((ga[6 + j] - gb[6 + k]).abs() / gb.abs().max());
        }
        let (mass_a, _) = a.center_of_mass().unwrap();
        let (mass_b, _) = b.center_of_mass().unwrap();
        assert!(
            (mass_a - mass_b).abs() < 1e-12 * mass_b,
            "{mass_a} vs {mass_b}"
        );
    }
    println!(
        "humanoid15, 20 poses: joint-space mass matrix {worst_m:.1e}, gravity {worst_g:.1e} (relative to the largest entry)"
    );
    assert!(
        worst_m < 1e-14 && worst_g < 1e-14,
        "{worst_m:e} {worst_g:e}"
    );
}
