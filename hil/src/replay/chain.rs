//! The replay of a joint-space (chain) run: `on_the_beat`, `kenwright_reach`, `pose_tour`.
//!
//! The data the page gets (JSON, embedded):
//! - the robot: per body (model order, the base first) its collision shapes in the body's frame:
//!   boxes, spheres, cylinders and capsules as themselves; a mesh (STL or .obj) as the **convex
//!   hull of its vertices**, scaled, as the plant simulates it ([`super::hull`]), each file
//!   hulled once; a mesh the replay cannot read (Collada) is not drawn, and the page says so;
//! - the scene: gravity (the camera's up is against it), the walls, the ground if the scene has
//!   one (none of the chain scenarios does: the page then draws a reference grid below the
//!   motion, and says it is no ground), the pushes (body, world force, window);
//! - the targets: the keyframes, each with the bodies' poses at it (the page draws the next
//!   keyframe as a ghost of the robot); the hand targets with their instants (points), and the
//!   hand point;
//! - per controller run: its summary line, and samples of (t, every body's world pose, q, the
//!   torques sent, the plant's contact forces by body). The poses are the controller's tree's
//!   forward kinematics (`Tree::kinematics`, `body_pose`) at the recorded joint positions: exact
//!   for the recorded state, no plant change needed.
//!
//! Decimation: the recorder keeps every tick (at most [`MAX_PLOT_POINTS`] per run: past that,
//! every 2nd, then 4th…); the page gets one sample per [`PERIOD_S`] (10 ms) of simulated time,
//! at most [`MAX_SAMPLES`] per run (a longer run is sampled evenly at a longer period), the last
//! state always. Numbers are rounded to what a picture needs: positions to 0.1 mm, quaternions
//! to 1e-4, times to 0.1 ms, joint positions to 1e-4 rad (m), torques and forces to 4
//! significant digits. A contact shorter than the sampling period can fall between samples.
//!
//! [`MAX_PLOT_POINTS`]: crate::run::recorder::MAX_PLOT_POINTS

use std::collections::HashMap;
use std::path::Path;

use control_core::articulated::nalgebra::Isometry3;
use control_core::tree::JointType;
use robot_model::{Geometry, RobotModel};
use serde_json::{Value, json};

use crate::run::chain::controller::{CAP, ChainModel, HandPoint};
use crate::run::chain::recorder::ChainRun;
use crate::run::chain::{ChainReport, ChainScenario, isometry};
use crate::run::recorder::Run;

/// The page's sampling period, s of simulated time.
pub const PERIOD_S: f64 = 0.01;
/// Most samples of one run on the page.
pub const MAX_SAMPLES: usize = 3000;

/// A pose as the page reads it: x, y, z (m), then the quaternion x, y, z, w.
pub(super) fn pose(iso: &Isometry3<f64>) -> [f64; 7] {
    let t = iso.translation.vector;
    let q = iso.rotation.coords; // (i, j, k, w)
    let p = |x: f64| super::round(x, 1e-4);
    [
        p(t[0]),
        p(t[1]),
        p(t[2]),
        p(q[0]),
        p(q[1]),
        p(q[2]),
        p(q[3]),
    ]
}

pub(super) fn sig(x: f64) -> f64 {
    super::significant(x, 4)
}

/// The indices of `times` the page gets: one per `period`, the last always.
fn pick(times: &[f64]) -> (Vec<usize>, f64) {
    let (Some(&first), Some(&last)) = (times.first(), times.last()) else {
        return (Vec::new(), PERIOD_S);
    };
    let period = PERIOD_S.max((last - first) / MAX_SAMPLES as f64);
    let mut out = Vec::new();
    let mut next = f64::NEG_INFINITY;
    for (i, &t) in times.iter().enumerate() {
        if t >= next - 1e-9 {
            out.push(i);
            next = t + period;
        }
    }
    let end = times.len() - 1;
    if out.last() != Some(&end) {
        out.push(end);
    }
    (out, period)
}

/// The bodies' shapes, hulling each mesh file once; notes on what is not drawn.
pub(super) fn bodies(robot: &RobotModel, notes: &mut Vec<String>) -> (Vec<Value>, Vec<Value>) {
    let mut meshes: Vec<Value> = Vec::new();
    let mut hulled: HashMap<String, Option<usize>> = HashMap::new();
    let bodies = robot
        .bodies
        .iter()
        .map(|body| {
            let shapes: Vec<Value> = body
                .collisions
                .iter()
                .filter_map(|s| {
                    let at = pose(&isometry(&s.placement)).to_vec();
                    let r = |x: f64| super::round(x, 1e-5);
                    Some(match &s.geometry {
                        Geometry::Box { size } => {
                            json!({ "kind": "box", "size": size.map(r), "pose": at })
                        }
                        Geometry::Sphere { radius } => {
                            json!({ "kind": "sphere", "radius": r(*radius), "pose": at })
                        }
                        Geometry::Cylinder { radius, length } => json!({
                            "kind": "cylinder", "radius": r(*radius), "length": r(*length), "pose": at
                        }),
                        Geometry::Capsule { radius, length } => json!({
                            "kind": "capsule", "radius": r(*radius), "length": r(*length), "pose": at
                        }),
                        Geometry::Mesh {
                            path,
                            filename,
                            scale,
                        } => {
                            let key = format!("{}|{scale:?}", path.display());
                            let index = *hulled.entry(key).or_insert_with(|| {
                                let hull = super::mesh::vertices(path, *scale).and_then(|v| {
                                    super::hull::convex_hull(&v).ok_or_else(|| {
                                        String::from("its vertices span no volume")
                                    })
                                });
                                match hull {
                                    Ok(h) => {
                                        let v: Vec<f64> = h
                                            .vertices
                                            .iter()
                                            .flatten()
                                            .map(|&x| super::round(x, 1e-5))
                                            .collect();
                                        let t: Vec<u32> =
                                            h.triangles.iter().flatten().copied().collect();
                                        meshes.push(json!({ "file": filename, "vertices": v, "triangles": t }));
                                        Some(meshes.len() - 1)
                                    }
                                    Err(reason) => {
                                        notes.push(format!(
                                            "link `{}`: collision mesh {filename} not drawn: {reason}",
                                            s.link
                                        ));
                                        None
                                    }
                                }
                            });
                            json!({ "kind": "hull", "mesh": index?, "pose": at })
                        }
                    })
                })
                .collect();
            json!({
                "link": body.link,
                "com": body.inertial.com_m.map(|x| super::round(x, 1e-5)),
                "shapes": shapes,
            })
        })
        .collect();
    (bodies, meshes)
}

/// Every body's pose at joint positions `q` (flattened, 7 numbers a body), or `None` if the
/// model cannot evaluate them.
fn poses(model: &ChainModel, q: &[f64]) -> Option<Vec<f64>> {
    let mut full = [0.0; CAP];
    for (a, &b) in full.iter_mut().zip(q) {
        *a = b;
    }
    let kin = model.tree.kinematics(&model.base, &full).ok()?;
    let mut out = Vec::with_capacity(7 * (model.joint_count() + 1));
    for b in 0..=model.joint_count() {
        out.extend(pose(&kin.body_pose(b)?));
    }
    Some(out)
}

/// One run's samples.
fn run(model: &ChainModel, run: &ChainRun, summary: String) -> (Value, f64, usize) {
    let times: Vec<f64> = run.replay.iter().map(|(t, _)| *t).collect();
    let (picked, period) = pick(&times);
    let (mut t, mut body_poses, mut q, mut tau, mut contacts) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut skipped = 0;
    for i in picked {
        let Some((time, s)) = run.replay.get(i) else {
            continue;
        };
        let Some(p) = poses(model, &s.q) else {
            skipped += 1;
            continue;
        };
        let k = t.len();
        t.push(super::round(*time, 1e-4));
        body_poses.extend(p);
        q.extend(s.q.iter().map(|&x| super::round(x, 1e-4)));
        tau.extend(s.tau.iter().map(|&x| sig(x)));
        for c in &s.contacts {
            let [x, y, z] = c.force_n;
            contacts.push(json!([k, c.body.0, sig(x), sig(y), sig(z)]));
        }
    }
    (
        json!({
            "name": run.name,
            "summary": summary,
            "t": t,
            "poses": body_poses,
            "q": q,
            "tau": tau,
            "contacts": contacts,
        }),
        period,
        skipped,
    )
}

/// The summary line of a controller in the report.
fn summary(report: &ChainReport, name: &str) -> String {
    let Some(c) = report.controllers.iter().find(|c| c.name == name) else {
        return String::new();
    };
    let e = |v: Option<f64>| v.map_or_else(|| "n/a".to_owned(), |e| format!("{e:.2e}"));
    let mut s = if c.max_hand_error_m.is_some() || !report.hand_targets.is_empty() {
        format!(
            "max hand error {} m, max posture error {} rad",
            e(c.max_hand_error_m),
            e(c.max_posture_error_rad)
        )
    } else {
        format!(
            "max arrival error {} rad, {}/{} keyframes within 1e-2 rad",
            e(c.max_arrival_error_rad),
            c.keyframes_within_1e_2_rad.unwrap_or(0),
            report.keyframes.len()
        )
    };
    if let Some(f) = c.wall_force_n {
        s.push_str(&format!(
            ", wall force on the hand {:.1} N (mean, pressing)",
            f.mean
        ));
    }
    s.push_str(&format!(
        ", torque-limited joint-ticks {}",
        c.torque_limited_joint_ticks
    ));
    s
}

/// Everything `replay.html` needs of a chain run.
pub fn data(
    scenario: &ChainScenario,
    robot: &RobotModel,
    model: &ChainModel,
    hand: Option<HandPoint>,
    report: &ChainReport,
    runs: &[Run<ChainRun>],
) -> Value {
    let mut notes: Vec<String> = report.notes.clone();
    let (bodies, meshes) = bodies(robot, &mut notes);
    let scene = scenario.robot_scene(robot);
    let keyframes: Vec<Value> = report
        .keyframes
        .iter()
        .filter_map(|k| {
            Some(json!({
                "t": k.time_s,
                "q": k.positions_rad.iter().map(|&x| super::round(x, 1e-4)).collect::<Vec<_>>(),
                "poses": poses(model, &k.positions_rad)?,
            }))
        })
        .collect();
    let pushes: Vec<Value> = scenario
        .pushes
        .iter()
        .filter_map(|p| {
            let body = robot.frame(&p.body)?.body;
            Some(json!({
                "body": body, "link": p.body, "force": p.force_n.map(sig),
                "start": p.start_s, "duration": p.duration_s,
            }))
        })
        .collect();
    let mut period = PERIOD_S;
    let mut skipped = 0;
    let runs: Vec<Value> = runs
        .iter()
        .map(|r| {
            let (v, p, s) = run(model, &r.kind, summary(report, r.kind.name));
            period = period.max(p);
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
        .joints
        .iter()
        .zip(&report.effort_limits_nm)
        .map(|(j, &effort)| {
            json!({
                "name": j.name,
                "prismatic": j.kind == JointType::Prismatic,
                "effort": effort,
            })
        })
        .collect();
    let hand = hand.map(|h| {
        let p = h.point_m;
        let point = [p[0], p[1], p[2]].map(|x| super::round(x, 1e-5));
        json!({ "body": h.body, "point": point })
    });
    super::PageData {
        gravity: scene.gravity_m_s2,
        joints,
        bodies,
        meshes,
        walls: scene
            .walls
            .iter()
            .map(|w| json!({ "center": w.center_m, "half": w.half_extents_m }))
            .collect(),
        ground: scene
            .ground
            .map_or(Value::Null, |g| json!({ "height": g.height_m })),
        keyframes,
        hand: hand.unwrap_or(Value::Null),
        hand_targets: scenario
            .hand_targets
            .iter()
            .map(|t| json!({ "t": t.time_s, "p": t.position_m, "press": t.press }))
            .collect(),
        pushes,
        notes,
        decimation: format!(
            "one sample per {:.0} ms of simulated time (the recorder's ticks; at most {MAX_SAMPLES} a run), the last state always; positions to 0.1 mm, torques and forces to 4 digits",
            period * 1e3
        ),
        runs,
        ..super::PageData::new(&report.header, &robot.name, &report.urdf)
    }
    .value()
}

/// Write `replay.html` for a chain run at `path`.
pub fn write(
    path: &Path,
    scenario: &ChainScenario,
    robot: &RobotModel,
    model: &ChainModel,
    hand: Option<HandPoint>,
    report: &ChainReport,
    runs: &[Run<ChainRun>],
) -> Result<(), String> {
    let data = data(scenario, robot, model, hand, report, runs);
    let title = format!("{} — {} — hil replay", report.header.scenario, robot.name);
    std::fs::write(path, super::page(&title, &data))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picking_keeps_one_sample_per_period_and_the_last() {
        let times: Vec<f64> = (0..=200).map(|k| f64::from(k) * 0.005).collect();
        let (p, period) = pick(&times);
        assert_eq!(period, PERIOD_S);
        assert_eq!(p.len(), 101);
        assert_eq!(p[1], 2);
        assert_eq!(p.last(), Some(&200));
        let long: Vec<f64> = (0..100_000).map(|k| f64::from(k) * 0.005).collect();
        let (p, period) = pick(&long);
        assert!(p.len() <= MAX_SAMPLES + 1, "{}", p.len());
        assert!(period > PERIOD_S);
    }
}
