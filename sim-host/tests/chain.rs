//! The URDF chain plant (`sim_host::chain`) on `models/arm3.urdf`, against an independent f64
//! reading of the same file with `urdf-rs` (the parser rapier3d-urdf uses): the round trip of
//! names, axes and masses, the mass matrix against the composite inertias and kinetic energy,
//! energy conservation, torque limits from `<limit effort>`, lockstep determinism over a socket
//! pair, and the `sim-host` binary running a chain scene file end to end.
#![allow(missing_docs)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use control_core::frames::{StateFlags, StateFrame, TorqueFrame};
use sim_host::host::run_lockstep;
use sim_host::{ChainPlant, ChainScene, ConfigurationError, Mode, RunEnd};
use transport::{FrameLink, LinkError, SeqPacket};

const G: [f64; 3] = [0.0, -9.81, 0.0];

fn arm3() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../models/arm3.urdf")).to_path_buf()
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
    let dir = std::env::temp_dir().join(format!("sim-host-chain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("arm3-continuous.urdf");
    std::fs::write(&p, text).unwrap();
    p
}

fn arm3_at(q0: &[f64], end_time_s: f64) -> ChainScene {
    let mut scene = ChainScene::new(arm3(), end_time_s, G);
    scene.initial_positions_rad = q0.to_vec();
    scene
}

/// The round trip: what Rapier built from the file (through rapier3d-urdf) and what urdf-rs reads
/// from it agree on the joints (count, names, order, torque limits, world axes) and the links
/// (names, masses).
#[test]
fn the_urdf_loads_and_plant_and_model_agree_on_joints_axes_and_masses() {
    let m = model(&arm3());
    let q0 = [-1.2, 0.9, -0.3];
    let p = ChainPlant::new(&arm3_at(&q0, 1.0)).unwrap();
    assert_eq!(p.joint_count(), 3);
    assert_eq!(p.joint_names(), ["shoulder", "elbow", "wrist"]);
    assert_eq!(p.joint_names(), m.names);
    assert_eq!(p.torque_limits_nm(), m.effort);
    assert_eq!(p.torque_limits_nm(), [80.0, 60.0, 15.0]);
    assert_eq!(p.link_names(), m.link_names);
    for (name, rapier) in p.link_names().iter().zip(p.link_masses()) {
        let urdf = m.links[*name].mass;
        // Rapier holds f32: the nearest f32 of the file's value.
        assert!(
            (rapier - urdf).abs() <= 1e-7 * urdf.max(1.0),
            "{name}: Rapier {rapier} kg, URDF {urdf} kg"
        );
    }
    assert_eq!(p.link_masses()[0], 0.0, "the base has no inertial");
    // Axes at the start state, from urdf-rs's origins and axes composed in f64.
    let pose = m.fk(&q0);
    for (i, (rapier, &urdf)) in p.joint_axes_world().into_iter().zip(&pose.axes).enumerate() {
        let err = norm(sub(rapier, urdf));
        assert!(err < 1e-6, "joint {i}: Rapier {rapier:?}, URDF {urdf:?}");
        assert_eq!(urdf, [0.0, 0.0, 1.0]);
    }
    // The state is the scene's, and the links are where the joints say.
    let f = ChainPlant::new(&arm3_at(&q0, 1.0)).unwrap().state_frame();
    for (q, want) in qs(&f).into_iter().zip(q0) {
        assert!((q - want).abs() < 1e-6, "{q} vs {want}");
    }
    for (name, c) in p.link_names().iter().zip(p.link_coms_world()).skip(1) {
        let (want, _) = m.world_body(&pose, name);
        assert!(norm(sub(c, want)) < 1e-6, "{name}: {c:?} vs {want:?}");
    }
}

/// Rapier's joint-space mass matrix is symmetric positive definite, its diagonal is the inertia
/// of each joint's subtree about the joint's axis (computed here from the URDF's masses, centres
/// of mass and inertias, in f64), and the whole matrix gives the kinetic energy ½q̇ᵀMq̇ computed
/// here link by link. Checked at four start states across the joints' ranges and after a swing
/// from each (0.5 s towards a posture under a PD).
///
/// Tolerance 5e-6 relative: this Rapier is f32 (rapier3d, not rapier3d-f64). The file's values
/// are rounded to f32 (6e-8 relative), the matrix is assembled from f32 Jacobians and inertias and
/// rebuilt from its f32 LU factors; measured worst 1.3e-6 on the diagonal (always the hand's
/// 0.00543844 kg·m² about the wrist, about 20 f32 ulps, Rapier's always the smaller) and 1.1e-6 on
/// the energies.
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
        let mut p = ChainPlant::new(&arm3_at(q0, 2.0)).unwrap();
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
        // Positive definite: Cholesky.
        let mut l = [[0.0f64; 3]; 3];
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

/// Asking for the mass matrix between steps changes nothing: the states are bit-identical to a
/// run that never asks.
#[test]
fn reading_the_mass_matrix_does_not_disturb_the_simulation() {
    let scene = arm3_at(&[-1.0, 0.6, 0.2], 1.0);
    let run = |ask: bool| {
        let mut p = ChainPlant::new(&scene).unwrap();
        let mut out = Vec::new();
        while !p.is_finished() {
            if ask {
                let _ = p.mass_matrix();
            }
            let f = p.step(&[3.0, -1.0, 0.2]);
            out.extend(qs(&f).into_iter().chain(vs(&f)).map(f64::to_bits));
        }
        out
    };
    assert_eq!(run(false), run(true));
}

/// The mass matrix at a given configuration, on an offline replica built from the same scene:
/// at the scene's start it is the start's `mass_matrix()`; at another q it differs, stays
/// symmetric positive definite and matches the composite inertias; along a recorded motion of a
/// running plant it is that plant's own `mass_matrix()` at each recorded state (measured: within
/// 7.5e-9 kg·m², f32 rounding of the re-posed joint coordinates; bounded by 1e-6); wrong lengths and non-finite values are refused and leave the replica as it was.
#[test]
fn the_mass_matrix_at_a_configuration_without_stepping() {
    let q0 = [-1.0, 0.6, 0.2];
    let scene = arm3_at(&q0, 1.0);
    let mut replica = ChainPlant::new(&scene).unwrap();
    let at_start = replica.mass_matrix();
    let at_q0 = replica.mass_matrix_at(&q0).unwrap();
    assert_eq!(at_q0, at_start);

    let model = model(&arm3());
    let spd = |mm: &[Vec<f64>], q: &[f64]| {
        let biggest = mm.iter().flatten().fold(0.0f64, |a, x| a.max(x.abs()));
        let mut l = [[0.0f64; 3]; 3];
        for i in 0..3 {
            for j in 0..=i {
                assert!(
                    (mm[i][j] - mm[j][i]).abs() <= 1e-6 * biggest,
                    "not symmetric at {q:?}: {mm:?}"
                );
                let s: f64 = (0..j).map(|k| l[i][k] * l[j][k]).sum();
                if i == j {
                    assert!(mm[i][i] - s > 0.0, "not positive definite at {q:?}: {mm:?}");
                    l[i][i] = (mm[i][i] - s).sqrt();
                } else {
                    l[i][j] = (mm[i][j] - s) / l[j][j];
                }
            }
        }
    };
    let q1 = [0.8, 2.0, -1.0];
    let m1 = replica.mass_matrix_at(&q1).unwrap();
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
    let mut running = ChainPlant::new(&scene).unwrap();
    let mut f = running.state_frame();
    let mut worst: f64 = 0.0;
    while !running.is_finished() {
        f = running.step(&pd(&f));
        let live = running.mass_matrix();
        let offline = replica.mass_matrix_at(&qs(&f)).unwrap();
        spd(&offline, &qs(&f));
        for (a, b) in live.iter().flatten().zip(offline.iter().flatten()) {
            worst = worst.max((a - b).abs());
        }
    }
    println!("along the recorded motion: largest |M_live − M_offline| = {worst:e} kg·m²");
    assert!(worst <= 1e-6, "{worst}");

    // Refusals leave the replica where it was.
    let before = replica.joint_states();
    let e = replica.mass_matrix_at(&[0.0, 0.0]).unwrap_err();
    assert_eq!(
        e,
        ConfigurationError::WrongLength {
            what: "q_rad",
            got: 2,
            joints: 3
        }
    );
    assert_eq!(
        e.to_string(),
        "q_rad: 2 values for a chain of 3 joints (one per joint, in URDF order)"
    );
    assert!(replica.mass_matrix_at(&[0.0; 4]).is_err());
    let e = replica.mass_matrix_at(&[0.0, f64::NAN, 0.0]).unwrap_err();
    assert!(
        matches!(e, ConfigurationError::NonFinite { what: "q_rad", joint: 1, value } if value.is_nan()),
        "{e}"
    );
    let e = replica
        .set_configuration(&[0.0; 3], &[0.0, 0.0, f64::INFINITY])
        .unwrap_err();
    assert_eq!(e.to_string(), "qd_rad_s[2] is inf: must be finite");
    assert!(replica.set_configuration(&[0.0; 3], &[0.0; 2]).is_err());
    assert_eq!(replica.joint_states(), before);
    // Velocities set are velocities read.
    replica
        .set_configuration(&[0.1, 0.2, 0.3], &[1.0, -2.0, 0.5])
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
/// every free swing of arm3 from rest reaches one (its elbow stops straight at 0; searched over a
/// grid of starts). Tolerances, at the plant's default dt = 5 ms:
/// - a moderate swing released from rest at (−1.0, 0.3, 0) rad (joint speeds up to 5.6 rad/s):
///   |ΔE| < 1e-3 of M g L (M = 3.65 kg, L = 0.76 m: 27.2 J) over 2 s; measured 3.4e-4, back to
///   6e-6 at the end (the error oscillates, it does not drift);
/// - a whip, released straight out at (0, 0, 0) (the hand reaches 37 rad/s): Rapier's multibody
///   integration (semi-implicit, with the velocity-dependent terms implicit) loses energy at
///   such speeds, first order in dt: measured 2.7e-2 of M g L at 5 ms and 5.9e-3 at 1 ms. The test
///   bounds it by 4e-2 and checks that it shrinks at least 3× at 1 ms (an integration error, not a
///   damping left on: that would not shrink).
#[test]
fn a_free_chain_under_gravity_conserves_energy() {
    let m = model(&arm3());
    let urdf = arm3_without_limits();
    let scale = m.total_mass() * 9.81 * 0.76;
    let worst = |q0: [f64; 3], dt: f64| {
        let mut scene = ChainScene::new(&urdf, 2.0, G);
        scene.dt_s = dt;
        scene.initial_positions_rad = q0.to_vec();
        let mut p = ChainPlant::new(&scene).unwrap();
        let f = p.state_frame();
        let e0 = m.energy(&qs(&f), &vs(&f), G);
        let (mut worst, mut fastest, mut end) = (0.0f64, 0.0f64, 0.0);
        while !p.is_finished() {
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
/// for a joint the chain does not have passes only as 0.
#[test]
fn torque_limits_are_the_urdf_efforts() {
    let p = ChainPlant::new(&arm3_at(&[], 1.0)).unwrap();
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
            let mut plant = ChainPlant::new(&s).unwrap();
            run_lockstep(&mut plant, &mut FrameLink::new(host)).unwrap()
        });
        let mut link = FrameLink::new(ctl);
        let mut reference = ChainPlant::new(&scene).unwrap();
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

/// The binary runs `scenes/arm3.json` (a chain scene whose `urdf` is relative to it, with a push
/// on the hand) end to end in lockstep: every state bit-identical to the in-process plant of the
/// same file, 3 joints per state, the final state at 4 s, exit 0.
#[test]
fn the_binary_runs_a_chain_scene_file_in_lockstep_bit_for_bit() {
    let path = arm3_scene_file();
    let scene = ChainScene::load(&path).unwrap();
    assert_eq!(scene.pushes.len(), 1);
    let mut reference = ChainPlant::new(&scene).unwrap();
    let (child, raw) = spawn(&path, Mode::Lockstep);
    let mut link = FrameLink::new(raw);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut expected = reference.state_frame();
    loop {
        let got = link.recv_state(deadline).unwrap();
        assert_eq!(got.step, expected.step);
        assert_eq!(got.joints.len(), 3);
        for (a, b) in got.joints.iter().zip(&expected.joints) {
            assert_eq!(
                a.position_rad.to_bits(),
                b.position_rad.to_bits(),
                "step {}",
                got.step
            );
            assert_eq!(a.velocity_rad_s.to_bits(), b.velocity_rad_s.to_bits());
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
fn the_binary_runs_a_chain_scene_file_in_real_time() {
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

/// A chain scene the plant cannot simulate is refused with code 2, naming the scene file, the
/// field and the reason (here a push on a link arm3 does not have).
#[test]
fn a_bad_chain_scene_names_the_file_and_the_field() {
    let dir = std::env::temp_dir().join(format!("sim-host-chain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad-chain.json");
    std::fs::write(
        &path,
        format!(
            r#"{{"kind": "chain", "urdf": "{}", "end_time_s": 1, "gravity_m_s2": [0, -9.81, 0], "pushes": [{{"body": "finger", "force_n": [1, 0, 0], "start_s": 0, "duration_s": 1}}]}}"#,
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
        err.contains("links: base, upper_arm, forearm, hand"),
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
/// torque turns the upper arm down onto the edge (first touch at 0.225 s), where it stays. At
/// rest, the wall's force F on the upper arm (link 1 in URDF order) acts at the edge (an
/// edge-on-face contact: every contact point has x, y = 0.2, −0.1; the edge point is taken as
/// the point of application, Rapier's contact points lie within the penetration, < 1 mm, of it):
///
/// - it is finite, non-zero and points away from the wall: up, and along the upper arm's
///   outward face normal (−sin q₀, cos q₀);
/// - the shoulder's balance τ₀ + (p × F)_z = 0 holds within 1% (measured 0.1%: 4.996 against
///   5 N·m; the in-plane friction, 2.5 N along the arm, is 2% of the moment and is needed to get
///   there, which checks the friction's basis and sign too);
/// - the friction stays within the cone, |F_t| ≤ μ F_n with μ = 0.5 (the out-of-plane
///   component, z, is friction along a direction the planar chain cannot move in, left by the
///   solver's warm start from the impact: measured −6.3 N, bounded by the cone, not otherwise
///   checked);
/// - no other link is pushed, no contact was left out.
#[test]
fn a_wall_pushes_back_on_the_link_pressed_into_it() {
    let scene = ChainScene::load(&arm3_wall_scene_file()).unwrap();
    assert_eq!(scene.walls.len(), 1);
    let mut p = ChainPlant::new(&scene).unwrap();
    let upper = p.link_body_id("upper_arm").unwrap();
    assert_eq!(upper.0, 1);
    assert_eq!(p.link_body_id("hand").map(|b| b.0), Some(3));
    let mut f = p.state_frame();
    assert!(f.contacts.is_empty());
    let mut first = None;
    while !p.is_finished() {
        f = p.step(&press(&f));
        assert!(f.contacts.iter().all(|c| c.body == upper), "{f:?}");
        if first.is_none() && !f.contacts.is_empty() {
            first = Some(f.step);
        }
    }
    assert_eq!(p.contacts_left_out(), 0);
    assert_eq!(p.wall_contacts(), f.contacts());
    let first = first.unwrap();
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
    let mut reference = ChainPlant::new(&ChainScene::load(&path).unwrap()).unwrap();
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
    assert!(with_contacts > 200, "{with_contacts}");
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
