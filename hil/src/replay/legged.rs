//! The replay of a `robot_push` run (a real floating-base robot standing, pushed): the same page
//! as the joint-space runs' ([`super::page`], `replay.js`), fed the robot.
//!
//! What the page gets (JSON, embedded), as the joint-space replay's ([`super::chain`]) but:
//! - the bodies' shapes are the model's collision shapes (meshes as their convex hulls) plus the
//!   scene's sole boxes, in their bodies' frames;
//! - per run shown (for each controller, the run of the largest push it survived with every
//!   smaller one, and the run of the first push it fell to): samples every 10 ms of simulated
//!   time (the recorder's), the last state always; every body's world pose from the tree's
//!   forward kinematics at the recorded base pose and joint positions, the torques sent, the
//!   ground's force on each body the plant reported;
//! - the scene: the ground, gravity, the push (the largest shown).

use std::path::Path;

use control_core::articulated::nalgebra::{Isometry3, Translation3, Vector3};
use robot_model::RobotModel;
use serde_json::{Value, json};

use super::chain::{bodies, pose, sig};
use crate::run::legged::{LeggedState, Robot, RobotPushReport};

/// One kept state of a run: the state and the torques last sent.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Simulated time, s.
    pub time_s: f64,
    /// The state.
    pub state: LeggedState,
    /// The torques of the last tick before it, model joint order.
    pub torques: Vec<f64>,
}

/// One run shown.
#[derive(Debug, Clone)]
pub struct Run {
    /// The controller.
    pub name: &'static str,
    /// The push, N·s.
    pub impulse_ns: f64,
    /// Whether it stood.
    pub stood: Option<bool>,
    /// Its kept states.
    pub samples: Vec<Sample>,
}

fn run(robot: &Robot, run: &Run, push_at_s: f64) -> (Value, usize) {
    let (mut t, mut poses, mut tau, mut contacts) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut skipped = 0;
    for s in &run.samples {
        let (base, _) = robot.base_and_velocity(&s.state);
        let q = robot.positions(&s.state);
        let Ok(kin) = robot.tree.kinematics(&base, &q) else {
            skipped += 1;
            continue;
        };
        let Some(p) = (0..=robot.joints)
            .map(|b| kin.body_pose(b).map(|iso| pose(&iso)))
            .collect::<Option<Vec<_>>>()
        else {
            skipped += 1;
            continue;
        };
        let k = t.len();
        t.push(super::round(s.time_s, 1e-4));
        poses.extend(p.into_iter().flatten());
        tau.extend((0..robot.joints).map(|j| sig(s.torques.get(j).copied().unwrap_or(0.0))));
        for &(body, [x, y, z]) in &s.state.contacts[..s.state.contact_count] {
            contacts.push(json!([k, body, sig(x), sig(y), sig(z)]));
        }
    }
    let outcome = match run.stood {
        Some(true) => "stood",
        Some(false) => "fell",
        None => "not judged",
    };
    (
        json!({
            "name": format!("{} at {} N·s", run.name, run.impulse_ns),
            "summary": format!("{} N·s push at {push_at_s} s: {outcome}", run.impulse_ns),
            "t": t,
            "poses": poses,
            "q": Vec::<f64>::new(),
            "tau": tau,
            "contacts": contacts,
        }),
        skipped,
    )
}

/// Everything `replay.html` needs of a `robot_push` run.
pub fn data(
    model: &RobotModel,
    robot: &Robot,
    scene: &sim_host::robot::RobotScene,
    report: &RobotPushReport,
    shown: &[Run],
) -> Value {
    let mut notes = Vec::new();
    let (mut shapes, meshes) = bodies(model, &mut notes);
    for sole in &scene.sole_boxes {
        let Some(f) = model.frame(&sole.link) else {
            continue;
        };
        let centre =
            Vector3::from(sole.min_m).zip_map(&Vector3::from(sole.max_m), |a, b| (a + b) / 2.0);
        let size: Vec<f64> = (0..3)
            .map(|k| super::round(sole.max_m[k] - sole.min_m[k], 1e-5))
            .collect();
        let at = crate::run::chain::isometry(&f.placement)
            * Isometry3::from_parts(Translation3::from(centre), Default::default());
        if let Some(list) = shapes
            .get_mut(f.body)
            .and_then(|b| b.get_mut("shapes"))
            .and_then(Value::as_array_mut)
        {
            list.push(json!({ "kind": "box", "size": size, "pose": pose(&at).to_vec() }));
        }
    }
    let mut skipped = 0;
    let runs: Vec<Value> = shown
        .iter()
        .map(|r| {
            let (v, s) = run(robot, r, report.push.at_s);
            skipped += s;
            v
        })
        .collect();
    if skipped > 0 {
        notes.push(format!(
            "{skipped} sampled state(s) the model could not evaluate are left out"
        ));
    }
    let joints: Vec<Value> = robot
        .joint_names
        .iter()
        .zip(&robot.effort)
        .zip(&model.joints)
        .map(|((name, &effort), j)| {
            json!({ "name": name, "prismatic": j.kind == control_core::tree::JointType::Prismatic, "effort": effort })
        })
        .collect();
    let largest = shown.iter().map(|r| r.impulse_ns).fold(0.0, f64::max);
    let mut pushes = Vec::new();
    let d = report.push.direction;
    let n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
    if let Some(f) = model.frame(&report.push_link)
        && largest > 0.0
        && n > 0.0
    {
        let scale = largest / report.push.duration_s / n;
        pushes.push(super::push_arrow(
            (f.body, &report.push_link),
            d.map(|x| x * scale),
            (report.push.at_s, report.push.duration_s),
            largest,
            &mut notes,
        ));
    }
    super::PageData {
        floating_base: true,
        gravity: scene.gravity_m_s2,
        joints,
        bodies: shapes,
        meshes,
        pushes,
        notes,
        decimation: String::from(
            "one sample per 10 ms of simulated time (the recorder's), the last state always; positions to 0.1 mm, torques and forces to 4 digits",
        ),
        runs,
        ..super::PageData::new(&report.header, &report.robot, &report.urdf)
    }
    .value()
}

/// Write `replay.html` for a `robot_push` run at `path`.
pub fn write(
    path: &Path,
    model: &RobotModel,
    robot: &Robot,
    scene: &sim_host::robot::RobotScene,
    report: &RobotPushReport,
    runs: &[Run],
) -> Result<(), String> {
    let data = data(model, robot, scene, report, runs);
    let title = format!("{} — {} — hil replay", report.header.scenario, report.robot);
    std::fs::write(path, super::page(&title, &data))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}
