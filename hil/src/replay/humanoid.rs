//! The replay of a humanoid run (`dynamo_push` scenarios: `dynamo_push`, `balance_push`,
//! `balance_reach`, `balance_pelted`; and `walk3d`): the same page as the joint-space runs'
//! ([`super::page`], `replay.js`), fed the humanoid.
//!
//! What the page gets (JSON, embedded):
//! - the humanoid: per body (the URDF's link order, the root first) its collision shapes (boxes,
//!   spheres, capsules) in the body's frame, which for the humanoid is its centre of mass with
//!   the link's axes (the plant's and the frames' convention);
//! - per run shown (a push scenario: for each controller, the run of the largest push it
//!   survived, every smaller one too, and the run of the first push it fell to; a walk: each
//!   controller's walk at each rate), each with its summary line; samples every 20 ms of
//!   simulated time (the recorder's): every body's world pose, the norm of each joint's torque
//!   vector (against the joint's effort, the bound the plant checks) and the ground's force on
//!   the feet and toes;
//! - the scene: the ground, gravity, the push (body, force, window) if there is one.
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
use crate::run::report::ReportHeader;

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

/// A run as the page lists it: its name, its summary line and its kept states.
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a> {
    /// The name the page lists it by.
    pub name: &'a str,
    /// Its summary line.
    pub summary: &'a str,
    /// Its kept states.
    pub samples: &'a [PoseSample],
}

/// A push drawn as an arrow on the page: the body, its direction (the humanoid's world, any
/// length), when it starts and how long it lasts (s), and its impulse (N·s).
#[derive(Debug, Clone, Copy)]
pub struct PushArrow<'a> {
    /// The link pushed.
    pub body: &'a str,
    /// The push's direction, y-up world.
    pub direction: [f64; 3],
    /// When it starts, s.
    pub at_s: f64,
    /// How long it lasts, s (> 0).
    pub duration_s: f64,
    /// Its impulse, N·s.
    pub impulse_ns: f64,
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
fn run(model: &HumanoidModel, contact_bodies: &[usize; 4], run: &Shown<'_>) -> Value {
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
        "name": run.name,
        "summary": run.summary,
        "t": t,
        "poses": poses,
        "q": Vec::<f64>::new(),
        "tau": tau,
        "contacts": contacts,
    })
}

/// Everything `replay.html` needs of a push scenario's humanoid runs.
pub fn data(
    scenario: &DynamoScenario,
    model: &HumanoidModel,
    report: &DynamoReport,
    shown: &[Run],
) -> Value {
    let mut notes = Vec::new();
    if scenario.pelt.is_some() {
        notes.push(String::from("the thrown balls are not drawn"));
    }
    let lines: Vec<(String, String)> = shown
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
            (format!("{} at {} N·s", r.name, r.impulse_ns), summary)
        })
        .collect();
    let runs: Vec<Shown<'_>> = shown
        .iter()
        .zip(&lines)
        .map(|(r, (name, summary))| Shown {
            name,
            summary,
            samples: &r.samples,
        })
        .collect();
    // The push arrow: the largest push among the runs shown (each run has its own).
    let largest = shown.iter().map(|r| r.impulse_ns).fold(0.0, f64::max);
    let push = (largest > 0.0).then_some(PushArrow {
        body: &scenario.push_body,
        direction: scenario.push_direction,
        at_s: scenario.push_at_s,
        duration_s: scenario.push_duration_s,
        impulse_ns: largest,
    });
    page_data(
        (&report.header, &report.urdf),
        model,
        (notes, DECIMATION, false),
        push,
        &runs,
    )
}

/// How a push scenario's runs are sampled, as the page says it.
const DECIMATION: &str = "one sample per 20 ms of simulated time (the recorder's), the last state always; positions to 0.1 mm, torques (each joint's torque vector's norm) and forces to 4 digits";

/// Everything `replay.html` needs of humanoid runs: the report's `header` and `urdf`, the
/// humanoid `model`, `notes` for the page and how the runs were sampled (`decimation`), the
/// `push` to draw (if any), the runs `shown`, and whether the view `follow`s the root (a walk).
pub fn page_data(
    (header, urdf): (&ReportHeader, &str),
    model: &HumanoidModel,
    (mut notes, decimation, follow): (Vec<String>, &str, bool),
    push: Option<PushArrow<'_>>,
    shown: &[Shown<'_>],
) -> Value {
    let w = turn();
    let runs: Vec<Value> = shown
        .iter()
        .map(|r| run(model, &model.ground_contact_bodies, r))
        .collect();
    let joints: Vec<Value> = model
        .joints
        .iter()
        .map(|j| json!({ "name": j.name, "prismatic": false, "effort": j.effort_nm }))
        .collect();
    let mut pushes = Vec::new();
    if let Some(p) = push
        && let Some(body) = model.body_index(p.body)
    {
        let d = v3(p.direction);
        let f = w * (d / d.norm()) * (p.impulse_ns / p.duration_s);
        pushes.push(super::push_arrow(
            (body, p.body),
            [f.x, f.y, f.z],
            (p.at_s, p.duration_s),
            p.impulse_ns,
            &mut notes,
        ));
    }
    super::PageData {
        floating_base: true,
        follow,
        joints,
        bodies: bodies(model),
        pushes,
        notes,
        decimation: decimation.to_owned(),
        runs,
        ..super::PageData::new(header, &model.name, urdf)
    }
    .value()
}

/// Write `replay.html` for a push scenario's humanoid runs at `path`.
pub fn write(
    path: &Path,
    scenario: &DynamoScenario,
    model: &HumanoidModel,
    report: &DynamoReport,
    runs: &[Run],
) -> Result<(), String> {
    write_page(
        path,
        &report.header.scenario,
        model,
        &data(scenario, model, report, runs),
    )
}

/// Write the page of `data` (from [`page_data`]) at `path`, titled by `scenario` and the model.
pub fn write_page(
    path: &Path,
    scenario: &str,
    model: &HumanoidModel,
    data: &Value,
) -> Result<(), String> {
    let title = format!("{scenario} — {} — hil replay", model.name);
    std::fs::write(path, super::page(&title, data))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}
