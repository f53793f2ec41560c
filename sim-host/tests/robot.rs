//! The robot plant (`sim_host::robot`) against the controller's own dynamics
//! (`control_core::tree::Tree`) built from the same `robot_model::RobotModel`: a hand-written
//! fixed-base tree with fixed, prismatic, revolute and continuous joints and STL meshes, a
//! hand-written floating tree and Solo-12 (mass matrix, centre of mass, generalized gravity at
//! random poses, generalized forces acting on their joint only); Panda, UR5, Talos's left arm
//! and SO-100 (mass matrix and gravity at random poses: links whose principal axes are not their
//! frames'); Panda and Talos's left arm holding still under the tree's gravity compensation;
//! Solo-12 standing on the ground under a PD; the project's humanoid (ball joints as revolute
//! coordinates) against its tree and standing under a PD; the planar walker (its planar root as
//! a fixed-base chain) falling as on its own plant; scenes refused naming the file, the field and the
//! reason; a robot scene hosted in lockstep and through the `sim-host` binary.
//!
//! The real robots come from example-robot-data, found by `scripts/example-robot-data.sh`: these
//! tests fail with its message when it cannot find (or install) them.
#![allow(missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;

use control_core::frames::{MAX_FRAME_LEN, StateFlags, StateFrame, TORQUE_FRAME_LEN, TorqueFrame};
use control_core::tree::{BaseKind, Placement, Tree};
use rapier3d::na::{Isometry3, Matrix3, Rotation3, Translation3, UnitQuaternion, Vector3};
use robot_model::{LoadOptions, RobotModel};
use sim_host::host::run_lockstep;
use sim_host::robot::{CollisionMode, Ground, RobotPlant, RobotScene};
use sim_host::{PlantScene, RunEnd};
use transport::{FrameLink, FrameTransport, SeqPacket};

#[path = "support/mesh.rs"]
mod mesh;
#[path = "support/stand_gains.rs"]
mod stand_gains;
use mesh::{ascii_stl, binary_stl, box_mesh};

const G: [f64; 3] = [0.0, 0.0, -9.81];
/// Poses per comparison.
const POSES: usize = 20;

// ---- Helpers --------------------------------------------------------------------------------

/// The robots folder of example-robot-data, or a failure with the script's own message.
fn robots() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/example-robot-data.sh");
    let out = Command::new("sh")
        .arg(&script)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// A file in this test process's temporary folder, written whole then renamed into place (the
/// tests run in parallel and write some of the same files: a reader never sees half of one).
fn temp(name: &str, bytes: &[u8]) -> PathBuf {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!("sim-host-robot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let part = dir.join(format!(".{name}.{n}.part"));
    std::fs::write(&part, bytes).unwrap();
    std::fs::rename(&part, &p).unwrap();
    p
}

/// A deterministic uniform generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }
}

fn iso(p: &Placement) -> Isometry3<f64> {
    let r = p.rotation;
    let m = Matrix3::new(
        r[0][0], r[0][1], r[0][2], r[1][0], r[1][1], r[1][2], r[2][0], r[2][1], r[2][2],
    );
    Isometry3::from_parts(
        Translation3::new(p.xyz_m[0], p.xyz_m[1], p.xyz_m[2]),
        UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(m)),
    )
}

/// A random configuration: each joint uniform within its limits (±π when continuous).
fn random_q(rng: &mut Rng, limits: &[Option<(f64, f64)>]) -> Vec<f64> {
    limits
        .iter()
        .map(|l| match *l {
            Some((lo, hi)) => rng.range(lo, hi),
            None => rng.range(-std::f64::consts::PI, std::f64::consts::PI),
        })
        .collect()
}

/// A random base pose: position within ±1 m, orientation uniform in roll–pitch–yaw.
fn random_base(rng: &mut Rng) -> Placement {
    let pi = std::f64::consts::PI;
    Placement::from_xyz_rpy(
        [
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
        ],
        [rng.range(-pi, pi), rng.range(-1.5, 1.5), rng.range(-pi, pi)],
    )
}

fn padded<const N: usize>(q: &[f64]) -> [f64; N] {
    let mut a = [0.0; N];
    a[..q.len()].copy_from_slice(q);
    a
}

/// max |a − b| / max |b| over the entries.
fn rel(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let diff = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    diff / scale
}

/// The worst relative errors of the plant against the tree over `POSES` random poses: mass
/// matrix (in Pinocchio's convention), centre of mass (over the pose's distance scale: 1 m),
/// generalized gravity.
#[derive(Debug, Default)]
struct Errors {
    mass_matrix: f64,
    mass_diagonal: f64,
    com_m: f64,
    gravity: f64,
}

fn compare<const N: usize>(
    plant: &mut RobotPlant,
    tree: &Tree<N>,
    rng: &mut Rng,
    random_bases: bool,
) -> Errors {
    let limits = plant.joint_limits();
    let fixed_base = plant.base_pose();
    let nv = plant.nv();
    let mut e = Errors::default();
    for _ in 0..POSES {
        let base = if random_bases {
            random_base(rng)
        } else {
            fixed_base
        };
        let q = random_q(rng, &limits);
        plant.set_configuration(&base, &q).unwrap();
        let kin = tree.kinematics(&iso(&base), &padded::<N>(&q)).unwrap();
        let mt = kin.mass_matrix().unwrap();
        let mp = plant.mass_matrix_base_frame();
        let flat_t: Vec<f64> = (0..nv)
            .flat_map(|i| (0..nv).map(move |j| (i, j)))
            .map(|(i, j)| mt[(i, j)])
            .collect();
        let flat_p: Vec<f64> = mp.iter().flatten().copied().collect();
        e.mass_matrix = e.mass_matrix.max(rel(&flat_p, &flat_t));
        for i in 0..nv {
            e.mass_diagonal = e.mass_diagonal.max((mp[i][i] / mt[(i, i)] - 1.0).abs());
        }
        let (_, com) = kin.center_of_mass().unwrap();
        let cp = plant.centre_of_mass();
        e.com_m = e
            .com_m
            .max((0..3).map(|k| (cp[k] - com[k]).abs()).fold(0.0, f64::max));
        let gt = kin.gravity(&Vector3::from(G)).unwrap();
        let gp = plant.generalized_gravity();
        e.gravity = e.gravity.max(rel(&gp, &gt.as_slice()[..nv]));
    }
    e
}

/// From rest in zero gravity, one step with a generalized force on joint `k` alone, sized to
/// give that joint about 1e-3 rad/s (or m/s) in the step (so that the velocity-dependent forces
/// within the step stay negligible): the force the plant realized, M·Δv/dt (Pinocchio's
/// convention), should be that force on joint k and 0 everywhere else. Returns the force applied
/// and the realized vector.
fn realized_force(
    plant: &mut RobotPlant,
    base: &Placement,
    q: &[f64],
    k: usize,
    sign: f64,
) -> (f64, Vec<f64>) {
    plant.set_configuration(base, q).unwrap();
    let m = plant.mass_matrix_base_frame();
    let dt = plant.clock().dt_s();
    let offset = plant.nv() - plant.joint_count();
    let f = sign * 1e-3 * m[offset + k][offset + k] / dt;
    let mut torques = vec![0.0; plant.joint_count()];
    torques[k] = f;
    plant.step(&torques);
    let dv = plant.generalized_velocity();
    let realized = (0..dv.len())
        .map(|i| (0..dv.len()).map(|j| m[i][j] * dv[j]).sum::<f64>() / dt)
        .collect();
    (f, realized)
}

/// The realized force on joint `k` over the applied one, and the largest realized on any other
/// velocity index over the applied one.
fn leak(f: f64, tau: &[f64], index: usize) -> (f64, f64) {
    let others = (0..tau.len())
        .filter(|&i| i != index)
        .map(|i| tau[i].abs())
        .fold(0.0, f64::max);
    (tau[index] / f, others / f.abs())
}

// ---- (1) A hand-written fixed-base tree with meshes -----------------------------------------

/// A base, a carriage sliding on it (prismatic, its frame turned), an upper arm on the carriage
/// (revolute about a skew axis) carrying a tool (fixed joint: merged) and a hand on the tool
/// (continuous), and a side arm on the carriage (revolute): a tree of 4 joints. The carriage's
/// collision is a binary STL box (scaled), the tool's an ASCII STL tetrahedron.
fn small_fixed_urdf() -> PathBuf {
    let (v, f) = box_mesh([-0.05, -0.04, -0.02], [0.07, 0.04, 0.03]);
    temp("carriage.stl", &binary_stl(&v, &f));
    let tv = vec![
        [0.0f32, 0.0, 0.0],
        [0.05, 0.0, 0.0],
        [0.0, 0.05, 0.0],
        [0.0, 0.0, 0.05],
    ];
    let tf = vec![[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]];
    temp("tool.stl", &ascii_stl("tetra", &tv, &tf));
    let inertial = |m: f64, xyz: &str, rpy: &str, i: &str| {
        format!(
            r#"<inertial><origin xyz="{xyz}" rpy="{rpy}"/><mass value="{m}"/><inertia {i}/></inertial>"#
        )
    };
    let urdf = format!(
        r#"<?xml version="1.0"?>
<robot name="small_fixed">
  <link name="base">
    {base_in}
    <collision><geometry><box size="0.3 0.3 0.05"/></geometry></collision>
  </link>
  <joint name="slide" type="prismatic">
    <parent link="base"/><child link="carriage"/>
    <origin xyz="0.1 -0.05 0.08" rpy="0 0 0.3"/>
    <axis xyz="1 0.2 0"/>
    <limit lower="-0.4" upper="0.4" effort="200" velocity="1"/>
  </joint>
  <link name="carriage">
    {carriage_in}
    <collision><origin xyz="0 0 0.01"/><geometry><mesh filename="carriage.stl" scale="1.5 1 2"/></geometry></collision>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="carriage"/><child link="upper"/>
    <origin xyz="0.02 0.1 0.2" rpy="0.2 -0.1 0.4"/>
    <axis xyz="0 1 1"/>
    <limit lower="-2" upper="2" effort="80" velocity="2"/>
  </joint>
  <link name="upper">
    {upper_in}
    <collision><origin xyz="0 0 0.15"/><geometry><cylinder radius="0.03" length="0.3"/></geometry></collision>
  </link>
  <joint name="tool_mount" type="fixed">
    <parent link="upper"/><child link="tool"/>
    <origin xyz="0 0.02 0.3" rpy="0.5 0 0.1"/>
  </joint>
  <link name="tool">
    {tool_in}
    <collision><geometry><mesh filename="tool.stl"/></geometry></collision>
  </link>
  <joint name="wrist" type="continuous">
    <parent link="tool"/><child link="hand"/>
    <origin xyz="0.05 0 0.05" rpy="0 0.3 0"/>
    <axis xyz="1 0 0"/>
    <limit effort="20" velocity="3"/>
  </joint>
  <link name="hand">
    {hand_in}
    <collision><geometry><sphere radius="0.04"/></geometry></collision>
  </link>
  <joint name="side" type="revolute">
    <parent link="carriage"/><child link="side_arm"/>
    <origin xyz="-0.05 0 0.05" rpy="0 0 -1.2"/>
    <axis xyz="0 0 1"/>
    <limit lower="-1.5" upper="1.5" effort="40" velocity="2"/>
  </joint>
  <link name="side_arm">
    {side_in}
    <collision><origin xyz="0.1 0 0" rpy="0 1.5707963267948966 0"/><geometry><capsule radius="0.02" length="0.15"/></geometry></collision>
  </link>
</robot>"#,
        base_in = inertial(
            5.0,
            "0 0 0",
            "0 0 0",
            r#"ixx="0.05" ixy="0" ixz="0" iyy="0.05" iyz="0" izz="0.08""#
        ),
        carriage_in = inertial(
            1.5,
            "0.01 0.02 0.005",
            "0.1 0 0.2",
            r#"ixx="0.004" ixy="0.0003" ixz="-0.0002" iyy="0.006" iyz="0.0001" izz="0.007""#
        ),
        upper_in = inertial(
            0.9,
            "0 0.01 0.15",
            "0 0 0",
            r#"ixx="0.007" ixy="0" ixz="0.0001" iyy="0.0068" iyz="0" izz="0.0006""#
        ),
        tool_in = inertial(
            0.3,
            "0.02 0.01 0.01",
            "0.3 0.2 0.1",
            r#"ixx="0.0004" ixy="0" ixz="0" iyy="0.0003" iyz="0" izz="0.0002""#
        ),
        hand_in = inertial(
            0.4,
            "0.03 0 0.01",
            "0 0 0",
            r#"ixx="0.0003" ixy="0.00001" ixz="0" iyy="0.0005" iyz="0" izz="0.0005""#
        ),
        side_in = inertial(
            0.6,
            "0.1 0 0",
            "0 0 0",
            r#"ixx="0.0002" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.002""#
        ),
    );
    temp("small_fixed.urdf", urdf.as_bytes())
}

#[test]
fn a_small_fixed_tree_with_meshes_matches_the_tree_and_its_forces_act_on_their_joint_only() {
    let path = small_fixed_urdf();
    let model = robot_model::load(&path, &LoadOptions::default()).unwrap();
    assert_eq!(model.base, BaseKind::Fixed);
    assert_eq!(model.joints.len(), 4);
    let mut scene = RobotScene::new(&path, 0.1);
    scene.base_xyz_m = [0.2, -0.1, 0.5];
    scene.base_rpy_rad = [0.1, 0.2, -0.3];
    scene.initial_q.insert(String::from("shoulder"), 0.3);
    let mut plant = RobotPlant::new(&scene).unwrap();
    assert_eq!(plant.joint_names(), ["slide", "shoulder", "wrist", "side"]);
    assert_eq!(
        plant.body_names(),
        ["base", "carriage", "upper", "hand", "side_arm"]
    );
    assert_eq!(plant.link_body_id("tool").map(|b| b.0), Some(2));
    assert_eq!(plant.torque_limits(), [200.0, 80.0, 20.0, 40.0]);
    assert!(plant.notes().is_empty(), "{:?}", plant.notes());
    // The mass Rapier holds is the merged one (upper + tool).
    let masses = plant.body_masses();
    assert!((masses[2] - 1.2).abs() < 1e-6, "{masses:?}");

    // Steps under gravity; the state frame carries the joints and the bodies.
    let mut f = plant.state_frame();
    for _ in 0..20 {
        f = plant.step(&[0.0, 0.0, 0.0, 0.0]);
    }
    assert_eq!((f.step, f.joints.len(), f.bodies.len()), (20, 4, 5));
    assert!(f.joints.iter().all(|j| j.position_rad.is_finite()));

    let tree: Tree<8> = model.tree().unwrap();
    let mut rng = Rng(0x5eed_0001);
    let e = compare(&mut plant, &tree, &mut rng, false);
    println!(
        "small fixed tree, {POSES} poses: mass matrix {:.2e} (diagonal {:.2e}) relative, centre of mass {:.2e} m, gravity {:.2e} relative",
        e.mass_matrix, e.mass_diagonal, e.com_m, e.gravity
    );
    assert!(e.mass_matrix < 1e-5 && e.mass_diagonal < 1e-5, "{e:?}");
    assert!(e.com_m < 1e-6 && e.gravity < 1e-5, "{e:?}");
    // Random fixed-base poses: the welded base moves with the configuration.
    let e = compare(&mut plant, &tree, &mut rng, true);
    assert!(
        e.mass_matrix < 1e-5 && e.com_m < 1e-6 && e.gravity < 1e-5,
        "{e:?}"
    );

    // A generalized force on one joint acts on that joint alone: M·Δv/dt from rest is f on it
    // and 0 on the others (prismatic: a force pair at one point; revolute: a torque pair).
    let mut scene = RobotScene::new(&path, 0.1);
    scene.gravity_m_s2 = [0.0; 3];
    scene.dt_s = 0.001;
    let mut plant = RobotPlant::new(&scene).unwrap();
    let base = plant.base_pose();
    let q = [0.1, 0.7, -0.4, 0.5];
    for (k, sign) in [(0, 1.0), (1, 1.0), (2, -1.0), (3, 1.0)] {
        let (f, tau) = realized_force(&mut plant, &base, &q, k, sign);
        let (on, off) = leak(f, &tau, k);
        println!(
            "force {f:.4} on joint `{}`: realized {on:.6} of it, at most {off:.1e} of it on the others",
            plant.joint_names()[k]
        );
        assert!((on - 1.0).abs() < 1e-4 && off < 1e-4, "{f}: {tau:?}");
    }
}

// ---- (2) Floating bases -----------------------------------------------------------------------

/// A floating base (box, with a sensor link merged in off-centre) with a leg (hip about y, knee
/// about a skew axis) and a piston (prismatic along z) carrying a rod.
fn small_floating_urdf() -> PathBuf {
    let urdf = r#"<?xml version="1.0"?>
<robot name="small_floating">
  <link name="torso">
    <inertial><origin xyz="0.02 -0.01 0.03"/><mass value="3"/><inertia ixx="0.03" ixy="0.001" ixz="0" iyy="0.04" iyz="0" izz="0.05"/></inertial>
    <collision><geometry><box size="0.3 0.2 0.1"/></geometry></collision>
  </link>
  <joint name="sensor_mount" type="fixed">
    <parent link="torso"/><child link="sensor"/><origin xyz="0.1 0.05 0.06" rpy="0 0.4 0"/>
  </joint>
  <link name="sensor">
    <inertial><origin xyz="0 0 0.01"/><mass value="0.5"/><inertia ixx="0.0004" ixy="0" ixz="0" iyy="0.0004" iyz="0" izz="0.0002"/></inertial>
  </link>
  <joint name="hip" type="revolute">
    <parent link="torso"/><child link="thigh"/><origin xyz="0.1 0.08 -0.05" rpy="0.1 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="30" velocity="5"/>
  </joint>
  <link name="thigh">
    <inertial><origin xyz="0 0 -0.1"/><mass value="0.8"/><inertia ixx="0.003" ixy="0" ixz="0" iyy="0.003" iyz="0" izz="0.0004"/></inertial>
    <collision><origin xyz="0 0 -0.1"/><geometry><cylinder radius="0.02" length="0.2"/></geometry></collision>
  </link>
  <joint name="knee" type="revolute">
    <parent link="thigh"/><child link="shin"/><origin xyz="0 0 -0.2"/>
    <axis xyz="0.3 1 0.1"/><limit lower="-2.5" upper="0.5" effort="30" velocity="5"/>
  </joint>
  <link name="shin">
    <inertial><origin xyz="0 0.01 -0.1"/><mass value="0.4"/><inertia ixx="0.0015" ixy="0" ixz="0" iyy="0.0015" iyz="0.0001" izz="0.0002"/></inertial>
    <collision><origin xyz="0 0 -0.2"/><geometry><sphere radius="0.02"/></geometry></collision>
  </link>
  <joint name="piston" type="prismatic">
    <parent link="torso"/><child link="rod"/><origin xyz="-0.1 -0.05 0.05" rpy="0 0.2 0.5"/>
    <axis xyz="0 0 1"/><limit lower="0" upper="0.2" effort="100" velocity="1"/>
  </joint>
  <link name="rod">
    <inertial><origin xyz="0 0 0.05"/><mass value="0.3"/><inertia ixx="0.0003" ixy="0" ixz="0" iyy="0.0003" iyz="0" izz="0.00005"/></inertial>
  </link>
</robot>"#;
    temp("small_floating.urdf", urdf.as_bytes())
}

#[test]
fn a_small_floating_tree_matches_the_tree_in_the_base_frame_convention() {
    let path = small_floating_urdf();
    let options = LoadOptions {
        floating_base: true,
        ..LoadOptions::default()
    };
    let model = robot_model::load(&path, &options).unwrap();
    assert_eq!(model.base, BaseKind::Floating);
    let mut scene = RobotScene::new(&path, 0.1);
    scene.floating_base = true;
    scene.base_xyz_m = [0.0, 0.0, 1.0];
    let mut plant = RobotPlant::new(&scene).unwrap();
    assert_eq!(plant.nv(), 9);
    let tree: Tree<12> = model.tree().unwrap();
    let mut rng = Rng(0x5eed_0002);
    let e = compare(&mut plant, &tree, &mut rng, true);
    println!(
        "small floating tree, {POSES} poses: mass matrix {:.2e} (diagonal {:.2e}) relative, centre of mass {:.2e} m, gravity {:.2e} relative",
        e.mass_matrix, e.mass_diagonal, e.com_m, e.gravity
    );
    assert!(e.mass_matrix < 1e-5 && e.mass_diagonal < 1e-5, "{e:?}");
    assert!(e.com_m < 1e-6 && e.gravity < 1e-5, "{e:?}");

    // In Rapier's own convention the matrix differs (the base's velocity is its centre of
    // mass's, in the world): Tᵀ·M·T is what matches.
    let raw = plant.mass_matrix();
    let converted = plant.mass_matrix_base_frame();
    assert!((raw[0][4] - converted[0][4]).abs() > 1e-3, "{raw:?}");

    // Generalized forces on a floating tree: f on the joint, nothing on the base (the
    // reactions on the base cancel their action), nothing on the other joints.
    let mut scene = RobotScene::new(&path, 0.1);
    scene.floating_base = true;
    scene.gravity_m_s2 = [0.0; 3];
    scene.dt_s = 0.001;
    let mut plant = RobotPlant::new(&scene).unwrap();
    let base = Placement::from_xyz_rpy([0.1, 0.2, 0.3], [0.3, -0.2, 1.0]);
    let q = [0.4, -0.8, 0.1];
    for (k, sign) in [(0, 1.0), (1, -1.0), (2, 1.0)] {
        let (f, tau) = realized_force(&mut plant, &base, &q, k, sign);
        let (on, off) = leak(f, &tau, 6 + k);
        println!(
            "floating: force {f:.4} on joint `{}`: realized {on:.6} of it, at most {off:.1e} of it on the others and the base",
            plant.joint_names()[k]
        );
        assert!((on - 1.0).abs() < 1e-4 && off < 1e-4, "{f}: {tau:?}");
    }
}

fn solo12(robots: &Path) -> PathBuf {
    robots.join("solo_description/robots/solo12.urdf")
}

/// Solo-12's nominal standing pose (example-robot-data's SRDF `standing`), by joint name.
fn solo_standing() -> Vec<(String, f64)> {
    let mut q = Vec::new();
    for (leg, haa, hfe, kfe) in [
        ("FL", 0.1, 0.8, -1.6),
        ("FR", -0.1, 0.8, -1.6),
        ("HL", 0.1, -0.8, 1.6),
        ("HR", -0.1, -0.8, 1.6),
    ] {
        q.push((format!("{leg}_HAA"), haa));
        q.push((format!("{leg}_HFE"), hfe));
        q.push((format!("{leg}_KFE"), kfe));
    }
    q
}

#[test]
fn solo12_matches_the_tree_in_the_base_frame_convention() {
    let path = solo12(&robots());
    let mut scene = RobotScene::new(&path, 0.1);
    scene.floating_base = true;
    let t0 = std::time::Instant::now();
    let mut plant = RobotPlant::new(&scene).unwrap();
    println!(
        "solo12 built (convex hulls of its STL meshes) in {:.0} ms",
        t0.elapsed().as_secs_f64() * 1e3
    );
    assert_eq!(plant.nv(), 18);
    let model = robot_model::load(&path, &scene.load_options()).unwrap();
    let tree: Tree<18> = model.tree().unwrap();
    let mut rng = Rng(0x5eed_0003);
    let e = compare(&mut plant, &tree, &mut rng, true);
    println!(
        "solo12, {POSES} poses: mass matrix {:.2e} (diagonal {:.2e}) relative, centre of mass {:.2e} m, gravity {:.2e} relative",
        e.mass_matrix, e.mass_diagonal, e.com_m, e.gravity
    );
    assert!(e.mass_matrix < 1e-5 && e.mass_diagonal < 1e-5, "{e:?}");
    assert!(e.com_m < 1e-6 && e.gravity < 1e-5, "{e:?}");
}

/// A floating robot's plant against its tree (`N` = its degrees of freedom, `massless` the
/// moving bodies without mass) at random poses and base poses; prints the errors.
fn floating_matches_its_tree<const N: usize>(path: &Path, label: &str, seed: u64, massless: usize) {
    let mut scene = RobotScene::new(path, 0.1);
    scene.floating_base = true;
    let mut plant = RobotPlant::new(&scene).unwrap();
    assert_eq!(plant.nv(), N);
    let model = robot_model::load(path, &scene.load_options()).unwrap();
    let none = model.bodies.iter().filter(|b| b.is_massless()).count();
    assert_eq!(none, massless);
    let tree: Tree<N> = model.tree().unwrap();
    let e = compare(&mut plant, &tree, &mut Rng(seed), true);
    println!(
        "{label}, {POSES} poses: mass matrix {:.2e} (diagonal {:.2e}) relative, centre of mass {:.2e} m, gravity {:.2e} relative",
        e.mass_matrix, e.mass_diagonal, e.com_m, e.gravity
    );
    // The diagonal's worst entries are the long limbs' (human.urdf's hands and forearms,
    // 1.1e-5 – 1.3e-5; the same with its virtual links given 1 g and 1e-6 kg·m² each,
    // 1.27e-5): Rapier's f32, not the massless bodies; Solo-12's are 4e-6 – 8e-6.
    assert!(e.mass_matrix < 1e-5 && e.mass_diagonal < 2e-5, "{e:?}");
    assert!(e.com_m < 1e-6 && e.gravity < 1e-5, "{e:?}");
}

/// example-robot-data's `human.urdf`: its multi-axis joints are revolute joints chained through
/// links without `<inertial>` (19 massless bodies in Rapier's multibody), on a floating base.
#[test]
fn human_with_massless_links_matches_the_tree() {
    let path = robots().join("human_description/robots/human.urdf");
    floating_matches_its_tree::<42>(&path, "human", 0x5eed_0004, 19);
}

/// The project's humanoid (`models/humanoid15.urdf`: ball joints with per-axis ranges, two-axis
/// ankles) through the one loader: each ball joint three revolute coordinates through massless
/// links, each ankle two (28 joints, 14 massless bodies), simulated by the robot plant's
/// multibody on a floating base.
#[test]
fn the_humanoid_s_ball_joints_on_the_robot_plant_match_the_tree() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/humanoid15.urdf");
    floating_matches_its_tree::<34>(&path, "humanoid15", 0x5eed_0015, 14);
}

/// Four revolute joints at one point with massless links between them: the hand's orientation
/// has three degrees of freedom, so the fourth joint's motion is one the first three already
/// make, at every pose. The plant refuses it at the start, naming the joint: Rapier's f32
/// Cholesky pivot for it is tiny but positive, so a test for a zero pivot alone lets it through,
/// and such a plant sends non-finite states from its first step.
#[test]
fn joints_that_repeat_a_motion_through_massless_links_are_refused() {
    let joint = |n: &str, p: &str, c: &str, axis: &str| {
        format!(
            r#"<joint name="{n}" type="revolute"><parent link="{p}"/><child link="{c}"/><axis xyz="{axis}"/><limit lower="-1" upper="1" effort="10" velocity="2"/></joint>"#
        )
    };
    let inertial = r#"<inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>"#;
    let urdf = |axes: &[&str]| {
        let mut body =
            format!(r#"<?xml version="1.0"?><robot name="r"><link name="base">{inertial}</link>"#);
        let n = axes.len();
        for (k, axis) in axes.iter().enumerate() {
            let parent = if k == 0 {
                "base".to_owned()
            } else {
                format!("v{k}")
            };
            let child = if k + 1 == n {
                "hand".to_owned()
            } else {
                format!("v{}", k + 1)
            };
            if k + 1 < n {
                body.push_str(&format!(r#"<link name="{child}"/>"#));
            }
            body.push_str(&joint(&format!("j{k}"), &parent, &child, axis));
        }
        body.push_str(&format!(r#"<link name="hand">{inertial}</link></robot>"#));
        body
    };
    let ball = temp("ball3.urdf", urdf(&["0 0 1", "1 0 0", "0 1 0"]).as_bytes());
    assert!(RobotPlant::new(&RobotScene::new(&ball, 0.1)).is_ok());
    let four = temp(
        "ball4.urdf",
        urdf(&["0 0 1", "1 0 0", "0 1 0", "1 1 0"]).as_bytes(),
    );
    let e = RobotPlant::new(&RobotScene::new(&four, 0.1))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("the mass matrix at the start is singular from joint `j3` on"),
        "{e}"
    );
}

// ---- (3) Gravity compensation of real arms ---------------------------------------------------

/// Holds `plant` for `seconds` with the tree's generalized gravity at each step's state as the
/// torques; returns the largest joint excursion from the start (rad or m), the largest joint
/// speed (rad/s or m/s) and the largest torque used relative to its limit.
fn hold<const N: usize>(plant: &mut RobotPlant, tree: &Tree<N>, seconds: f64) -> (f64, f64, f64) {
    let q0: Vec<f64> = plant
        .joint_states()
        .iter()
        .map(|j| j.position_rad)
        .collect();
    let base = iso(&plant.base_pose());
    let limits = plant.torque_limits();
    let steps = (seconds / plant.clock().dt_s()).round() as usize;
    let (mut drift, mut speed, mut load) = (0.0f64, 0.0f64, 0.0f64);
    for _ in 0..steps {
        let q: Vec<f64> = plant
            .joint_states()
            .iter()
            .map(|j| j.position_rad)
            .collect();
        let kin = tree.kinematics(&base, &padded::<N>(&q)).unwrap();
        let g = kin.gravity(&Vector3::from(G)).unwrap();
        let tau = &g.as_slice()[..q.len()];
        assert_eq!(plant.check_torques(tau), Ok(()), "{tau:?}");
        for (t, l) in tau.iter().zip(&limits) {
            load = load.max(t.abs() / l);
        }
        plant.step(tau);
        for (a, b) in plant.joint_states().iter().zip(&q0) {
            drift = drift.max((a.position_rad - b).abs());
            speed = speed.max(a.velocity_rad_s.abs());
        }
    }
    (drift, speed, load)
}

#[test]
fn panda_and_talos_arm_hold_still_under_the_tree_s_gravity_compensation() {
    let robots = robots();
    // Panda: 7 arm joints and two prismatic fingers (the second mimics the first: loaded as
    // independent), its collision meshes STL.
    let mut scene = RobotScene::new(robots.join("panda_description/urdf/panda.urdf"), 1.0);
    scene.mimic_as_independent = true;
    for (name, q) in [
        ("panda_joint1", 0.0),
        ("panda_joint2", -0.785),
        ("panda_joint3", 0.0),
        ("panda_joint4", -2.356),
        ("panda_joint5", 0.0),
        ("panda_joint6", 1.571),
        ("panda_joint7", 0.785),
        ("panda_finger_joint1", 0.02),
        ("panda_finger_joint2", 0.02),
    ] {
        scene.initial_q.insert(name.to_owned(), q);
    }
    let t0 = std::time::Instant::now();
    let mut plant = RobotPlant::new(&scene).unwrap();
    println!(
        "panda built in {:.0} ms; notes: {:?}",
        t0.elapsed().as_secs_f64() * 1e3,
        plant.notes()
    );
    assert_eq!(plant.joint_count(), 9);
    assert!(
        plant
            .notes()
            .iter()
            .any(|n| n.contains("panda_finger_joint2")),
        "{:?}",
        plant.notes()
    );
    let model: RobotModel = robot_model::load(&scene.urdf, &scene.load_options()).unwrap();
    let tree: Tree<9> = model.tree().unwrap();
    let (drift, speed, load) = hold(&mut plant, &tree, 1.0);
    println!(
        "panda under gravity compensation for 1 s: drift {drift:.2e} rad (or m), speeds up to {speed:.2e} rad/s, torques up to {:.1} % of the limits",
        load * 100.0
    );
    assert!(drift < 1e-3 && speed < 1e-3, "{drift} {speed}");
    // Without them, it falls.
    let mut falling = RobotPlant::new(&scene).unwrap();
    for _ in 0..100 {
        falling.step(&[]);
    }
    let fell = falling
        .joint_states()
        .iter()
        .zip(plant.joint_states())
        .map(|(a, b)| (a.position_rad - b.position_rad).abs())
        .fold(0.0, f64::max);
    assert!(fell > 0.05, "{fell}");

    // Talos's left arm: 7 revolute joints with URDF damping and friction (applied), its
    // gripper's mimic joints fixed.
    let mut scene = RobotScene::new(robots.join("talos_data/robots/talos_left_arm.urdf"), 1.0);
    scene.mimic_as_independent = true;
    let model: RobotModel = robot_model::load(&scene.urdf, &scene.load_options()).unwrap();
    // Mid-range: away from the limits, bent under gravity.
    for j in &model.joints {
        if let Some((lo, hi)) = j.limits {
            scene.initial_q.insert(j.name.clone(), lo + 0.4 * (hi - lo));
        }
    }
    let t0 = std::time::Instant::now();
    let mut plant = RobotPlant::new(&scene).unwrap();
    println!(
        "talos_left_arm built in {:.0} ms: {} joints; notes: {:?}",
        t0.elapsed().as_secs_f64() * 1e3,
        plant.joint_count(),
        plant.notes()
    );
    let tree: Tree<16> = model.tree().unwrap();
    let (drift, speed, load) = hold(&mut plant, &tree, 1.0);
    println!(
        "talos_left_arm under gravity compensation for 1 s: drift {drift:.2e} rad, speeds up to {speed:.2e} rad/s, torques up to {:.1} % of the limits",
        load * 100.0
    );
    assert!(drift < 1e-3 && speed < 1e-3, "{drift} {speed}");
    // Without the friction (opted out, and said), the same hold.
    scene.ignore_joint_friction = true;
    let mut plant = RobotPlant::new(&scene).unwrap();
    assert!(
        plant.notes().iter().any(|n| n
            .starts_with("ignore_joint_friction: <dynamics friction> not applied on 7 joint(s)")),
        "{:?}",
        plant.notes()
    );
    let (drift, speed, _) = hold(&mut plant, &tree, 1.0);
    println!(
        "talos_left_arm without joint friction: drift {drift:.2e} rad, speeds up to {speed:.2e} rad/s"
    );
    assert!(drift < 1e-3 && speed < 1e-3, "{drift} {speed}");
    // Without the compensation, it falls (against its friction of 1 N·m per joint).
    scene.ignore_joint_friction = false;
    let mut falling = RobotPlant::new(&scene).unwrap();
    let start = falling.joint_states();
    for _ in 0..100 {
        falling.step(&[]);
    }
    let fell = falling
        .joint_states()
        .iter()
        .zip(&start)
        .map(|(a, b)| (a.position_rad - b.position_rad).abs())
        .fold(0.0, f64::max);
    assert!(fell > 0.05, "{fell}");
}

// ---- (3b) Real arms' dynamics against the tree -----------------------------------------------

/// A fixed-base arm of example-robot-data as the plant builds it (collision meshes hulled, limited
/// joints starting mid-range) against the tree from the same model, at `POSES` random poses.
fn arm_errors<const N: usize>(urdf: &Path, mimic_as_independent: bool, seed: u64) -> Errors {
    let mut scene = RobotScene::new(urdf, 0.1);
    scene.mimic_as_independent = mimic_as_independent;
    let model: RobotModel = robot_model::load(&scene.urdf, &scene.load_options()).unwrap();
    for j in &model.joints {
        if let Some((lo, hi)) = j.limits {
            scene.initial_q.insert(j.name.clone(), 0.5 * (lo + hi));
        }
    }
    let mut plant = RobotPlant::from_model(&scene, &model).unwrap();
    let tree: Tree<N> = model.tree().unwrap();
    compare(&mut plant, &tree, &mut Rng(seed), false)
}

/// Real arms whose links' principal axes are not their frames' (SO-100: every inertia diagonal in
/// descending order; Panda, UR5 and Talos: off-diagonal or unordered inertias): the plant's mass
/// matrix and gravity are the tree's (which agrees with Pinocchio to 1e-15) to Rapier's f32.
#[test]
fn real_arms_mass_matrix_and_gravity_match_the_tree() {
    let robots = robots();
    let arms: [(&str, Errors); 4] = [
        (
            "panda",
            arm_errors::<9>(
                &robots.join("panda_description/urdf/panda.urdf"),
                true,
                0x5eed_0101,
            ),
        ),
        (
            "ur5",
            arm_errors::<6>(
                &robots.join("ur_description/urdf/ur5_robot.urdf"),
                false,
                0x5eed_0102,
            ),
        ),
        (
            "talos_left_arm",
            arm_errors::<16>(
                &robots.join("talos_data/robots/talos_left_arm.urdf"),
                true,
                0x5eed_0103,
            ),
        ),
        (
            "so100",
            arm_errors::<6>(
                &robots.join("so_arm_description/urdf/so100.urdf"),
                false,
                0x5eed_0104,
            ),
        ),
    ];
    for (name, e) in &arms {
        println!(
            "{name}, {POSES} poses: mass matrix {:.2e} (diagonal {:.2e}) relative, centre of mass {:.2e} m, gravity {:.2e} relative",
            e.mass_matrix, e.mass_diagonal, e.com_m, e.gravity
        );
    }
    // SO-100 at q = 0: the diagonal Pinocchio 4.1 gives (5 significant digits).
    let pinocchio = [
        3.0904e-3, 2.9143e-3, 8.2498e-3, 1.1457e-3, 6.5260e-5, 2.1693e-5,
    ];
    let scene = RobotScene::new(robots.join("so_arm_description/urdf/so100.urdf"), 0.1);
    let mut plant = RobotPlant::new(&scene).unwrap();
    plant
        .set_configuration(&plant.base_pose(), &[0.0; 6])
        .unwrap();
    let m = plant.mass_matrix();
    let diagonal: Vec<f64> = (0..6).map(|i| m[i][i]).collect();
    let shown: Vec<String> = diagonal.iter().map(|x| format!("{x:.4e}")).collect();
    println!(
        "so100 at q = 0: mass matrix diagonal [{}] (Pinocchio {pinocchio:?})",
        shown.join(", ")
    );
    for (got, want) in diagonal.iter().zip(pinocchio) {
        assert!(
            (got / want - 1.0).abs() < 1e-4,
            "{diagonal:?} vs {pinocchio:?}"
        );
    }
    for (name, e) in &arms {
        assert!(
            e.mass_matrix < 1e-5 && e.mass_diagonal < 1e-5,
            "{name}: {e:?}"
        );
        assert!(e.com_m < 1e-6 && e.gravity < 1e-5, "{name}: {e:?}");
    }
}

// ---- (4) Solo-12 standing on the ground -------------------------------------------------------

/// The plant of `scene`'s floating robot with its lowest shape on a ground at z = 0 of Coulomb
/// friction `friction` (found with the base first at z = `probe_z`), and the base's height.
fn on_the_ground(scene: &mut RobotScene, probe_z: f64, friction: f64) -> (RobotPlant, f64) {
    scene.base_xyz_m = [0.0, 0.0, probe_z];
    let low = RobotPlant::new(scene).unwrap().lowest_point_z_m();
    let z0 = probe_z - low;
    scene.base_xyz_m = [0.0, 0.0, z0];
    scene.ground = Some(Ground {
        height_m: 0.0,
        friction,
    });
    (RobotPlant::new(scene).unwrap(), z0)
}

/// What a PD stand gave: the last frame, the base's lowest and highest height, the median step
/// cost in µs.
struct Stood {
    frame: StateFrame,
    zmin: f64,
    zmax: f64,
    step_us: f64,
}

/// Steps `plant` to its end under a PD on its joints towards `target`, `gain[i]` = (kp, kd) of
/// joint i, calling `each` with the plant and the frame after every step.
fn pd_stand(
    plant: &mut RobotPlant,
    target: &[f64],
    gain: &[(f64, f64)],
    mut each: impl FnMut(&RobotPlant, &StateFrame),
) -> Stood {
    let (mut zmin, mut zmax) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut frame = plant.state_frame();
    let mut cost = Vec::new();
    while !plant.clock().is_finished() {
        let tau: Vec<f64> = frame
            .joints
            .iter()
            .zip(target)
            .zip(gain)
            .map(|((j, t), (kp, kd))| kp * (t - j.position_rad) - kd * j.velocity_rad_s)
            .collect();
        frame = plant.step(&tau);
        cost.push(plant.clock().last_step_cost_ns());
        let z = plant.base_pose().xyz_m[2];
        zmin = zmin.min(z);
        zmax = zmax.max(z);
        each(plant, &frame);
    }
    cost.sort_unstable();
    Stood {
        frame,
        zmin,
        zmax,
        step_us: cost[cost.len() / 2] as f64 / 1e3,
    }
}

#[test]
fn solo12_stands_on_the_ground_under_a_pd() {
    let path = solo12(&robots());
    let standing = solo_standing();
    let mut scene = RobotScene::new(&path, 2.0);
    scene.floating_base = true;
    scene.dt_s = 0.001;
    for (name, q) in &standing {
        scene.initial_q.insert(name.clone(), *q);
    }
    let (mut plant, z0) = on_the_ground(&mut scene, 1.0, 1.0);
    let names = plant
        .joint_names()
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>();
    let target: Vec<f64> = names
        .iter()
        .map(|n| {
            standing
                .iter()
                .find(|(s, _)| s == n)
                .map_or(0.0, |(_, q)| *q)
        })
        .collect();
    let (kp, kd) = (6.0, 0.15);
    let mut joint_err = 0.0f64;
    let Stood {
        frame,
        zmin,
        zmax,
        step_us,
    } = pd_stand(
        &mut plant,
        &target,
        &vec![(kp, kd); target.len()],
        |plant, frame| {
            if plant.clock().time_s() > 1.0 {
                for (j, t) in frame.joints.iter().zip(&target) {
                    joint_err = joint_err.max((j.position_rad - t).abs());
                }
            }
        },
    );
    let z = plant.base_pose().xyz_m[2];
    let normal: f64 = frame.contacts.iter().map(|c| c.force_n[2]).sum();
    let weight: f64 = plant.body_masses().iter().sum::<f64>() * 9.81;
    println!(
        "solo12 standing 2 s (PD kp {kp}, kd {kd}, dt 1 ms): base height {z0:.4} m at the start, {z:.4} m at the end, within [{zmin:.4}, {zmax:.4}]; joints within {joint_err:.3} rad of the pose after 1 s; ground force {normal:.2} N for a weight of {weight:.2} N on {} feet ({} left out); step cost median {step_us:.0} µs",
        frame.contacts.len(),
        plant.contacts_left_out(),
    );
    assert!(
        (z - z0).abs() < 0.03 && zmin > z0 - 0.03 && zmax < z0 + 0.01,
        "{z0} → {z} in [{zmin}, {zmax}]"
    );
    assert_eq!(frame.contacts.len(), 4, "{:?}", frame.contacts);
    assert!((normal / weight - 1.0).abs() < 0.05, "{normal} vs {weight}");
    // The base is body 0 of every frame: its world centre of mass and orientation.
    assert_eq!(frame.bodies.len(), 13);
}

/// The humanoid on the robot plant, turned z up (its file is y up: the base rotated +90° about
/// x), standing on the ground under a PD on its joint coordinates towards the zero pose with
/// the ankles leaning the body forward until its centre of mass is above them: the gains of
/// the humanoid plant's standing test (`tests/humanoid.rs`) per axis, at dt 5 ms.
#[test]
fn the_humanoid_stands_on_the_robot_plant_under_a_pd() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/humanoid15.urdf");
    let mut scene = RobotScene::new(&path, 4.0);
    scene.floating_base = true;
    scene.dt_s = 0.005;
    scene.base_rpy_rad = [std::f64::consts::FRAC_PI_2, 0.0, 0.0];
    let model = robot_model::load(&path, &scene.load_options()).unwrap();
    let tree: Tree<34> = model.tree().unwrap();
    // The lean: the zero pose's centre of mass against the ankle, in the file's (y up) frame.
    let kin = tree.kinematics(&Isometry3::identity(), &[0.0; 34]).unwrap();
    let (_, com) = kin.center_of_mass().unwrap();
    let ankle_body = model.joint_index("left_ankle_x").unwrap() + 1;
    let ankle = kin.body_pose(ankle_body).unwrap().translation.vector;
    let lean = (ankle.x - com.x).atan2(com.y - ankle.y);
    let (mut plant, z0) = on_the_ground(&mut scene, 2.0, 0.8);
    // Per coordinate: the humanoid plant test's gains about the parent's x, y, z (a hinge's
    // its z gains).
    let gains = |name: &str| -> (f64, f64) {
        let (joint, k) = match name.rsplit_once('_') {
            Some((j, "x")) => (j, 0),
            Some((j, "y")) => (j, 1),
            Some((j, "z")) => (j, 2),
            _ => (name, 2),
        };
        let (p, d) = stand_gains::gains(joint);
        (p[k], d[k])
    };
    let names: Vec<String> = plant.joint_names().iter().map(|s| s.to_string()).collect();
    let target: Vec<f64> = names
        .iter()
        .map(|n| if n.ends_with("ankle_z") { lean } else { 0.0 })
        .collect();
    let gain: Vec<(f64, f64)> = names.iter().map(|n| gains(n)).collect();
    let mut load = Vec::new();
    let weight: f64 = plant.body_masses().iter().sum::<f64>() * 9.81;
    let Stood {
        frame,
        zmin,
        zmax,
        step_us,
    } = pd_stand(&mut plant, &target, &gain, |plant, frame| {
        if plant.clock().time_s() > 1.5 {
            let normal: f64 = frame.contacts.iter().map(|c| c.force_n[2]).sum();
            load.push(normal / weight);
        }
    });
    let z = plant.base_pose().xyz_m[2];
    let (lo, hi) = load
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    println!(
        "humanoid15 on the robot plant, 4 s standing (lean {lean:.4} rad, dt 5 ms): base height {z0:.4} m at the start, {z:.4} m at the end, within [{zmin:.4}, {zmax:.4}]; ground force after 1.5 s {lo:.3} to {hi:.3} of the weight ({} contacts); step cost median {step_us:.0} µs",
        frame.contacts.len(),
    );
    // Without the lean it rolls back over its heels and falls (base at 0.12 m by 4 s), as on
    // the humanoid plant.
    assert!(
        zmin > z0 - 0.01 && (z - z0).abs() < 0.01,
        "{z0} → {z} in [{zmin}, {zmax}]"
    );
    assert!(
        lo > 0.97 && hi < 1.03,
        "ground force {lo} to {hi} of the weight"
    );
}

/// SIMBICON's planar biped (`sim_host::biped`'s table: masses, inertias, lengths) as a URDF for
/// the robot plant, z up, walking along x: its planar root as two prismatic joints and a hinge
/// from a fixed rail (their efforts 1, never driven), every hinge about −y (SIMBICON's +z, so
/// the joint angles keep its signs).
fn planar_biped_urdf() -> PathBuf {
    use sim_host::biped::{
        ANKLE_FROM_HEEL_M, DEPTH_M, FOOT_LENGTH_M, INERTIAS_KG_M2, LINK_THICKNESS_M, MASSES_KG,
        SHIN_LENGTH_M, THIGH_LENGTH_M, TORQUE_LIMIT_NM, TORSO_LENGTH_M,
    };
    let link = |name: &str, b: usize, com: [f64; 3], size: [f64; 3]| {
        let (m, i) = (MASSES_KG[b], INERTIAS_KG_M2[b]);
        let xyz = format!("{} {} {}", com[0], com[1], com[2]);
        format!(
            r#"<link name="{name}"><inertial><origin xyz="{xyz}"/><mass value="{m}"/><inertia ixx="{i}" ixy="0" ixz="0" iyy="{i}" iyz="0" izz="{i}"/></inertial><collision><origin xyz="{xyz}"/><geometry><box size="{} {} {}"/></geometry></collision></link>"#,
            size[0], size[1], size[2]
        )
    };
    let hinge = |name: &str, parent: &str, child: &str, z: f64, effort: f64| {
        format!(
            r#"<joint name="{name}" type="continuous"><parent link="{parent}"/><child link="{child}"/><origin xyz="0 0 {z}"/><axis xyz="0 -1 0"/><limit effort="{effort}" velocity="100"/></joint>"#
        )
    };
    let (t, d) = (LINK_THICKNESS_M, DEPTH_M);
    let mut body = String::from(
        r#"<link name="rail"/><link name="slide_x_link"/><link name="slide_z_link"/>
<joint name="slide_x" type="prismatic"><parent link="rail"/><child link="slide_x_link"/><axis xyz="1 0 0"/><limit lower="-500" upper="500" effort="1" velocity="100"/></joint>
<joint name="slide_z" type="prismatic"><parent link="slide_x_link"/><child link="slide_z_link"/><axis xyz="0 0 1"/><limit lower="-10" upper="10" effort="1" velocity="100"/></joint>"#,
    );
    body += &link(
        "torso",
        0,
        [0.0, 0.0, TORSO_LENGTH_M / 2.0],
        [t, d, TORSO_LENGTH_M],
    );
    body += &hinge("pitch", "slide_z_link", "torso", 0.0, 1.0);
    for (side, b) in [("left", 1), ("right", 4)] {
        let (thigh, shin, foot) = (
            format!("{side}_thigh"),
            format!("{side}_shin"),
            format!("{side}_foot"),
        );
        body += &link(
            &thigh,
            b,
            [0.0, 0.0, -THIGH_LENGTH_M / 2.0],
            [t, d, THIGH_LENGTH_M],
        );
        body += &link(
            &shin,
            b + 1,
            [0.0, 0.0, -SHIN_LENGTH_M / 2.0],
            [t, d, SHIN_LENGTH_M],
        );
        let ahead = FOOT_LENGTH_M / 2.0 - ANKLE_FROM_HEEL_M;
        body += &link(&foot, b + 2, [ahead, 0.0, -t / 2.0], [FOOT_LENGTH_M, d, t]);
        body += &hinge(
            &format!("{side}_hip"),
            "torso",
            &thigh,
            0.0,
            TORQUE_LIMIT_NM,
        );
        body += &hinge(
            &format!("{side}_knee"),
            &thigh,
            &shin,
            -THIGH_LENGTH_M,
            TORQUE_LIMIT_NM,
        );
        body += &hinge(
            &format!("{side}_ankle"),
            &shin,
            &foot,
            -SHIN_LENGTH_M,
            TORQUE_LIMIT_NM,
        );
    }
    let urdf =
        format!("<?xml version=\"1.0\"?>\n<robot name=\"biped_planar\">\n{body}\n</robot>\n");
    temp("biped_planar.urdf", urdf.as_bytes())
}

/// The planar walker on the robot plant, its planar root a fixed-base multibody chain: from
/// standing it falls under zero torques as on its own plant (`tests/biped.rs`), its torso
/// coming down to the ground without the plant blowing up (the same biped under Rapier's
/// locked axes did, with impulse or multibody joints: see `sim_host::biped`); both plants'
/// step costs over the same fall.
#[test]
fn the_planar_walker_falls_on_the_robot_plant_as_on_its_own() {
    use sim_host::biped::{BipedPlant, BipedScene, JOINTS};
    let mut scene = RobotScene::new(planar_biped_urdf(), 3.0);
    scene.dt_s = 0.005;
    scene.initial_q.insert("slide_z".into(), 1.0);
    let low = RobotPlant::new(&scene).unwrap().lowest_point_z_m();
    scene.initial_q.insert("slide_z".into(), 1.0 - low);
    scene.ground = Some(Ground {
        height_m: 0.0,
        friction: sim_host::biped::GROUND_FRICTION,
    });
    let mut plant = RobotPlant::new(&scene).unwrap();
    let names: Vec<String> = plant.joint_names().iter().map(|s| s.to_string()).collect();
    assert_eq!(
        names,
        [
            "slide_x",
            "slide_z",
            "pitch",
            "left_hip",
            "left_knee",
            "left_ankle",
            "right_hip",
            "right_knee",
            "right_ankle"
        ]
    );
    let (mut lowest, mut root_speed) = (f64::INFINITY, 0.0f64);
    let mut cost = Vec::new();
    while !plant.clock().is_finished() {
        let frame = plant.step(&[0.0; 9]);
        cost.push(plant.clock().last_step_cost_ns());
        let (z, pitch) = (frame.joints[1].position_rad, frame.joints[2].position_rad);
        lowest = lowest.min(z + 0.24 * pitch.cos());
        root_speed = root_speed.max(
            frame.joints[0]
                .velocity_rad_s
                .hypot(frame.joints[1].velocity_rad_s),
        );
        assert!(frame.joints.iter().all(|j| j.position_rad.is_finite()));
    }
    // Its own plant, the same fall.
    let mut own = BipedPlant::new(&BipedScene::new(3.0, [0.0, -9.81])).unwrap();
    let (mut own_lowest, mut own_cost) = (f64::INFINITY, Vec::new());
    for _ in 0..600 {
        let s = own.step(&[0.0; JOINTS]).unwrap();
        own_cost.push(own.clock().last_step_cost_ns());
        own_lowest = own_lowest.min(s.root.com_m[1]);
    }
    cost.sort_unstable();
    own_cost.sort_unstable();
    println!(
        "planar walker, 3 s without torques, dt 5 ms: the torso's centre falls to {lowest:.3} m (its own plant: {own_lowest:.3} m); root speed at most {root_speed:.2} m/s; step median {:.0} µs (its own plant: {:.0} µs)",
        cost[cost.len() / 2] as f64 / 1e3,
        own_cost[own_cost.len() / 2] as f64 / 1e3
    );
    // Both end lying on the ground: the torso's centre half its thickness above it.
    assert!(lowest < 0.6 && own_lowest < 0.6, "{lowest} {own_lowest}");
    assert!((lowest - own_lowest).abs() < 5e-3, "{lowest} {own_lowest}");
    assert!(root_speed < 10.0, "{root_speed}");
}

// ---- (5) Refusals, and hosting ---------------------------------------------------------------

#[test]
fn bad_robot_scenes_are_refused_naming_file_field_and_reason() {
    let dir = small_fixed_urdf().parent().unwrap().to_path_buf();
    let scene_file = |name: &str, json: &str| temp(name, json.as_bytes());
    let build = |path: &Path| -> String {
        // As `sim-host --scene` does: the scene file's errors name the file.
        let out = Command::new(env!("CARGO_BIN_EXE_sim-host"))
            .args([
                "--scene",
                path.to_str().unwrap(),
                "--fd",
                "99",
                "--mode",
                "lockstep",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // A joint without <limit effort> (a continuous joint may leave <limit> out).
    temp(
        "no_effort.urdf",
        std::fs::read_to_string(dir.join("small_fixed.urdf"))
            .unwrap()
            .replace(r#"<limit effort="20" velocity="3"/>"#, "")
            .as_bytes(),
    );
    let s = scene_file(
        "no_effort.json",
        r#"{"kind": "robot", "urdf": "no_effort.urdf", "end_time_s": 1}"#,
    );
    let e = build(&s);
    assert!(
        e.contains(&format!("bad scene file {}: field `urdf`: ", s.display()))
            && e.contains(
                "joint `wrist` has no <limit effort>: every joint needs its torque limit"
            ),
        "{e}"
    );
    // A mesh that cannot be read.
    temp("garbage.stl", b"this is no mesh");
    let bad_mesh = temp(
        "bad_mesh.urdf",
        std::fs::read_to_string(dir.join("small_fixed.urdf"))
            .unwrap()
            .replace("tool.stl", "garbage.stl")
            .as_bytes(),
    );
    let mut scene = RobotScene::new(&bad_mesh, 1.0);
    let e = RobotPlant::new(&scene).unwrap_err();
    assert_eq!(e.field, "urdf");
    assert!(
        e.reason
            .contains("link `tool`: collision mesh garbage.stl (")
            && e.reason.contains("garbage.stl): cannot parse")
            && e.reason.contains("set `collision` to \"primitives_only\""),
        "{e}"
    );
    // … unless meshes are not loaded: then said in the notes.
    scene.collision = CollisionMode::PrimitivesOnly;
    let plant = RobotPlant::new(&scene).unwrap();
    assert_eq!(
        plant.notes(),
        [String::from(
            "collision \"primitives_only\": 2 collision mesh(es) not loaded: `carriage` (carriage.stl), `tool` (garbage.stl)"
        )]
    );
    // Gravity not a number (only a scene built in memory can hold one).
    let mut scene = RobotScene::new(dir.join("small_fixed.urdf"), 1.0);
    scene.gravity_m_s2 = [0.0, 0.0, f64::NAN];
    let e = RobotPlant::new(&scene).unwrap_err();
    assert_eq!(
        (e.field.as_str(), e.reason.as_str()),
        ("gravity_m_s2[2]", "must be a finite number, got NaN")
    );
    // A start value for a joint the robot does not have.
    let s = scene_file(
        "unknown_joint.json",
        r#"{"kind": "robot", "urdf": "small_fixed.urdf", "end_time_s": 1, "initial_q": {"elbow": 0.3}}"#,
    );
    let e = build(&s);
    assert!(
        e.contains(&format!(
            "bad scene file {}: field `initial_q.elbow`: no joint `elbow` in ",
            s.display()
        )) && e.contains("(joints: slide, shoulder, wrist, side)"),
        "{e}"
    );
    // A joint friction: applied, or left out when asked (and said); a friction the plant
    // cannot apply does not exist in Rapier 0.36 (per-DoF dry friction).
    let friction = temp(
        "friction.urdf",
        std::fs::read_to_string(dir.join("small_fixed.urdf"))
            .unwrap()
            .replace(
                r#"<limit lower="-1.5" upper="1.5" effort="40" velocity="2"/>"#,
                r#"<limit lower="-1.5" upper="1.5" effort="40" velocity="2"/><dynamics damping="0.1" friction="0.5"/>"#,
            )
            .as_bytes(),
    );
    let mut scene = RobotScene::new(&friction, 1.0);
    assert!(RobotPlant::new(&scene).unwrap().notes().is_empty());
    scene.ignore_joint_friction = true;
    assert_eq!(
        RobotPlant::new(&scene).unwrap().notes(),
        [String::from(
            "ignore_joint_friction: <dynamics friction> not applied on 1 joint(s): `side` (0.5)"
        )]
    );
    // A start value beyond a prismatic joint's limits.
    let mut scene = RobotScene::new(small_floating_urdf(), 1.0);
    scene.floating_base = true;
    scene.initial_q.insert(String::from("piston"), 0.3);
    let e = RobotPlant::new(&scene).unwrap_err();
    assert_eq!(e.field, "initial_q.piston");
    assert!(
        e.reason
            .contains("joint `piston` is limited to [0, 0.2] m, got 0.3"),
        "{e}"
    );
    // The loader's own refusals come through under `urdf`, naming the element.
    let planar = temp(
        "planar.urdf",
        std::fs::read_to_string(dir.join("small_fixed.urdf"))
            .unwrap()
            .replace(
                r#"name="side" type="revolute""#,
                r#"name="side" type="planar""#,
            )
            .as_bytes(),
    );
    let e = RobotPlant::new(&RobotScene::new(&planar, 1.0)).unwrap_err();
    assert_eq!(e.field, "urdf");
    assert!(
        e.reason.starts_with(planar.to_str().unwrap()) && e.reason.contains("side"),
        "{e}"
    );
    println!("a planar joint: {e}");
    let s = scene_file(
        "no_file.json",
        r#"{"kind": "robot", "urdf": "no_such.urdf", "end_time_s": 1}"#,
    );
    let e = build(&s);
    assert!(
        e.contains("field `urdf`") && e.contains("no_such.urdf"),
        "{e}"
    );
    // A scene file of the robot kind is read as one.
    let s = scene_file(
        "good.json",
        r#"{"kind": "robot", "urdf": "small_fixed.urdf", "end_time_s": 0.05, "ground": {"height_m": -1, "friction": 0.8}}"#,
    );
    assert!(matches!(PlantScene::load(&s), Ok(PlantScene::Robot(_))));
}

fn torque(seq: u64, step: u64, tau: &[f64]) -> [u8; TORQUE_FRAME_LEN] {
    let mut f = TorqueFrame::new(seq, step);
    for &t in tau {
        f.push_torque(t).unwrap();
    }
    let mut b = [0u8; TORQUE_FRAME_LEN];
    f.encode(&mut b).unwrap();
    b
}

/// A robot scene hosted in lockstep over a socket pair gives the in-process plant's states bit
/// for bit; a torque over a joint's effort is refused whole and counted.
#[test]
fn a_robot_plant_is_hosted_in_lockstep() {
    let path = small_fixed_urdf();
    let scene = RobotScene::new(&path, 0.05);
    let (ctl, host) = SeqPacket::pair().unwrap();
    let s2 = scene.clone();
    let plant_thread = std::thread::spawn(move || {
        let mut plant = RobotPlant::new(&s2).unwrap();
        run_lockstep(&mut plant, &mut FrameLink::new(host)).unwrap()
    });
    let mut reference = RobotPlant::new(&scene).unwrap();
    let mut buf = [0u8; MAX_FRAME_LEN];
    let mut k = 0u64;
    let mut held = [0.0; 4];
    loop {
        let n = ctl.recv(&mut buf).unwrap();
        let state = StateFrame::decode(&buf[..n]).unwrap();
        let expected = if k == 0 {
            reference.state_frame()
        } else {
            reference.step(&held)
        };
        for (a, b) in state.joints.iter().zip(&expected.joints) {
            assert_eq!(
                a.position_rad.to_bits(),
                b.position_rad.to_bits(),
                "step {k}"
            );
        }
        assert_eq!(state.bodies.len(), 5);
        if state.flags.contains(StateFlags::FINAL) {
            break;
        }
        let tau = if k == 3 {
            [0.0, 80.000_1, 0.0, 0.0]
        } else {
            [1.0, -2.0, 0.5, 0.1]
        };
        ctl.send(&torque(k + 1, k, &tau)).unwrap();
        if k != 3 {
            held = tau;
        }
        k += 1;
    }
    let summary = plant_thread.join().unwrap();
    assert_eq!(summary.end, RunEnd::EndOfScene);
    assert_eq!((summary.steps, summary.over_limit_torque_frames), (10, 1));
}
