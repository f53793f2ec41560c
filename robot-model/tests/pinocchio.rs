//! robot-model's loader and `control_core::tree::Tree` against an independent reference:
//! Pinocchio 4.1 on the same URDF files.
//!
//! The reference (tests/data/pinocchio/<robot>.json) is made by tools/pinocchio_reference.py
//! (see its header for what it records and how; scripts/check-pinocchio-reference.sh checks the
//! committed files against a fresh run). Each robot here is read with [`robot_model::load`]
//! (mimic joints as independent joints, as Pinocchio loads them by default; the base fixed or
//! floating as the reference says), built into a `Tree::<64>`, evaluated at the recorded states
//! and compared with every recorded quantity:
//!
//! | quantity | ours | Pinocchio |
//! |---|---|---|
//! | `mass_matrix` | `mass_matrix()` | `crba` (symmetrised) |
//! | `gravity` | `gravity(&g)` | `computeGeneralizedGravity` |
//! | `rnea` | `inverse_dynamics(&v, &a, &g)` | `rnea(q, v, a)` |
//! | `total_mass`, `com` | `center_of_mass()` | `computeTotalMass`, `centerOfMass` |
//! | `com_jacobian` | `com_jacobian()` | `jacobianCenterOfMass` |
//! | `subtree_mass`, `subtree_com` | `composite()` | `centerOfMass(…, True)`: `data.mass`, `data.com` (moved to the world) |
//! | `frame_position`, `frame_rotation` | `frame_pose(body, &placement)` | `data.oMf` |
//! | `frame_jacobian` | `frame_jacobian(body, &placement)` | `computeFrameJacobian(…, LOCAL_WORLD_ALIGNED)` |
//!
//! Joints are matched by name between Pinocchio's order and the loader's, and generalized
//! velocities, accelerations and forces (and the mass matrix's and Jacobians' columns) by the
//! matching velocity indices; a floating base's 6 come first in both. Subtrees are matched by
//! the URDF link of the body that roots them (a fixed base's: Pinocchio's universe, data.mass[0],
//! whose own inertia neither side counts).
//!
//! **Tolerance.** Every quantity must agree to 1e-12 *relative to the largest magnitude of the
//! reference quantity*: the error of a vector or matrix is max |ours − reference| / max
//! |reference| over its entries (per sample; per frame for the frame quantities; all subtrees of
//! a sample together for the subtree quantities), a scalar's is |ours − reference| / |reference|.
//! The inputs are read exactly: the reference writes floats with Python's repr (the shortest
//! string that reads back to the same double) and serde_json's `float_roundtrip` reads them back
//! to that double, so q, v, a and the base pose are the very doubles Pinocchio used.
//!
//! The URDFs are example-robot-data's (not committed): scripts/example-robot-data.sh prints its
//! robots directory, installing the pip package into a cache when it is missing.
//!
//! Run with `--nocapture` to see each robot's largest error per quantity.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use control_core::tree::{BaseKind, Placement, Tree};
use nalgebra::{Isometry3, Matrix3, Quaternion, Rotation3, Translation3, UnitQuaternion, Vector3};
use robot_model::LoadOptions;
use serde_json::Value;

/// The capacity of the trees built here (talos_full has 50 velocity degrees of freedom).
const N: usize = 64;

/// The largest relative error accepted for any quantity (see the module docs).
const TOLERANCE: f64 = 1e-12;

/// example-robot-data's robots directory, from scripts/example-robot-data.sh (run once).
fn robots_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/example-robot-data.sh");
        let out = Command::new("sh")
            .arg(&script)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        assert!(
            out.status.success(),
            "{} failed ({}):\n{}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).expect("the script prints a UTF-8 path");
        let dir = PathBuf::from(stdout.lines().last().unwrap_or("").trim());
        assert!(
            dir.is_dir(),
            "{} printed {:?}, not a directory",
            script.display(),
            dir
        );
        dir
    })
}

/// A placement (translation, rotation matrix) as the pose `Tree::kinematics` takes.
fn isometry(p: &Placement) -> Isometry3<f64> {
    let r = Matrix3::from_fn(|i, j| p.rotation[i][j]);
    Isometry3::from_parts(
        Translation3::new(p.xyz_m[0], p.xyz_m[1], p.xyz_m[2]),
        UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(r)),
    )
}

fn reference(robot: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/pinocchio")
        .join(format!("{robot}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn vector(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(num)
        .collect()
}

fn matrix(v: &Value) -> Vec<Vec<f64>> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(vector)
        .collect()
}

/// The worst disagreement seen for one quantity.
#[derive(Debug, Clone, Default)]
struct Worst {
    error: f64,
    /// How many numbers were compared.
    count: usize,
    /// Where: sample, item (frame or subtree link, if any) and entry, with both values.
    at: String,
}

/// Every quantity's worst relative error over a robot's samples.
#[derive(Debug, Default)]
struct Errors(BTreeMap<&'static str, Worst>);

impl Errors {
    /// Records the comparison of `ours` with `reference` (same length; entry i labelled by
    /// `label(i)`), relative to the largest magnitude in `reference`.
    fn compare(
        &mut self,
        quantity: &'static str,
        where_: &str,
        ours: &[f64],
        reference: &[f64],
        label: impl Fn(usize) -> String,
    ) {
        assert_eq!(
            ours.len(),
            reference.len(),
            "{quantity} {where_}: lengths differ"
        );
        let scale = reference.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
        // A relative error needs something to be relative to: no recorded quantity is all zero.
        assert!(
            scale > 0.0,
            "{quantity} {where_}: the reference is all zero"
        );
        let worst = self.0.entry(quantity).or_default();
        worst.count += ours.len();
        for (i, (o, r)) in ours.iter().zip(reference).enumerate() {
            let error = (o - r).abs() / scale;
            // NaN compares false: record it as infinitely wrong.
            let error = if error.is_nan() { f64::INFINITY } else { error };
            if error > worst.error || (worst.at.is_empty() && i == 0) {
                worst.error = error;
                worst.at = format!(
                    "{where_} {}: ours {o:e}, Pinocchio {r:e} (scale {scale:e})",
                    label(i)
                );
            }
        }
    }
}

/// The loaded model, its tree, and the maps from the reference's numbering to ours.
struct Setup {
    model: robot_model::RobotModel,
    tree: Tree<N>,
    /// For each of our velocity indices, Pinocchio's.
    pin_v: Vec<usize>,
}

fn setup(robot: &str, reference: &Value) -> Setup {
    let floating = reference["floating_base"].as_bool().expect("floating_base");
    let urdf = robots_dir().join(reference["urdf"].as_str().expect("urdf"));
    let options = LoadOptions {
        mimic_as_independent: true,
        floating_base: floating,
        ..Default::default()
    };
    let model = robot_model::load(&urdf, &options)
        .unwrap_or_else(|e| panic!("{robot}: {}: {e}", urdf.display()));
    let expected_base = if floating {
        BaseKind::Floating
    } else {
        BaseKind::Fixed
    };
    assert_eq!(model.base, expected_base, "{robot}: base kind");
    let tree = model
        .tree::<N>()
        .unwrap_or_else(|e| panic!("{robot}: Tree::new: {e}"));

    // Joints by name: every joint of ours is one of Pinocchio's and the other way round.
    let pin_joints: HashMap<&str, usize> = reference["joints"]
        .as_array()
        .expect("joints")
        .iter()
        .map(|j| {
            let idx_v = j["idx_v"].as_u64().expect("idx_v") as usize;
            (j["name"].as_str().expect("name"), idx_v)
        })
        .collect();
    let nv = reference["nv"].as_u64().expect("nv") as usize;
    assert_eq!(tree.nv(), nv, "{robot}: nv");
    assert_eq!(model.joints.len(), pin_joints.len(), "{robot}: joint count");
    let offset = if floating { 6 } else { 0 };
    let mut pin_v: Vec<usize> = (0..offset).collect();
    for (k, joint) in model.joints.iter().enumerate() {
        assert_eq!(tree.velocity_index(k), Some(offset + k));
        let idx_v = *pin_joints.get(joint.name.as_str()).unwrap_or_else(|| {
            panic!(
                "{robot}: joint {:?} is not in Pinocchio's model",
                joint.name
            )
        });
        pin_v.push(idx_v);
    }
    let mut sorted = pin_v.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        (0..nv).collect::<Vec<_>>(),
        "{robot}: velocity indices"
    );
    Setup { model, tree, pin_v }
}

/// The base pose of a sample: its translation and unit quaternion (x, y, z, w).
fn base_pose(sample: &Value) -> Isometry3<f64> {
    let t = vector(&sample["base"]["translation"]);
    let q = vector(&sample["base"]["quaternion_xyzw"]);
    Isometry3::from_parts(
        Translation3::new(t[0], t[1], t[2]),
        UnitQuaternion::new_unchecked(Quaternion::new(q[3], q[0], q[1], q[2])),
    )
}

fn check_robot(robot: &str) -> Errors {
    let reference = reference(robot);
    let Setup { model, tree, pin_v } = setup(robot, &reference);
    let nv = pin_v.len();
    let gravity = {
        let g = vector(&reference["gravity"]);
        Vector3::new(g[0], g[1], g[2])
    };
    let mut errors = Errors::default();
    let name_v = |i: usize| -> String {
        let offset = nv - model.joints.len();
        match i.checked_sub(offset) {
            Some(k) => model.joints[k].name.clone(),
            None => format!("base[{i}]"),
        }
    };

    for (s, sample) in reference["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .enumerate()
    {
        let at = format!("sample {s}");
        let mut q = [0.0; N];
        for (k, joint) in model.joints.iter().enumerate() {
            q[k] = num(&sample["q"][joint.name.as_str()]);
        }
        let (v_pin, a_pin) = (vector(&sample["v"]), vector(&sample["a"]));
        let mut v = [0.0; N];
        let mut a = [0.0; N];
        for i in 0..nv {
            v[i] = v_pin[pin_v[i]];
            a[i] = a_pin[pin_v[i]];
        }
        // A fixed base stands where the loader says it is welded (the reference's base pose is
        // the identity: Pinocchio's universe).
        let pose = match model.base {
            BaseKind::Floating => base_pose(sample),
            BaseKind::Fixed => isometry(&model.base_placement),
        };
        let kin = tree
            .kinematics(&pose, &q)
            .unwrap_or_else(|e| panic!("{robot} {at}: kinematics: {e}"));

        // Mass matrix.
        let m = kin.mass_matrix().expect("mass_matrix");
        let m_ref = matrix(&sample["mass_matrix"]);
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for i in 0..nv {
            for j in 0..nv {
                ours.push(m[(i, j)]);
                theirs.push(m_ref[pin_v[i]][pin_v[j]]);
            }
        }
        errors.compare("mass_matrix", &at, &ours, &theirs, |e| {
            format!("({}, {})", name_v(e / nv), name_v(e % nv))
        });

        // Generalized gravity and inverse dynamics.
        let by_v = |x: &[f64]| -> Vec<f64> { (0..nv).map(|i| x[pin_v[i]]).collect() };
        let g = kin.gravity(&gravity).expect("gravity");
        errors.compare(
            "gravity",
            &at,
            &g.as_slice()[..nv],
            &by_v(&vector(&sample["gravity_torque"])),
            name_v,
        );
        let tau = kin
            .inverse_dynamics(&v, &a, &gravity)
            .expect("inverse_dynamics");
        errors.compare(
            "rnea",
            &at,
            &tau.as_slice()[..nv],
            &by_v(&vector(&sample["rnea"])),
            name_v,
        );

        // Centre of mass and its Jacobian.
        let (mass, com) = kin.center_of_mass().expect("center_of_mass");
        errors.compare(
            "total_mass",
            &at,
            &[mass],
            &[num(&sample["total_mass"])],
            |_| String::new(),
        );
        errors.compare("com", &at, com.as_slice(), &vector(&sample["com"]), |i| {
            format!("[{i}]")
        });
        let jc = kin.com_jacobian().expect("com_jacobian");
        let jc_ref = matrix(&sample["com_jacobian"]);
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for r in 0..3 {
            for i in 0..nv {
                ours.push(jc[(r, i)]);
                theirs.push(jc_ref[r][pin_v[i]]);
            }
        }
        errors.compare("com_jacobian", &at, &ours, &theirs, |e| {
            format!("row {} column {}", e / nv, name_v(e % nv))
        });

        // Subtrees, by the link of the body that roots them.
        let composite = kin.composite().expect("composite");
        let subtrees = sample["subtree"].as_object().expect("subtree");
        let (mut masses, mut masses_ref, mut coms, mut coms_ref) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut links = Vec::new();
        for (b, body) in model.bodies.iter().enumerate() {
            let entry = if b == 0 && model.base == BaseKind::Fixed {
                &sample["subtree_fixed_base"]
            } else {
                subtrees.get(&body.link).unwrap_or_else(|| {
                    panic!(
                        "{robot}: body {b} ({:?}) roots no subtree of Pinocchio's",
                        body.link
                    )
                })
            };
            masses.push(composite.subtree_mass(b).expect("subtree_mass"));
            masses_ref.push(num(&entry["mass"]));
            coms.extend_from_slice(composite.subtree_com(b).expect("subtree_com").as_slice());
            coms_ref.extend(vector(&entry["com"]));
            links.push(body.link.clone());
        }
        let moving_bodies = match model.base {
            BaseKind::Fixed => model.bodies.len() - 1,
            BaseKind::Floating => model.bodies.len(),
        };
        assert_eq!(
            moving_bodies,
            subtrees.len(),
            "{robot}: Pinocchio has {} moving bodies, we have {moving_bodies}",
            subtrees.len()
        );
        errors.compare("subtree_mass", &at, &masses, &masses_ref, |i| {
            links[i].clone()
        });
        errors.compare("subtree_com", &at, &coms, &coms_ref, |i| {
            format!("{}[{}]", links[i / 3], i % 3)
        });

        // Named frames.
        for (name, frame) in sample["frames"].as_object().expect("frames") {
            let ours_frame = model
                .frame(name)
                .unwrap_or_else(|| panic!("{robot}: no frame {name:?}"));
            let (body, placement) = (ours_frame.body, ours_frame.placement);
            let where_ = format!("{at} frame {name}");
            let pose = kin
                .frame_pose(body, &placement)
                .unwrap_or_else(|e| panic!("{robot} {where_}: frame_pose: {e}"));
            errors.compare(
                "frame_position",
                &where_,
                pose.translation.vector.as_slice(),
                &vector(&frame["placement"]["translation"]),
                |i| format!("[{i}]"),
            );
            let rotation = pose.rotation.to_rotation_matrix().into_inner();
            let r_ref = matrix(&frame["placement"]["rotation"]);
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            for r in 0..3 {
                for c in 0..3 {
                    ours.push(rotation[(r, c)]);
                    theirs.push(r_ref[r][c]);
                }
            }
            errors.compare("frame_rotation", &where_, &ours, &theirs, |e| {
                format!("({}, {})", e / 3, e % 3)
            });
            let j = kin
                .frame_jacobian(body, &placement)
                .unwrap_or_else(|e| panic!("{robot} {where_}: frame_jacobian: {e}"));
            let j_ref = matrix(&frame["jacobian_local_world_aligned"]);
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            for r in 0..6 {
                for i in 0..nv {
                    ours.push(j[(r, i)]);
                    theirs.push(j_ref[r][pin_v[i]]);
                }
            }
            errors.compare("frame_jacobian", &where_, &ours, &theirs, |e| {
                format!("row {} column {}", e / nv, name_v(e % nv))
            });
        }
    }
    errors
}

/// Compares one robot, prints its table (one print, so that parallel tests do not interleave)
/// and fails on any quantity above the tolerance.
fn run(robot: &str) {
    let errors = check_robot(robot);
    let mut out = format!("\n{robot}: max relative error per quantity (tolerance {TOLERANCE:e})\n");
    let mut failures = Vec::new();
    for (quantity, worst) in &errors.0 {
        let flag = if worst.error <= TOLERANCE {
            ""
        } else {
            failures.push(format!("{quantity}: {:.3e} at {}", worst.error, worst.at));
            "  <-- FAIL"
        };
        let _ = writeln!(
            out,
            "  {quantity:<16} {:.2e}  ({} numbers){flag}",
            worst.error, worst.count
        );
    }
    print!("{out}");
    assert!(
        failures.is_empty(),
        "{robot}: disagrees with Pinocchio beyond {TOLERANCE:e} (relative):\n  {}",
        failures.join("\n  ")
    );
}

#[test]
fn panda_matches_pinocchio() {
    run("panda");
}

#[test]
fn ur5_matches_pinocchio() {
    run("ur5");
}

#[test]
fn talos_left_arm_matches_pinocchio() {
    run("talos_left_arm");
}

#[test]
fn so100_matches_pinocchio() {
    run("so100");
}

#[test]
fn solo12_matches_pinocchio() {
    run("solo12");
}

#[test]
fn talos_full_matches_pinocchio() {
    run("talos_full");
}

#[test]
fn human_matches_pinocchio() {
    run("human");
}
