//! The replay of a humanoid run (`dynamo_push` scenarios: `dynamo_push`, `balance_push`,
//! `balance_reach`, `balance_pelted`): the same page as the joint-space runs' ([`super::page`],
//! `replay.js`), fed the humanoid.
//!
//! What the page gets (JSON, embedded):
//! - the humanoid: per body (the URDF's link order, the root first) its collision shapes (boxes,
//!   spheres, capsules) in the body's frame, which for the humanoid is its centre of mass with
//!   the link's axes (the plant's and the frames' convention);
//! - per run shown: for each controller, the run of the largest push it survived (every smaller
//!   one too) and the run of the first push it fell to, each with its summary line; samples
//!   every 20 ms of simulated time (the recorder's), the last state always: every body's world
//!   pose, the norm of each joint's torque vector (against the joint's effort, the bound the
//!   plant checks) and the ground's force on the feet and toes;
//! - the scene: the ground, gravity, the push (body, force, window).
//!
//! The humanoid's world is y-up; the page draws a z-up world, so every position, orientation
//! and force is turned by +90° about x (y → z, z → −y) on the way. Thrown balls are not drawn
//! (a note says so). Numbers are rounded as the joint-space replay's: positions to 0.1 mm,
//! quaternions to 1e-4, torques and forces to 4 significant digits.

use std::path::Path;

use control_core::articulated::nalgebra::{Quaternion, UnitQuaternion, Vector3};
use robot_model::humanoid::{Geometry, HumanoidModel};
use serde_json::{Value, json};

use super::chain::sig;
use crate::run::dynamo::{DynamoReport, DynamoScenario, PoseSample};

/// One run shown.
#[derive(Debug, Clone)]
pub struct Run {
    /// The controller.
    pub name: &'static str,
    /// The push, N·s.
    pub impulse_ns: f64,
    /// Its kept states.
    pub samples: Vec<PoseSample>,
}

/// The page's world (z up) from the humanoid's (y up): +90° about x.
fn turn() -> UnitQuaternion<f64> {
    UnitQuaternion::from_axis_angle(&Vector3::x_axis(), std::f64::consts::FRAC_PI_2)
}

fn v3(a: [f64; 3]) -> Vector3<f64> {
    Vector3::new(a[0], a[1], a[2])
}

fn quat(q: [f64; 4]) -> UnitQuaternion<f64> {
    let [w, x, y, z] = q;
    UnitQuaternion::new_normalize(Quaternion::new(w, x, y, z))
}

/// A pose as the page reads it: x, y, z (m), then the quaternion x, y, z, w.
fn pose(p: Vector3<f64>, q: UnitQuaternion<f64>) -> [f64; 7] {
    let r = |x: f64| super::round(x, 1e-4);
    let c = q.coords; // (i, j, k, w)
    [r(p.x), r(p.y), r(p.z), r(c[0]), r(c[1]), r(c[2]), r(c[3])]
}

fn bodies(model: &HumanoidModel) -> Vec<Value> {
    let r = |x: f64| super::round(x, 1e-5);
    model
        .bodies
        .iter()
        .map(|body| {
            let shapes: Vec<Value> = body
                .shapes
                .iter()
                .map(|s| {
                    let at = pose(v3(s.center_m), quat(s.orientation)).to_vec();
                    match s.geometry {
                        Geometry::Box { half_extents_m } => json!({
                            "kind": "box", "size": half_extents_m.map(|h| r(2.0 * h)), "pose": at
                        }),
                        Geometry::Sphere { radius_m } => {
                            json!({ "kind": "sphere", "radius": r(radius_m), "pose": at })
                        }
                        Geometry::Capsule {
                            radius_m,
                            half_length_m,
                        } => json!({
                            "kind": "capsule", "radius": r(radius_m),
                            "length": r(2.0 * half_length_m), "pose": at
                        }),
                    }
                })
                .collect();
            json!({ "link": body.name, "com": [0.0, 0.0, 0.0], "shapes": shapes })
        })
        .collect()
}

/// One run's data.
fn run(model: &HumanoidModel, contact_bodies: &[usize; 4], run: &Run, summary: String) -> Value {
    let w = turn();
    let (mut t, mut poses, mut tau, mut contacts) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let joints = model.joints.len();
    for (k, s) in run.samples.iter().enumerate() {
        t.push(super::round(s.time_s, 1e-4));
        for b in s.state.bodies.iter().take(model.bodies.len()) {
            poses.extend(pose(w * v3(b.com_m), w * quat(b.orientation)));
        }
        for j in 0..joints {
            tau.push(sig(s.torque_norms_nm.get(j).copied().unwrap_or(0.0)));
        }
        for (f, &body) in s.forces.iter().zip(contact_bodies) {
            if *f != [0.0; 3] {
                let f = w * v3(*f);
                contacts.push(json!([k, body, sig(f.x), sig(f.y), sig(f.z)]));
            }
        }
    }
    json!({
        "name": format!("{} at {} N·s", run.name, run.impulse_ns),
        "summary": summary,
        "t": t,
        "poses": poses,
        "q": Vec::<f64>::new(),
        "tau": tau,
        "contacts": contacts,
    })
}

/// Everything `replay.html` needs of a humanoid run.
pub fn data(
    scenario: &DynamoScenario,
    model: &HumanoidModel,
    report: &DynamoReport,
    shown: &[Run],
) -> Value {
    let w = turn();
    let mut notes = Vec::new();
    if scenario.pelt.is_some() {
        notes.push(String::from("the thrown balls are not drawn"));
    }
    let runs: Vec<Value> = shown
        .iter()
        .map(|r| {
            let stood = report
                .controllers
                .iter()
                .find(|c| c.name == r.name)
                .and_then(|c| c.pushes.iter().find(|p| p.impulse_ns == r.impulse_ns))
                .and_then(|p| p.stood);
            let summary = format!(
                "{} N·s push at {} s: {}",
                r.impulse_ns,
                scenario.push_at_s,
                match stood {
                    Some(true) => "stood",
                    Some(false) => "fell",
                    None => "not judged",
                }
            );
            run(model, &model.ground_contact_bodies, r, summary)
        })
        .collect();
    let joints: Vec<Value> = model
        .joints
        .iter()
        .map(|j| json!({ "name": j.name, "prismatic": false, "effort": j.effort_nm }))
        .collect();
    // The push arrow: the largest push among the runs shown (each run has its own).
    let largest = shown.iter().map(|r| r.impulse_ns).fold(0.0, f64::max);
    let mut pushes = Vec::new();
    if let Some(body) = model.body_index(&scenario.push_body)
        && largest > 0.0
    {
        let d = v3(scenario.push_direction);
        let f = w * (d / d.norm()) * (largest / scenario.push_duration_s);
        pushes.push(super::push_arrow(
            (body, &scenario.push_body),
            [f.x, f.y, f.z],
            (scenario.push_at_s, scenario.push_duration_s),
            largest,
            &mut notes,
        ));
    }
    json!({
        "format": "hil replay 1",
        "scenario": report.header.scenario,
        "scenario_file": report.header.scenario_file,
        "kind": report.header.kind,
        "mode": report.header.mode,
        "robot": model.name,
        "floating_base": true,
        "urdf": report.urdf,
        "gravity": [0.0, 0.0, -9.81],
        "joints": joints,
        "bodies": bodies(model),
        "meshes": [],
        "walls": [],
        "ground": { "height": 0.0 },
        "keyframes": [],
        "hand": Value::Null,
        "hand_targets": [],
        "pushes": pushes,
        "notes": notes,
        "decimation": "one sample per 20 ms of simulated time (the recorder's), the last state always; positions to 0.1 mm, torques (each joint's torque vector's norm) and forces to 4 digits",
        "runs": runs,
    })
}

/// Write `replay.html` for a humanoid run at `path`.
pub fn write(
    path: &Path,
    scenario: &DynamoScenario,
    model: &HumanoidModel,
    report: &DynamoReport,
    runs: &[Run],
) -> Result<(), String> {
    let data = data(scenario, model, report, runs);
    let title = format!("{} — {} — hil replay", report.header.scenario, model.name);
    std::fs::write(path, super::page(&title, &data))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}
