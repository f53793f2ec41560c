//! The robot plant (`sim_host::robot::RobotPlant`) on `models/arm3.urdf` (y-up, every joint about
//! +z, gravity (0, −9.81, 0) as the arm3 scenes give it), against an independent f64 model of
//! the same file, written here (forward kinematics, composite inertias, energies; the file read
//! with `urdf-rs`, the parser `robot_model` uses too, but none of `robot_model`'s or the
//! controller's computations): the round trip of names, axes, limits and masses, the mass matrix
//! against the composite inertias and kinetic energy, energy conservation, torque limits from
//! `<limit effort>`, a push's angular impulse, lockstep determinism over a socket pair, the
//! `sim-host` binary running the arm3 scene files end to end, and a wall pushing back on the link
//! pressed into it.
//!
//! What `tests/robot.rs` checks on other robots (the plant against the controller's tree, hosting
//! in lockstep once, the robot scene's refusals) is not repeated here; these are the physics
//! checks of the chain plant this plant replaced (`tests/chain.rs`), on the same arm, with the
//! same tolerances. Where the robot plant's numbers differ from the chain plant's, the doc
//! comments say so (the robot plant gives Rapier each body's principal inertia frame: for arm3's
//! hand, whose iyy > izz, y and z swapped; its colliders have friction 1 combined by product, so
//! the coefficient against a wall is the wall's 0.5, as the chain plant's 0.5 and 0.5 averaged).
#![allow(missing_docs)]

use sim_host::SceneFile as _;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use control_core::frames::{StateFlags, StateFrame, TorqueFrame};
use control_core::tree::Placement;
use sim_host::host::run_lockstep;
use sim_host::robot::RobotStateError;
use sim_host::{Mode, Push, RobotPlant, RobotScene, RunEnd};
use transport::{FrameLink, LinkError, SeqPacket};

const G: [f64; 3] = [0.0, -9.81, 0.0];
/// arm3's joints, in URDF (and model) order.
const JOINTS: [&str; 3] = ["shoulder", "elbow", "wrist"];

fn arm3() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../models/arm3.urdf")).to_path_buf()
}

/// This test process's temporary folder.
fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sim-host-arm3-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---- A small independent f64 model of a URDF tree ------------------------------------------

type M3 = [[f64; 3]; 3];
type V3 = [f64; 3];

fn mul(a: &M3, b: &M3) -> M3 {
    let mut o = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            o[i][j] = (0..3).map(|k| a[i][k] * b[k][j]).sum();
        }
    }
    o
}
fn mv(a: &M3, v: V3) -> V3 {
    [0, 1, 2].map(|i| (0..3).map(|k| a[i][k] * v[k]).sum())
}
fn tr(a: &M3) -> M3 {
    [0, 1, 2].map(|i| [0, 1, 2].map(|j| a[j][i]))
}
fn add(a: V3, b: V3) -> V3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}
fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn scale(a: V3, s: f64) -> V3 {
    a.map(|x| x * s)
}
fn dot(a: V3, b: V3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn cross(a: V3, b: V3) -> V3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}
fn norm(a: V3) -> f64 {
    dot(a, a).sqrt()
}
/// URDF rpy: R = Rz(yaw) Ry(pitch) Rx(roll).
fn rpy(r: V3) -> M3 {
    let (sr, cr) = r[0].sin_cos();
    let (sp, cp) = r[1].sin_cos();
    let (sy, cy) = r[2].sin_cos();
    let rx = [[1.0, 0.0, 0.0], [0.0, cr, -sr], [0.0, sr, cr]];
    let ry = [[cp, 0.0, sp], [0.0, 1.0, 0.0], [-sp, 0.0, cp]];
    let rz = [[cy, -sy, 0.0], [sy, cy, 0.0], [0.0, 0.0, 1.0]];
    mul(&rz, &mul(&ry, &rx))
}
/// Rotation by `q` about the unit `u` (Rodrigues).
fn axis_angle(u: V3, q: f64) -> M3 {
    let (s, c) = q.sin_cos();
    let k = [[0.0, -u[2], u[1]], [u[2], 0.0, -u[0]], [-u[1], u[0], 0.0]];
    let kk = mul(&k, &k);
    let mut o = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            o[i][j] = f64::from(u8::from(i == j)) + s * k[i][j] + (1.0 - c) * kk[i][j];
        }
    }
    o
}

struct Link {
    mass: f64,
    /// CoM in the link frame.
    com: V3,
    /// Inertia about the CoM in the link frame.
    inertia: M3,
}

struct Joint {
    parent: String,
    child: String,
    origin_xyz: V3,
    origin_rpy: V3,
    axis: V3,
}

/// The URDF as urdf-rs reads it, in f64.
struct Model {
    links: HashMap<String, Link>,
    joints: Vec<Joint>,
    effort: Vec<f64>,
    /// `<limit lower upper>`, file order.
    limits: Vec<(f64, f64)>,
    /// Joint names in file order.
    names: Vec<String>,
    /// Link names in file order.
    link_names: Vec<String>,
}

fn model(path: &Path) -> Model {
    let r = urdf_rs::read_file(path).unwrap();
    let links = r
        .links
        .iter()
        .map(|l| {
            let i = &l.inertial.inertia;
            let t = [
                [i.ixx, i.ixy, i.ixz],
                [i.ixy, i.iyy, i.iyz],
                [i.ixz, i.iyz, i.izz],
            ];
            let ro = rpy(l.inertial.origin.rpy.0);
            (
                l.name.clone(),
                Link {
                    mass: l.inertial.mass.value,
                    com: l.inertial.origin.xyz.0,
                    inertia: mul(&ro, &mul(&t, &tr(&ro))),
                },
            )
        })
        .collect();
    let joints = r
        .joints
        .iter()
        .map(|j| {
            let a = j.axis.xyz.0;
            Joint {
                parent: j.parent.link.clone(),
                child: j.child.link.clone(),
                origin_xyz: j.origin.xyz.0,
                origin_rpy: j.origin.rpy.0,
                axis: scale(a, 1.0 / norm(a)),
            }
        })
        .collect();
    Model {
        links,
        joints,
        effort: r.joints.iter().map(|j| j.limit.effort).collect(),
        limits: r
            .joints
            .iter()
            .map(|j| (j.limit.lower, j.limit.upper))
            .collect(),
        names: r.joints.iter().map(|j| j.name.clone()).collect(),
        link_names: r.links.iter().map(|l| l.name.clone()).collect(),
    }
}

/// World poses at q: per link (R, p); per joint (world axis s, world position d).
struct Pose {
    links: HashMap<String, (M3, V3)>,
    axes: Vec<V3>,
    pivots: Vec<V3>,
}

impl Model {
    fn root(&self) -> String {
        self.links
            .keys()
            .find(|l| !self.joints.iter().any(|j| &j.child == *l))
            .unwrap()
            .clone()
    }

    fn fk(&self, q: &[f64]) -> Pose {
        let n = self.joints.len();
        let mut links = HashMap::new();
        links.insert(
            self.root(),
            (
                [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
                [0.0; 3],
            ),
        );
        let (mut axes, mut pivots) = (vec![[0.0; 3]; n], vec![[0.0; 3]; n]);
        while links.len() < self.links.len() {
            for (i, j) in self.joints.iter().enumerate() {
                if links.contains_key(&j.child) {
                    continue;
                }
                let Some(&(rp, pp)) = links.get(&j.parent) else {
                    continue;
                };
                let rj = mul(&rp, &rpy(j.origin_rpy));
                let d = add(pp, mv(&rp, j.origin_xyz));
                axes[i] = mv(&rj, j.axis);
                pivots[i] = d;
                links.insert(j.child.clone(), (mul(&rj, &axis_angle(j.axis, q[i])), d));
            }
        }
        Pose {
            links,
            axes,
            pivots,
        }
    }

    /// The joints between the root and `link`.
    fn ancestors(&self, link: &str) -> Vec<usize> {
        let mut out = Vec::new();
        let mut at = link.to_string();
        while let Some(i) = self.joints.iter().position(|j| j.child == at) {
            out.push(i);
            at = self.joints[i].parent.clone();
        }
        out
    }

    /// World CoM and world inertia of `link`.
    fn world_body(&self, pose: &Pose, link: &str) -> (V3, M3) {
        let (r, p) = pose.links[link];
        let l = &self.links[link];
        (add(p, mv(&r, l.com)), mul(&r, &mul(&l.inertia, &tr(&r))))
    }

    /// The inertia of the subtree carried by joint i about joint i's axis line: Σ over its links
    /// of s·I_k s + m_k ‖(c_k − d) × s‖² (each link about the line by the parallel-axis theorem).
    fn composite_about_axis(&self, pose: &Pose, i: usize) -> f64 {
        let (s, d) = (pose.axes[i], pose.pivots[i]);
        self.links
            .keys()
            .filter(|l| self.ancestors(l).contains(&i))
            .map(|l| {
                let (c, iw) = self.world_body(pose, l);
                let m = self.links[l].mass;
                dot(s, mv(&iw, s)) + m * dot(cross(sub(c, d), s), cross(sub(c, d), s))
            })
            .sum()
    }

    /// Kinetic plus potential energy at (q, q̇) under gravity g.
    fn energy(&self, q: &[f64], qd: &[f64], g: V3) -> f64 {
        let pose = self.fk(q);
        self.links
            .keys()
            .map(|l| {
                let (c, iw) = self.world_body(&pose, l);
                let m = self.links[l].mass;
                let (mut v, mut w) = ([0.0; 3], [0.0; 3]);
                for j in self.ancestors(l) {
                    let s = pose.axes[j];
                    w = add(w, scale(s, qd[j]));
                    v = add(v, scale(cross(s, sub(c, pose.pivots[j])), qd[j]));
                }
                0.5 * m * dot(v, v) + 0.5 * dot(w, mv(&iw, w)) - m * dot(g, c)
            })
            .sum()
    }

    fn total_mass(&self) -> f64 {
        self.links.values().map(|l| l.mass).sum()
    }
}

/// A unit quaternion (w, x, y, z) as a rotation matrix.
fn quat(q: [f64; 4]) -> M3 {
    let [w, x, y, z] = q;
    [
        [
            1.0 - 2.0 * (y * y + z * z),
            2.0 * (x * y - w * z),
            2.0 * (x * z + w * y),
        ],
        [
            2.0 * (x * y + w * z),
            1.0 - 2.0 * (x * x + z * z),
            2.0 * (y * z - w * x),
        ],
        [
            2.0 * (x * z - w * y),
            2.0 * (y * z + w * x),
            1.0 - 2.0 * (x * x + y * y),
        ],
    ]
}

fn qs(f: &StateFrame) -> Vec<f64> {
    f.joints.iter().map(|j| j.position_rad).collect()
}

fn vs(f: &StateFrame) -> Vec<f64> {
    f.joints.iter().map(|j| j.velocity_rad_s).collect()
}

/// arm3 with its joints made `continuous` (no position limits), written to a temporary file.
fn arm3_without_limits() -> PathBuf {
    let text = std::fs::read_to_string(arm3())
        .unwrap()
        .replace(r#"type="revolute""#, r#"type="continuous""#);
    let p = temp_dir().join("arm3-continuous.urdf");
    std::fs::write(&p, text).unwrap();
    p
}

/// A robot scene of arm3 under gravity G starting at rest at `q0` (joints in URDF order; the
/// joints left out start at 0).
fn arm3_at(q0: &[f64], end_time_s: f64) -> RobotScene {
    let mut scene = RobotScene::new(arm3(), end_time_s);
    scene.gravity_m_s2 = G;
    for (name, &q) in JOINTS.iter().zip(q0) {
        scene.initial_q.insert((*name).to_string(), q);
    }
    scene
}

/// The round trip: what the plant built from the file (through `robot_model`) and what urdf-rs
/// reads from it agree on the joints (count, names, order, torque limits, position limits, world
/// axes) and the links (names, masses, where their centres of mass are and how they are turned).
///
/// The orientations check the robot plant's own conversion: Rapier holds each moving body in its
/// principal inertia frame (for the hand, iyy 0.00162 > izz 0.00138: its y and z swapped, a
/// quarter turn about x; the upper arm and forearm, ixx < iyy = izz, as they are), and the plant
/// reports the link's frame.
#[test]
fn the_urdf_loads_and_plant_and_model_agree_on_joints_axes_and_masses() {
    let m = model(&arm3());
    let q0 = [-1.2, 0.9, -0.3];
    let mut p = RobotPlant::new(&arm3_at(&q0, 1.0)).unwrap();
    assert_eq!(p.joint_count(), 3);
    assert_eq!(p.nv(), 3);
    assert_eq!(p.joint_names(), JOINTS);
    assert_eq!(p.joint_names(), m.names);
    assert_eq!(p.torque_limits(), m.effort);
    assert_eq!(p.torque_limits(), [80.0, 60.0, 15.0]);
    let limits: Vec<Option<(f64, f64)>> = m.limits.iter().copied().map(Some).collect();
    assert_eq!(p.joint_limits(), limits);
    assert_eq!(p.body_names(), m.link_names);
    for (i, name) in m.link_names.iter().enumerate() {
        assert_eq!(p.link_body_id(name).map(|b| usize::from(b.0)), Some(i));
    }
    for (name, rapier) in p.body_names().iter().zip(p.body_masses()) {
        let urdf = m.links[*name].mass;
        // Rapier holds f32: the nearest f32 of the file's value.
        assert!(
            (rapier - urdf).abs() <= 1e-7 * urdf.max(1.0),
            "{name}: Rapier {rapier} kg, URDF {urdf} kg"
        );
    }
    assert_eq!(p.body_masses()[0], 0.0, "the base is fixed");
    // Axes at the start state, from urdf-rs's origins and axes composed in f64.
    let pose = m.fk(&q0);
    for (i, (rapier, &urdf)) in p.joint_axes_world().into_iter().zip(&pose.axes).enumerate() {
        let err = norm(sub(rapier, urdf));
        assert!(err < 1e-6, "joint {i}: Rapier {rapier:?}, URDF {urdf:?}");
        assert_eq!(urdf, [0.0, 0.0, 1.0]);
    }
    // The state is the scene's, at rest, and the links are where the joints say.
    let f = p.state_frame();
    for (j, want) in f.joints.iter().zip(q0) {
        assert!((j.position_rad - want).abs() < 1e-6, "{j:?} vs {want}");
        assert_eq!(j.velocity_rad_s, 0.0);
    }
    assert_eq!(f.bodies.len(), 4);
    for ((name, b), framed) in p
        .body_names()
        .iter()
        .zip(p.body_motions())
        .zip(&f.bodies)
        .skip(1)
    {
        assert_eq!(&b, framed);
        let (want, _) = m.world_body(&pose, name);
        assert!(
            norm(sub(b.com_m, want)) < 1e-6,
            "{name}: {:?} vs {want:?}",
            b.com_m
        );
        let (r, got) = (pose.links[*name].0, quat(b.orientation));
        let worst = (0..3)
            .flat_map(|i| (0..3).map(move |j| (i, j)))
            .fold(0.0f64, |a, (i, j)| a.max((got[i][j] - r[i][j]).abs()));
        assert!(worst < 1e-6, "{name}: {got:?} vs {r:?}");
    }
}

/// Rapier's joint-space mass matrix is symmetric positive definite, its diagonal is the inertia
/// of each joint's subtree about the joint's axis (computed here from the URDF's masses, centres
/// of mass and inertias, in f64), and the whole matrix gives the kinetic energy ½q̇ᵀMq̇ computed
/// here link by link. Checked at four start states across the joints' ranges and after a swing
/// from each (0.5 s towards a posture under a PD).
///
/// Tolerance 5e-6 relative, as for the chain plant: this Rapier is f32 (rapier3d, not
/// rapier3d-f64). The file's values are rounded to f32 (6e-8 relative), the matrix is assembled
/// from f32 Jacobians and inertias and rebuilt from its f32 LU factors. Measured worst 2.3e-6 on
/// the diagonal (the hand's 0.00543844 kg·m² about the wrist, about 25 f32 ulps; the elbow's up
/// to 2.2e-6, the shoulder's up to 1.2e-6; Rapier's the larger on every entry) and 2.2e-6 on the
/// energies. The chain plant (the link frames and whole inertia matrices given to Rapier through
/// rapier3d-urdf) measured 1.3e-6 on the same entry (Rapier's the smaller there) and 1.1e-6 on
/// the energies: the robot plant (bodies in their principal frames, built from `robot_model`'s
/// numbers) rounds differently, twice as far, within the same tolerance.
#[test]
fn the_mass_matrix_is_spd_and_matches_the_composite_inertias_and_kinetic_energy() {
    let m = model(&arm3());
    let mut worst_diag: f64 = 0.0;
    let mut worst_ke: f64 = 0.0;
    let starts = [
        [-1.0, 0.6, 0.2],
        [0.8, 2.0, -1.0],
        [-2.5, 1.4, 1.2],
        [1.5, 0.1, 0.0],
    ];
    for (q0, swing) in starts.iter().flat_map(|q0| [(q0, false), (q0, true)]) {
        let mut p = RobotPlant::new(&arm3_at(q0, 2.0)).unwrap();
        if swing {
            let mut f = p.state_frame();
            for _ in 0..100 {
                f = p.step(&pd(&f));
            }
        }
        let q = qs(&p.state_frame());
        let mm = p.mass_matrix();
        let pose = m.fk(&q);
        let n = mm.len();
        assert_eq!(n, 3);
        let biggest = mm.iter().flatten().fold(0.0f64, |a, x| a.max(x.abs()));
        for i in 0..n {
            for j in 0..n {
                assert!(
                    (mm[i][j] - mm[j][i]).abs() <= 1e-6 * biggest,
                    "not symmetric at {q:?}: {mm:?}"
                );
            }
            let composite = m.composite_about_axis(&pose, i);
            let rel = (mm[i][i] / composite - 1.0).abs();
            worst_diag = worst_diag.max(rel);
            assert!(
                rel < 5e-6,
                "M[{i}][{i}] = {} vs composite {composite} at {q:?}",
                mm[i][i]
            );
            println!(
                "q = {q:.4?}: M[{i}][{i}] = {:.9} kg·m², composite about the axis {composite:.9}, relative {:.1e}",
                mm[i][i],
                mm[i][i] / composite - 1.0
            );
        }
        assert_cholesky(&mm, &q);
        // ½ q̇ᵀ M q̇ against the kinetic energy of the links (gravity off), for velocities that
        // bring in every off-diagonal entry.
        for qd in [
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 1.0],
            [1.0, -1.0, 0.0],
            [0.3, 2.0, -4.0],
        ] {
            let quad: f64 = (0..n)
                .flat_map(|i| (0..n).map(move |j| (i, j)))
                .map(|(i, j)| 0.5 * qd[i] * mm[i][j] * qd[j])
                .sum();
            let ke = m.energy(&q, &qd, [0.0; 3]);
            let rel = (quad / ke - 1.0).abs();
            worst_ke = worst_ke.max(rel);
            assert!(
                rel < 5e-6,
                "½q̇ᵀMq̇ = {quad}, kinetic energy {ke} at {q:?}, q̇ {qd:?}"
            );
        }
    }
    println!("worst relative error: diagonal {worst_diag:.1e}, kinetic energy {worst_ke:.1e}");
}

/// Positive definite: its Cholesky factorization exists.
fn assert_cholesky(mm: &[Vec<f64>], q: &[f64]) {
    let n = mm.len();
    let mut l = vec![vec![0.0f64; n]; n];
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| l[i][k] * l[j][k]).sum();
            if i == j {
                let d = mm[i][i] - s;
                assert!(d > 0.0, "not positive definite at {q:?}: {mm:?}");
                l[i][i] = d.sqrt();
            } else {
                l[i][j] = (mm[i][j] - s) / l[j][j];
            }
        }
    }
}

/// Asking for the mass matrix between steps changes nothing: the states (joints and bodies) are
/// bit-identical to a run that never asks.
#[test]
fn reading_the_mass_matrix_does_not_disturb_the_simulation() {
    let scene = arm3_at(&[-1.0, 0.6, 0.2], 1.0);
    let run = |ask: bool| {
        let mut p = RobotPlant::new(&scene).unwrap();
        let mut out = Vec::new();
        while !p.clock().is_finished() {
            if ask {
                let _ = p.mass_matrix();
            }
            let f = p.step(&[3.0, -1.0, 0.2]);
            out.extend(qs(&f).into_iter().chain(vs(&f)).map(f64::to_bits));
            for b in &f.bodies {
                out.extend(
                    b.com_m
                        .into_iter()
                        .chain(b.orientation)
                        .chain(b.velocity_m_s)
                        .chain(b.angular_velocity_rad_s)
                        .map(f64::to_bits),
                );
            }
        }
        out
    };
    assert_eq!(run(false), run(true));
}

/// The mass matrix at a given configuration, on an offline replica built from the same scene
/// (`set_configuration`, then `mass_matrix`): at the scene's start it is the start's
/// `mass_matrix()`; at another q it differs, stays symmetric positive definite and matches the
/// composite inertias; along a recorded motion of a running plant it is that plant's own
/// `mass_matrix()` at each recorded state (measured: equal, 0 kg·m² apart: the frames carry the
/// f32 joint coordinates exactly, and the replica is posed from them; the chain plant, 7.5e-9
/// kg·m² apart; bounded by 1e-6, as for the chain plant); wrong lengths and non-finite values are
/// refused and leave the replica as it was.
#[test]
fn the_mass_matrix_at_a_configuration_without_stepping() {
    let q0 = [-1.0, 0.6, 0.2];
    let scene = arm3_at(&q0, 1.0);
    let mut replica = RobotPlant::new(&scene).unwrap();
    // The fixed base stays where the scene welds it.
    let base = replica.base_pose();
    assert_eq!(base, Placement::IDENTITY);
    let mass_matrix_at = |p: &mut RobotPlant, q: &[f64]| {
        p.set_configuration(&base, q).unwrap();
        p.mass_matrix()
    };
    let at_start = replica.mass_matrix();
    let at_q0 = mass_matrix_at(&mut replica, &q0);
    assert_eq!(at_q0, at_start);

    let model = model(&arm3());
    let spd = |mm: &[Vec<f64>], q: &[f64]| {
        let biggest = mm.iter().flatten().fold(0.0f64, |a, x| a.max(x.abs()));
        for i in 0..3 {
            for j in 0..3 {
                assert!(
                    (mm[i][j] - mm[j][i]).abs() <= 1e-6 * biggest,
                    "not symmetric at {q:?}: {mm:?}"
                );
            }
        }
        assert_cholesky(mm, q);
    };
    let q1 = [0.8, 2.0, -1.0];
    let m1 = mass_matrix_at(&mut replica, &q1);
    spd(&m1, &q1);
    assert!(
        (m1[0][0] - at_start[0][0]).abs() > 1e-3 && (m1[0][1] - at_start[0][1]).abs() > 1e-3,
        "{m1:?} vs {at_start:?}"
    );
    let pose = model.fk(&q1);
    for (i, row) in m1.iter().enumerate() {
        let c = model.composite_about_axis(&pose, i);
        assert!(
            (row[i] / c - 1.0).abs() < 5e-6,
            "M[{i}][{i}] {} vs {c}",
            row[i]
        );
    }
    // The replica is at q1, at rest; the step index did not move.
    let f = replica.state_frame();
    assert_eq!(f.step, 0);
    for (j, q) in f.joints.iter().zip(q1) {
        assert!(
            (j.position_rad - q).abs() < 1e-6 && j.velocity_rad_s == 0.0,
            "{f:?}"
        );
    }

    // Along a recorded motion.
    let mut running = RobotPlant::new(&scene).unwrap();
    let mut f = running.state_frame();
    let mut worst: f64 = 0.0;
    while !running.clock().is_finished() {
        f = running.step(&pd(&f));
        let live = running.mass_matrix();
        let offline = mass_matrix_at(&mut replica, &qs(&f));
        spd(&offline, &qs(&f));
        for (a, b) in live.iter().flatten().zip(offline.iter().flatten()) {
            worst = worst.max((a - b).abs());
        }
    }
    println!("along the recorded motion: largest |M_live − M_offline| = {worst:e} kg·m²");
    assert!(worst <= 1e-6, "{worst}");

    // Refusals leave the replica where it was.
    let before = replica.joint_states();
    let e = replica.set_configuration(&base, &[0.0, 0.0]).unwrap_err();
    assert_eq!(
        e,
        RobotStateError::WrongLength {
            what: "q",
            got: 2,
            joints: 3
        }
    );
    assert_eq!(
        e.to_string(),
        "q: 2 values for a robot of 3 joints (one per joint, in model order)"
    );
    assert!(replica.set_configuration(&base, &[0.0; 4]).is_err());
    let e = replica
        .set_configuration(&base, &[0.0, f64::NAN, 0.0])
        .unwrap_err();
    assert!(
        matches!(e, RobotStateError::NonFinite { what: "q", index: 1, value } if value.is_nan()),
        "{e}"
    );
    let e = replica
        .set_state(&base, [0.0; 6], &[0.0; 3], &[0.0, 0.0, f64::INFINITY])
        .unwrap_err();
    assert_eq!(e.to_string(), "qd[2] is inf: must be finite");
    assert!(
        replica
            .set_state(&base, [0.0; 6], &[0.0; 3], &[0.0; 2])
            .is_err()
    );
    assert_eq!(replica.joint_states(), before);
    // Velocities set are velocities read.
    replica
        .set_state(&base, [0.0; 6], &[0.1, 0.2, 0.3], &[1.0, -2.0, 0.5])
        .unwrap();
    let v: Vec<f64> = replica
        .joint_states()
        .iter()
        .map(|j| j.velocity_rad_s)
        .collect();
    assert_eq!(v, [1.0, -2.0, 0.5]);
}

/// A free chain (no torques) under gravity keeps its energy, computed here from the URDF in f64.
///
/// Both cases run arm3 with its joints made continuous: a joint limit is an inelastic stop, and
/// every free swing of arm3 from rest reaches one (its elbow stops straight at 0). Tolerances
/// (the chain plant's), at the plant's default dt = 5 ms:
/// - a moderate swing released from rest at (−1.0, 0.3, 0) rad (joint speeds up to 5.6 rad/s):
///   |ΔE| < 1e-3 of M g L (M = 3.65 kg, L = 0.76 m: 27.2 J) over 2 s; measured 3.4e-4, back to
///   5.5e-6 at the end (the chain plant: 3.4e-4 and 6e-6; the error oscillates, it does not
///   drift);
/// - a whip, released straight out at (0, 0, 0) (the hand reaches 37 rad/s): Rapier's multibody
///   integration (semi-implicit, with the velocity-dependent terms implicit) loses energy at
///   such speeds, first order in dt: measured 2.7e-2 of M g L at 5 ms and 5.9e-3 at 1 ms (the
///   chain plant's numbers to these digits). The test bounds it by 4e-2 and checks that it
///   shrinks at least 3× at 1 ms (an integration error, not a damping left on: that would not
///   shrink).
#[test]
fn a_free_chain_under_gravity_conserves_energy() {
    let m = model(&arm3());
    let urdf = arm3_without_limits();
    let scale = m.total_mass() * 9.81 * 0.76;
    let worst = |q0: [f64; 3], dt: f64| {
        let mut scene = RobotScene::new(&urdf, 2.0);
        scene.gravity_m_s2 = G;
        scene.dt_s = dt;
        for (name, q) in JOINTS.iter().zip(q0) {
            scene.initial_q.insert((*name).to_string(), q);
        }
        let mut p = RobotPlant::new(&scene).unwrap();
        assert_eq!(p.joint_limits(), [None; 3]);
        let f = p.state_frame();
        let e0 = m.energy(&qs(&f), &vs(&f), G);
        let (mut worst, mut fastest, mut end) = (0.0f64, 0.0f64, 0.0);
        while !p.clock().is_finished() {
            let f = p.step(&[]);
            end = (m.energy(&qs(&f), &vs(&f), G) - e0) / scale;
            worst = worst.max(end.abs());
            fastest = vs(&f).into_iter().fold(fastest, |a, v| a.max(v.abs()));
        }
        println!(
            "free arm3 from {q0:?}, dt {dt}: worst |ΔE|/(M g L) = {worst:.2e}, at the end {end:.1e}, fastest joint {fastest:.1} rad/s"
        );
        worst
    };
    assert!(worst([-1.0, 0.3, 0.0], 0.005) < 1e-3);
    let whip = worst([0.0; 3], 0.005);
    assert!(whip < 4e-2);
    assert!(worst([0.0; 3], 0.001) < whip / 3.0);
}

/// Torques beyond a joint's URDF `<limit effort>` are named; exactly the limit passes; an entry
/// for a joint the robot does not have passes only as 0.
#[test]
fn torque_limits_are_the_urdf_efforts() {
    let p = RobotPlant::new(&arm3_at(&[], 1.0)).unwrap();
    assert_eq!(p.check_torques(&[]), Ok(()));
    assert_eq!(p.check_torques(&[80.0, -60.0, 15.0]), Ok(()));
    assert_eq!(p.check_torques(&[80.0, -60.0, 15.0, 0.0]), Ok(()));
    let over = f64::from_bits(15f64.to_bits() + 1);
    assert_eq!(p.check_torques(&[0.0, 0.0, -over]), Err((2, -over)));
    assert_eq!(p.check_torques(&[0.0, 60.5]), Err((1, 60.5)));
    assert_eq!(p.check_torques(&[0.0, 0.0, 0.0, 1e-9]), Err((3, 1e-9)));
    assert!(p.check_torques(&[f64::NAN]).is_err());
    assert!(p.check_torques(&[0.0, f64::NEG_INFINITY]).is_err());
}

/// A push acts as the scene says: along +y on the hand of the straight, weightless arm, from the
/// step it starts (none before), it gives the arm the angular momentum about the shoulder,
/// M[0]·q̇, of its angular impulse, and that momentum stays after it (no torques, no gravity).
/// Ported from the chain plant's unit test `joint_torques_are_equal_and_opposite_and_pushes_push`
/// (same tolerance, 5%; its torque half is `tests/robot.rs`'s forces acting on their joint only).
/// Measured at the end (0.045 s after the push): 0.33214 against 0.33250 N·m·s (−0.1%).
#[test]
fn a_push_on_the_hand_gives_the_arm_its_angular_impulse() {
    let mut s = arm3_at(&[], 0.1);
    s.gravity_m_s2 = [0.0; 3];
    s.pushes.push(Push {
        body: String::from("hand"),
        force_n: [0.0, 10.0, 0.0],
        start_s: 0.005,
        duration_s: 0.05,
    });
    let mut p = RobotPlant::new(&s).unwrap();
    let f = p.step(&[]);
    assert!(f.joints.iter().all(|j| j.velocity_rad_s == 0.0), "not yet");
    let mut f = p.step(&[]);
    assert!(f.joints[2].velocity_rad_s > 0.0, "{f:?}");
    while !p.clock().is_finished() {
        f = p.step(&[]);
    }
    let m = p.mass_matrix();
    let v = vs(&f);
    let l: f64 = (0..3).map(|j| m[0][j] * v[j]).sum();
    // 10 N at 0.665 m for 0.05 s (the hand's centre, the arm nearly straight).
    println!(
        "angular momentum about the shoulder after the push: {l:.5} N·m·s, impulse 10 N × 0.665 m × 0.05 s = {:.5}",
        10.0 * 0.665 * 0.05
    );
    assert!((l / (10.0 * 0.665 * 0.05) - 1.0).abs() < 0.05, "{l}");
}

/// A PD towards a posture, within the efforts (what a controller of arm3 might send).
fn pd(f: &StateFrame) -> [f64; 3] {
    let target = [-0.4, 1.2, 0.3];
    let (kp, kd, limit) = ([60.0, 30.0, 4.0], [6.0, 2.0, 0.2], [80.0, 60.0, 15.0]);
    let mut tau = [0.0; 3];
    for (i, j) in f.joints.iter().enumerate() {
        tau[i] = (kp[i] * (target[i] - j.position_rad) - kd[i] * j.velocity_rad_s)
            .clamp(-limit[i], limit[i]);
    }
    tau
}

fn torque_frame(seq: u64, step: u64, tau: &[f64]) -> TorqueFrame {
    let mut f = TorqueFrame::new(seq, step);
    for &t in tau {
        f.push_torque(t).unwrap();
    }
    f
}

/// Lockstep over a socket pair, twice: bit-identical states, equal to the in-process plant's; a
/// frame with the wrist's torque just over its 15 N·m effort is refused whole, counted in every
/// later state, and its step runs on the torques held from the frame before.
#[test]
fn lockstep_over_a_socket_pair_is_bit_identical_and_refuses_torques_over_the_effort() {
    let scene = arm3_at(&[-1.0, 0.6, 0.2], 1.0); // 200 steps
    let over_at = 50;
    let run = || {
        let (ctl, host) = SeqPacket::pair().unwrap();
        let s = scene.clone();
        let plant = std::thread::spawn(move || {
            let mut plant = RobotPlant::new(&s).unwrap();
            run_lockstep(&mut plant, &mut FrameLink::new(host)).unwrap()
        });
        let mut link = FrameLink::new(ctl);
        let mut reference = RobotPlant::new(&scene).unwrap();
        let mut held = [0.0; 3];
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut states = Vec::new();
        loop {
            let state = link.recv_state(deadline).unwrap();
            assert_eq!(state.joints.len(), 3);
            if state.step > 0 {
                let expected = reference.step(&held);
                for (a, b) in state.joints.iter().zip(&expected.joints) {
                    assert_eq!(a.position_rad.to_bits(), b.position_rad.to_bits());
                    assert_eq!(a.velocity_rad_s.to_bits(), b.velocity_rad_s.to_bits());
                }
            }
            let refused = u32::from(state.step > over_at);
            assert_eq!(
                (state.plant_rejected_frames, state.plant_over_limit_frames),
                (refused, refused),
                "step {}",
                state.step
            );
            states.push(state.clone());
            if state.flags.contains(StateFlags::FINAL) {
                break;
            }
            let mut tau = pd(&state);
            if state.step == over_at {
                tau[2] = f64::from_bits(15f64.to_bits() + 1);
            } else {
                held = tau;
            }
            link.send_torques(&torque_frame(state.step + 1, state.step, &tau))
                .unwrap();
        }
        let summary = plant.join().unwrap();
        assert_eq!(summary.end, RunEnd::EndOfScene);
        assert_eq!(summary.steps, 200);
        assert_eq!(summary.over_limit_torque_frames, 1);
        assert_eq!(summary.refused_torque_frames(), 1);
        states
    };
    let (a, b) = (run(), run());
    assert_eq!(a.len(), 201);
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.sim_time_s.to_bits(), y.sim_time_s.to_bits());
        assert_eq!(x.applied_torque_sequence, y.applied_torque_sequence);
        for (jx, jy) in x.joints.iter().zip(&y.joints) {
            assert_eq!(jx.position_rad.to_bits(), jy.position_rad.to_bits());
            assert_eq!(jx.velocity_rad_s.to_bits(), jy.velocity_rad_s.to_bits());
        }
    }
    // The refused frame's step ran on the held torques of frame `over_at`.
    let s = &a[over_at as usize + 1];
    assert_eq!(u64::from(s.applied_torque_sequence), over_at);
}

fn spawn(scene: &Path, mode: Mode) -> (std::process::Child, SeqPacket) {
    let (ours, theirs) = SeqPacket::pair().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sim-host"));
    let fd = theirs.inherit_into(&mut cmd);
    cmd.arg("--scene")
        .arg(scene)
        .args(["--fd", &fd.to_string(), "--mode", mode.name()])
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    drop(theirs);
    (child, ours)
}

fn arm3_scene_file() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/arm3.json")).to_path_buf()
}

/// The binary runs `scenes/arm3.json` (a robot scene whose `urdf` is relative to it, with a
/// push on the hand) end to end in lockstep: every state bit-identical to the in-process plant
/// of the same file (joints and bodies), 3 joints and 4 bodies per state, the final state at
/// 4 s, exit 0.
#[test]
fn the_binary_runs_the_arm3_scene_file_in_lockstep_bit_for_bit() {
    let path = arm3_scene_file();
    let scene = RobotScene::load(&path).unwrap();
    assert_eq!(scene.pushes.len(), 1);
    assert_eq!(scene.gravity_m_s2, G);
    let mut reference = RobotPlant::new(&scene).unwrap();
    let (child, raw) = spawn(&path, Mode::Lockstep);
    let mut link = FrameLink::new(raw);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut expected = reference.state_frame();
    loop {
        let got = link.recv_state(deadline).unwrap();
        assert_eq!(got.step, expected.step);
        assert_eq!(got.joints.len(), 3);
        assert_eq!(got.bodies.len(), 4);
        for (a, b) in got.joints.iter().zip(&expected.joints) {
            assert_eq!(
                a.position_rad.to_bits(),
                b.position_rad.to_bits(),
                "step {}",
                got.step
            );
            assert_eq!(a.velocity_rad_s.to_bits(), b.velocity_rad_s.to_bits());
        }
        for (a, b) in got.bodies.iter().zip(&expected.bodies) {
            assert_eq!(a.com_m.map(f64::to_bits), b.com_m.map(f64::to_bits));
            assert_eq!(
                a.velocity_m_s.map(f64::to_bits),
                b.velocity_m_s.map(f64::to_bits)
            );
        }
        if got.flags.contains(StateFlags::FINAL) {
            assert_eq!(got.step, 800);
            break;
        }
        let tau = pd(&got);
        link.send_torques(&torque_frame(got.step + 1, got.step, &tau))
            .unwrap();
        expected = reference.step(&tau);
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("end of scene after 800 steps"), "{err}");
}

/// In real time too: states with 3 joints at the plant's pace, the controller closing ends it
/// cleanly.
#[test]
fn the_binary_runs_the_arm3_scene_file_in_real_time() {
    let (child, raw) = spawn(&arm3_scene_file(), Mode::Realtime);
    let mut link = FrameLink::new(raw);
    let start = Instant::now();
    let deadline = start + Duration::from_secs(10);
    for _ in 0..20 {
        let got = link.recv_state(deadline).unwrap();
        assert_eq!(got.joints.len(), 3);
        match link.send_torques(&torque_frame(got.sequence + 1, got.step, &pd(&got))) {
            Ok(()) | Err(LinkError::PeerClosed) => {}
            Err(e) => panic!("{e}"),
        }
    }
    // 19 steps of 5 ms after the first state.
    assert!(start.elapsed() > Duration::from_millis(90));
    drop(link);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An arm3 scene the plant cannot simulate is refused with code 2, naming the scene file, the
/// field and the reason (here a push on a link arm3 does not have).
#[test]
fn a_bad_arm3_scene_names_the_file_and_the_field() {
    let path = temp_dir().join("bad-arm3.json");
    std::fs::write(
        &path,
        format!(
            r#"{{"kind": "robot", "urdf": "{}", "end_time_s": 1, "gravity_m_s2": [0, -9.81, 0], "pushes": [{{"body": "finger", "force_n": [1, 0, 0], "start_s": 0, "duration_s": 1}}]}}"#,
            arm3().display()
        ),
    )
    .unwrap();
    let (child, _link) = spawn(&path, Mode::Lockstep);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("bad scene file {}", path.display())),
        "{err}"
    );
    assert!(err.contains("field `pushes[0].body`"), "{err}");
    assert!(err.contains("no link `finger`"), "{err}");
    assert!(
        err.contains("bodies: base, upper_arm, forearm, hand"),
        "{err}"
    );
}

// ---- Walls and contact forces -----------------------------------------------------------------

/// The shoulder torque pressing the upper arm onto the wall's edge, N·m.
const PRESS_NM: f64 = -5.0;

fn arm3_wall_scene_file() -> PathBuf {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenes/arm3_wall.json"
    ))
    .to_path_buf()
}

/// The torques of the wall scenes: a constant shoulder torque pressing down, the elbow and wrist
/// held at (0.3, 0) rad by PDs (their torques load joints the contact on the upper arm does not).
fn press(f: &StateFrame) -> [f64; 3] {
    let (q, v) = (qs(f), vs(f));
    [
        PRESS_NM,
        30.0 * (0.3 - q[1]) - 2.0 * v[1],
        4.0 * (0.0 - q[2]) - 0.2 * v[2],
    ]
}

/// `scenes/arm3_wall.json`: gravity off, the arm straight out with the elbow at 0.3 rad, a wall
/// below the upper arm whose top edge runs along z through (0.2, −0.1). The constant shoulder
/// torque turns the upper arm down onto the edge (first touch at step 45, 0.225 s, as for the
/// chain plant), where it stays. At rest, the wall's force F on the upper arm (body 1) acts at
/// the edge (an edge-on-face contact: the wall's edge on the upper arm's lower face; the edge
/// point is taken as the point of application):
///
/// - it is finite, non-zero and points away from the wall: up, and along the upper arm's
///   outward face normal (−sin q₀, cos q₀);
/// - the shoulder's balance τ₀ + (p × F)_z = 0 holds within 1%: measured 5.0002 against 5 N·m
///   (the chain plant 4.996). The edge is 0.22 m along the arm from the shoulder and 0.04 m
///   below its axis, so the normal force (22.72 N) gives 4.998 N·m and the friction along the
///   arm, F_t, another 0.04·F_t. At rest that friction is statically indeterminate (any F_t in
///   the cone with 0.22·F_n + 0.04·F_t = 5 holds the arm), and the two plants' solvers leave it
///   differently: the chain plant 2.5 N (2% of the moment, which made the balance check the
///   friction's basis and sign too), the robot plant 0.055 N (0.04%), so here the balance checks
///   the normal force, and the friction only through the cone below;
/// - the friction stays within the cone, |F_t| ≤ μ F_n with μ = 0.5 (the robot plant's colliders
///   have friction 1 combined by product, so μ is the wall's 0.5; the chain plant's 0.5 and 0.5
///   averaged gave the same). The out-of-plane component, z, is friction along a direction the
///   planar arm cannot move in, left by the solver's warm start from the impact: measured
///   +0.75 N (the chain plant −6.3 N), bounded by the cone, not otherwise checked;
/// - no other link is pushed, no contact was left out.
#[test]
fn a_wall_pushes_back_on_the_link_pressed_into_it() {
    let scene = RobotScene::load(&arm3_wall_scene_file()).unwrap();
    assert_eq!(scene.walls.len(), 1);
    assert_eq!(scene.gravity_m_s2, [0.0; 3]);
    let mut p = RobotPlant::new(&scene).unwrap();
    let upper = p.link_body_id("upper_arm").unwrap();
    assert_eq!(upper.0, 1);
    assert_eq!(p.link_body_id("hand").map(|b| b.0), Some(3));
    let mut f = p.state_frame();
    assert!(f.contacts.is_empty());
    let mut first = None;
    while !p.clock().is_finished() {
        f = p.step(&press(&f));
        assert!(f.contacts.iter().all(|c| c.body == upper), "{f:?}");
        if first.is_none() && !f.contacts.is_empty() {
            first = Some(f.step);
        }
    }
    assert_eq!(p.contacts_left_out(), 0);
    assert_eq!(p.contacts(), f.contacts());
    let first = first.unwrap();
    println!("first touch at step {first}");
    assert!((30..60).contains(&first), "first touch at step {first}");
    let (q, v) = (qs(&f), vs(&f));
    assert!(v.iter().all(|w| w.abs() < 1e-2), "not at rest: {v:?}");
    let force = f.contact_force_on(upper).unwrap();
    assert!(force.iter().all(|x| x.is_finite()));
    let (s0, c0) = q[0].sin_cos();
    let normal = [-s0, c0];
    let along = [c0, s0];
    let f_n = force[0] * normal[0] + force[1] * normal[1];
    let f_t = force[0] * along[0] + force[1] * along[1];
    assert!(force[1] > 0.0 && f_n > 0.0, "{force:?}");
    let edge = [0.2, -0.1];
    let moment = edge[0] * force[1] - edge[1] * force[0];
    println!(
        "at rest at q = {q:.4?}: force on the upper arm {force:.4?} N (normal {f_n:.3}, along the arm {f_t:.3}); moment about the shoulder {moment:.4} N·m against {PRESS_NM}"
    );
    assert!(
        (moment / -PRESS_NM - 1.0).abs() < 0.01,
        "moment {moment} vs {}",
        -PRESS_NM
    );
    assert!(
        (f_t * f_t + force[2] * force[2]).sqrt() <= 0.5 * f_n * 1.001,
        "{force:?}"
    );
}

/// Through the binary: `scenes/arm3_wall.json` in lockstep, pressed as above; every state's
/// contact forces bit-identical to the in-process plant's, and the last carries the wall's force
/// on the upper arm.
#[test]
fn the_binary_carries_the_wall_forces_in_its_state_frames() {
    let path = arm3_wall_scene_file();
    let mut reference = RobotPlant::new(&RobotScene::load(&path).unwrap()).unwrap();
    let (child, raw) = spawn(&path, Mode::Lockstep);
    let mut link = FrameLink::new(raw);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut expected = reference.state_frame();
    let mut with_contacts = 0;
    loop {
        let got = link.recv_state(deadline).unwrap();
        assert_eq!(got.step, expected.step);
        assert_eq!(
            got.contacts.len(),
            expected.contacts.len(),
            "step {}",
            got.step
        );
        for (a, b) in got.contacts.iter().zip(&expected.contacts) {
            assert_eq!(a.body, b.body);
            assert_eq!(a.force_n.map(f64::to_bits), b.force_n.map(f64::to_bits));
        }
        with_contacts += usize::from(!got.contacts.is_empty());
        if got.flags.contains(StateFlags::FINAL) {
            let force = got
                .contact_force_on(control_core::frames::BodyId(1))
                .unwrap();
            assert!(force[1] > 10.0, "{force:?}");
            break;
        }
        let tau = press(&got);
        link.send_torques(&torque_frame(got.step + 1, got.step, &tau))
            .unwrap();
        expected = reference.step(&tau);
    }
    println!("{with_contacts} states with a wall force");
    assert!(with_contacts > 200, "{with_contacts}");
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
