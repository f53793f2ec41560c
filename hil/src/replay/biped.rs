//! The replay of a `simbicon_walk` run (SIMBICON's planar walker): the same page as the other
//! kinds' ([`super::page`], `replay.js`), fed the walker.
//!
//! What the page gets (JSON, embedded):
//! - the walker: its seven bodies (torso, then each leg's thigh, shin and foot) as the boxes the
//!   plant collides (`sim_host::biped::half_extents`, [`sim_host::biped::DEPTH_M`] deep), each
//!   centred on its centre of mass;
//! - per controller, its run (the summary line from the report); samples as the recorder keeps
//!   them for the animation (`POSE_RATE_HZ`): every body's pose, every joint's torque of the tick
//!   before, and the ground's force on each foot;
//! - the scene: the ground, gravity, the torso pushes; the view follows the walker's torso.
//!
//! The walker's world is its plane, x forward and y up (both legs move in the same plane, so
//! they overlap when drawn); the page draws a z-up world, so every position, orientation and
//! force is turned by +90° about x (y → z) on the way. Numbers are rounded as the other replays'.

use std::path::Path;

use control_core::articulated::nalgebra::{UnitQuaternion, Vector3};
use serde_json::{Value, json};
use sim_host::biped::{
    BODIES, BODY_NAMES, BipedScene, DEPTH_M, JOINT_NAMES, LEFT_FOOT, RIGHT_FOOT, TORQUE_LIMIT_NM,
    TORSO, half_extents,
};

use super::chain::sig;
use crate::run::biped::recorder::PoseSample;
use crate::run::report::ReportHeader;

/// One run shown: the name the page lists it by, its summary line and its kept poses.
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a> {
    /// The controller.
    pub name: &'a str,
    /// Its summary line.
    pub summary: &'a str,
    /// Its kept poses.
    pub samples: &'a [PoseSample],
}

/// The page's world (z up) from the walker's (y up): +90° about x.
fn turn() -> UnitQuaternion<f64> {
    UnitQuaternion::from_axis_angle(&Vector3::x_axis(), std::f64::consts::FRAC_PI_2)
}

/// A body's pose on the page (`w`: the walker's world to the page's, [`turn`]): x, y, z (m), then
/// the quaternion x, y, z, w.
fn pose(w: &UnitQuaternion<f64>, centre: [f64; 2], pitch: f64) -> [f64; 7] {
    let p = w * Vector3::new(centre[0], centre[1], 0.0);
    let q = w * UnitQuaternion::from_axis_angle(&Vector3::z_axis(), pitch);
    let r = |x: f64| super::round(x, 1e-4);
    let c = q.coords; // (i, j, k, w)
    [r(p.x), r(p.y), r(p.z), r(c[0]), r(c[1]), r(c[2]), r(c[3])]
}

fn bodies() -> Vec<Value> {
    let r = |x: f64| super::round(x, 1e-5);
    (0..BODIES)
        .map(|b| {
            let [hx, hy] = half_extents(b);
            // The box is the body's frame: its centre of mass, the walker's axes (the body's pose
            // on the page turns both).
            let at = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0];
            json!({
                "link": BODY_NAMES[b],
                "com": [0.0, 0.0, 0.0],
                "shapes": [{ "kind": "box", "size": [r(2.0 * hx), r(2.0 * hy), r(DEPTH_M)], "pose": at }],
            })
        })
        .collect()
}

/// One run's data.
fn run(shown: &Shown<'_>) -> Value {
    let w = turn();
    let (mut t, mut poses, mut tau, mut contacts) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (k, s) in shown.samples.iter().enumerate() {
        t.push(super::round(s.time_s, 1e-4));
        for &(centre, pitch) in &s.bodies {
            poses.extend(pose(&w, centre, pitch));
        }
        tau.extend(s.torques_nm.map(sig));
        for (f, body) in s.foot_force_n.iter().zip([LEFT_FOOT, RIGHT_FOOT]) {
            if *f != [0.0; 2] {
                let f = w * Vector3::new(f[0], f[1], 0.0);
                contacts.push(json!([k, body, sig(f.x), sig(f.y), sig(f.z)]));
            }
        }
    }
    json!({
        "name": shown.name,
        "summary": shown.summary,
        "t": t,
        "poses": poses,
        "q": Vec::<f64>::new(),
        "tau": tau,
        "contacts": contacts,
    })
}

/// Everything `replay.html` needs of a walk: the report's `header`, the plant's `scene` (its
/// gravity and pushes) and the runs `shown`.
pub fn data(header: &ReportHeader, scene: &BipedScene, shown: &[Shown<'_>]) -> Value {
    let w = turn();
    let g = scene.gravity_m_s2;
    let gravity = w * Vector3::new(g[0], g[1], 0.0);
    let gravity = [gravity.x, gravity.y, gravity.z].map(|x| super::round(x, 1e-6));
    let pushes: Vec<Value> = scene
        .pushes
        .iter()
        .filter(|p| p.duration_s > 0.0)
        .map(|p| {
            let f = w * Vector3::new(p.force_n[0], p.force_n[1], 0.0);
            json!({
                "body": TORSO, "link": BODY_NAMES[TORSO], "force": [sig(f.x), sig(f.y), sig(f.z)],
                "start": p.start_s, "duration": p.duration_s,
            })
        })
        .collect();
    let joints: Vec<Value> = JOINT_NAMES
        .iter()
        .map(|name| json!({ "name": name, "prismatic": false, "effort": TORQUE_LIMIT_NM }))
        .collect();
    super::PageData {
        floating_base: true,
        follow: true,
        gravity,
        joints,
        bodies: bodies(),
        pushes,
        notes: vec![String::from(
            "a planar walker: both legs move in one plane and overlap when drawn",
        )],
        decimation: String::from(
            "the animation's samples (50 per simulated second); positions to 0.1 mm, torques (of the tick before each sample) and forces to 4 digits",
        ),
        runs: shown.iter().map(run).collect(),
        ..super::PageData::new(
            header,
            "SIMBICON's planar walker",
            "none: the walker is built into the plant (sim_host::biped)",
        )
    }
    .value()
}

/// Write `replay.html` for a walk at `path`.
pub fn write(
    path: &Path,
    header: &ReportHeader,
    scene: &BipedScene,
    shown: &[Shown<'_>],
) -> Result<(), String> {
    let data = data(header, scene, shown);
    let title = format!(
        "{} — SIMBICON's planar walker — hil replay",
        header.scenario
    );
    std::fs::write(path, super::page(&title, &data))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}
