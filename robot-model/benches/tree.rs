//! ns per call of `control_core::tree::Tree` on robots loaded by robot-model, side by side with
//! Pinocchio (robot-model/tools/side_by_side.sh runs this and tools/pinocchio_bench.sh and
//! prints the table): `kinematics` + `mass_matrix_into` (Pinocchio's `crba`, which does its own
//! forward pass) and `kinematics` + `inverse_dynamics` (Pinocchio's `rnea`), for panda (fixed
//! base, 9 joints) and talos_full (floating base, 50 degrees of freedom), at the states of the
//! committed reference tests/data/pinocchio/<robot>.json (the ones Pinocchio is timed at),
//! cycling through them; and `kinematics` alone (Pinocchio's `forwardKinematics`, positions
//! only). The mass matrix goes into a matrix zeroed once (the allocation-free
//! path a control loop takes; `mass_matrix()` would also zero the N×N matrix every call).
//!
//! Each robot is timed at two capacities: N = nv (the tree a controller of that robot would
//! build) and N = 64 (the capacity tests/pinocchio.rs uses): the capacity sets the size of what
//! `kinematics` returns and so costs something by itself.
//!
//! The URDFs come from example-robot-data through scripts/example-robot-data.sh.
//!
//! `cargo bench -p robot-model --bench tree -- --warm-up-time 1 --measurement-time 3`

#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items

use std::hint::black_box;
use std::path::Path;

use control_core::tree::{BaseKind, Placement, Tree, TreeKinematics};
use criterion::{Criterion, criterion_group, criterion_main};
use nalgebra::{
    Isometry3, Matrix3, Quaternion, Rotation3, SMatrix, Translation3, UnitQuaternion, Vector3,
};
use robot_model::LoadOptions;

#[path = "../tests/support/mod.rs"]
mod support;
use serde_json::Value;
use support::robots_dir;

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

fn vector(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

/// One state in our layout: base pose, q by joint, v and a by velocity index.
struct State<const N: usize> {
    pose: Isometry3<f64>,
    q: [f64; N],
    v: [f64; N],
    a: [f64; N],
}

fn bench_robot<const N: usize>(c: &mut Criterion, robots: &Path, robot: &str) {
    let reference = reference(robot);
    let floating = reference["floating_base"].as_bool().expect("floating_base");
    let urdf = robots.join(reference["urdf"].as_str().expect("urdf"));
    let options = LoadOptions {
        mimic_as_independent: true,
        floating_base: floating,
        ..Default::default()
    };
    let model =
        robot_model::load(&urdf, &options).unwrap_or_else(|e| panic!("{}: {e}", urdf.display()));
    let tree: Tree<N> = model.tree().unwrap_or_else(|e| panic!("{robot}: {e}"));
    let offset = if floating { 6 } else { 0 };

    // Pinocchio's velocity index of each of ours (joints matched by name).
    let mut pin_v: Vec<usize> = (0..offset).collect();
    for joint in &model.joints {
        let j = reference["joints"]
            .as_array()
            .expect("joints")
            .iter()
            .find(|j| j["name"] == joint.name.as_str())
            .unwrap_or_else(|| panic!("{robot}: no joint {:?} in the reference", joint.name));
        pin_v.push(j["idx_v"].as_u64().expect("idx_v") as usize);
    }
    let nv = tree.nv();
    let states: Vec<State<N>> = reference["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|s| {
            let pose = match model.base {
                BaseKind::Floating => {
                    let t = vector(&s["base"]["translation"]);
                    let r = vector(&s["base"]["quaternion_xyzw"]);
                    Isometry3::from_parts(
                        Translation3::new(t[0], t[1], t[2]),
                        UnitQuaternion::new_unchecked(Quaternion::new(r[3], r[0], r[1], r[2])),
                    )
                }
                BaseKind::Fixed => isometry(&model.base_placement),
            };
            let (v, a) = (vector(&s["v"]), vector(&s["a"]));
            State {
                pose,
                q: std::array::from_fn(|k| {
                    model
                        .joints
                        .get(k)
                        .map_or(0.0, |j| s["q"][j.name.as_str()].as_f64().expect("q"))
                }),
                v: std::array::from_fn(|i| if i < nv { v[pin_v[i]] } else { 0.0 }),
                a: std::array::from_fn(|i| if i < nv { a[pin_v[i]] } else { 0.0 }),
            }
        })
        .collect();
    let gravity = Vector3::new(0.0, 0.0, -9.81);

    let mut group = c.benchmark_group(robot);
    let mut m = SMatrix::<f64, N, N>::zeros();
    let mut i = 0;
    group.bench_function(format!("crba_n{N}"), |b| {
        b.iter(|| {
            i = (i + 1) % states.len();
            let s = &states[i];
            let kin = tree
                .kinematics(black_box(&s.pose), black_box(&s.q))
                .expect("kinematics");
            kin.mass_matrix_into(&mut m).expect("mass matrix");
            black_box(&m);
        })
    });
    // The same with the kinematics kept in one buffer, as a control loop keeps it (and as
    // Pinocchio keeps its `Data`): no copy of what `kinematics` returns.
    let mut kin = TreeKinematics::<N>::default();
    let mut i = 0;
    group.bench_function(format!("crba_kept_n{N}"), |b| {
        b.iter(|| {
            i = (i + 1) % states.len();
            let s = &states[i];
            tree.kinematics_into(&mut kin, black_box(&s.pose), black_box(&s.q))
                .expect("kinematics");
            kin.mass_matrix_into(&mut m).expect("mass matrix");
            black_box(&m);
        })
    });
    let mut i = 0;
    group.bench_function(format!("rnea_kept_n{N}"), |b| {
        b.iter(|| {
            i = (i + 1) % states.len();
            let s = &states[i];
            tree.kinematics_into(&mut kin, black_box(&s.pose), black_box(&s.q))
                .expect("kinematics");
            black_box(
                kin.inverse_dynamics(black_box(&s.v), black_box(&s.a), &gravity)
                    .expect("inverse dynamics"),
            )
        })
    });
    let mut i = 0;
    group.bench_function(format!("kinematics_n{N}"), |b| {
        b.iter(|| {
            i = (i + 1) % states.len();
            let s = &states[i];
            black_box(
                tree.kinematics(black_box(&s.pose), black_box(&s.q))
                    .expect("kinematics"),
            )
        })
    });
    let mut i = 0;
    group.bench_function(format!("rnea_n{N}"), |b| {
        b.iter(|| {
            i = (i + 1) % states.len();
            let s = &states[i];
            let kin = tree
                .kinematics(black_box(&s.pose), black_box(&s.q))
                .expect("kinematics");
            black_box(
                kin.inverse_dynamics(black_box(&s.v), black_box(&s.a), &gravity)
                    .expect("inverse dynamics"),
            )
        })
    });
    group.finish();
}

fn trees(c: &mut Criterion) {
    let robots = robots_dir();
    bench_robot::<9>(c, &robots, "panda");
    bench_robot::<64>(c, &robots, "panda");
    bench_robot::<50>(c, &robots, "talos_full");
    bench_robot::<64>(c, &robots, "talos_full");
}

criterion_group!(benches, trees);
criterion_main!(benches);
