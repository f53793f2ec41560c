//! Records one chain controller's run: the arrival error of every joint at every keyframe (read
//! from the state nearest the keyframe's instant), what each joint's law did, torque limiting,
//! a decimated trajectory for the plots, decimated ticks (joint positions,
//! torques, contact forces) for the 3D replay, and `trajectory.csv` streamed row by row. Memory
//! stays bounded whatever the run's length. The chain kinds' [`KindRecorder`] inside the shared
//! [`crate::run::recorder::Recorder`]; off the real-time path (the lockstep driver's thread
//! or the real-time recorder thread).

use std::path::Path;

use control_core::articulated::nalgebra::{Matrix3, Vector3};
use control_core::frames::{ContactForce, MAX_CONTACTS, StateFrame};
use serde::Serialize;

use super::super::recorder::{CsvFile, Decimated, KindRecorder, Run};
use super::super::report::{Faults, Percentiles, Timing};
use super::controller::{CAP, ChainCommandOut, ChainController, ChainModel, ChainState, HandPoint};

/// `trajectory.csv` of a chain run, shared by its controllers one after the other.
#[derive(Debug)]
pub struct ChainCsv {
    out: CsvFile,
    joints: usize,
    reach: bool,
}

impl ChainCsv {
    /// Create the file and write the header for `joints` joints (and, for a reach, the hand
    /// and posture errors).
    pub fn create(path: &Path, joints: usize, reach: bool) -> std::io::Result<Self> {
        let mut header = String::from("controller,step,t_s,keyframe,safe,model_error");
        for (what, unit) in [
            ("q", "rad"),
            ("qd", "rad_s"),
            ("tau", "nm"),
            ("inertia", "kgm2"),
            ("stiffness", "nm_per_rad"),
        ] {
            for j in 0..joints {
                header.push_str(&format!(",{what}{j}_{unit}"));
            }
        }
        for j in 0..joints {
            header.push_str(&format!(",status{j},torque_limited{j}"));
        }
        if reach {
            header.push_str(",hand_error_m,posture_error_rad");
        }
        Ok(Self {
            out: CsvFile::create(path, &header)?,
            joints,
            reach,
        })
    }

    fn row(&mut self, controller: &str, c: &ChainCommandOut) {
        let r = &c.record;
        let s = &r.state;
        let n = self.joints.min(CAP);
        let mut line = format!(
            "{controller},{},{:?},{},{},{}",
            s.step,
            s.sim_time_s,
            r.keyframe,
            u8::from(c.safe),
            u8::from(r.model_error)
        );
        // `{:?}`: the shortest representation that round-trips (bit-exact CSV).
        for values in [&s.q, &s.qd, &c.torques_nm, &r.inertia_kgm2, &r.stiffness] {
            for v in values.iter().take(n) {
                line.push_str(&format!(",{v:?}"));
            }
        }
        for j in 0..n {
            let status = r.status.get(j).map_or("-", |s| s.name());
            line.push_str(&format!(",{status},{}", (r.torque_limited >> j) & 1));
        }
        if self.reach {
            line.push_str(&format!(",{:?},{:?}", r.hand_error_m, r.posture_error_rad));
        }
        self.out.line(format_args!("{line}"));
    }

    /// Flush; the first write error, if any, is returned here.
    pub fn finish(self) -> std::io::Result<()> {
        self.out.finish()
    }
}

/// What the chain recorder measured of one controller's run, as the report and the plots need
/// it (inside the [`Run`] every kind's run is).
#[derive(Debug, Clone)]
pub struct ChainRun {
    /// Controller name.
    pub name: &'static str,
    /// Keyframes or hand targets.
    pub targets: usize,
    /// Per keyframe, per joint: |θ(t̂) − θ̂| at the state nearest the keyframe's instant, rad
    /// (`None`: the run ended before it).
    pub arrival_error_rad: Vec<Option<Vec<f64>>>,
    /// Ticks per joint status name, summed over joints.
    pub status_counts: Vec<(&'static str, u64)>,
    /// Joint-ticks whose torque was limited to the URDF effort.
    pub torque_limited_joint_ticks: u64,
    /// Ticks whose state the model refused (safe torques sent).
    pub model_error_ticks: u64,
    /// Decimated (t, q) for the plots.
    pub trajectory: Vec<(f64, [f64; CAP])>,
    /// Reach: decimated (t, hand error m, posture error rad).
    pub reach_series: Vec<(f64, [f64; 2])>,
    /// Reach: decimated (t, |force of the walls on the hand| N).
    pub wall_series: Vec<(f64, f64)>,
    /// Reach: the largest hand error once each free (not pressed) target has settled, m.
    pub max_hand_error_m: Option<f64>,
    /// Reach: the largest posture error once each free target has settled, rad.
    pub max_posture_error_rad: Option<f64>,
    /// Reach: the walls' force on the hand while pressing, once settled (the part the chain
    /// feels: see [`ReachJudge`]).
    pub wall_force_n: Option<ForceStats>,
    /// Decimated ticks for the 3D replay (`replay.html`, [`crate::replay`]).
    pub replay: Vec<(f64, ReplaySample)>,
}

/// One tick as the 3D replay draws it: the state's joint positions, the torques sent for it,
/// and the environment's contact forces on the bodies in the state frame it came in.
#[derive(Debug, Clone, Default)]
pub struct ReplaySample {
    /// Joint positions, rad (m for a prismatic joint), model order.
    pub q: Vec<f64>,
    /// Torques sent, N·m (N), model order.
    pub tau: Vec<f64>,
    /// The plant's contact forces (world frame, N), by body, as the frame carried them.
    pub contacts: heapless::Vec<ContactForce, MAX_CONTACTS>,
}

/// Statistics of a force magnitude over the samples that had one.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ForceStats {
    /// Samples (states with a contact on the hand, after settling).
    pub samples: u64,
    /// Mean, N.
    pub mean: f64,
    /// Smallest, N.
    pub min: f64,
    /// Largest, N.
    pub max: f64,
    /// The mean force vector, world frame, N: its component along the wall's normal is the
    /// push, the rest friction.
    pub mean_vector_n: [f64; 3],
}

/// What the recorder needs to judge a reach run.
#[derive(Debug, Clone)]
pub struct ReachJudge {
    /// The instants the hand targets appear, s, and whether each is pressed against a wall.
    pub targets: Vec<(f64, bool)>,
    /// Errors count from this long after each target appears, s.
    pub settle_s: f64,
    /// The plant's body id of the hand link (its contact forces).
    pub hand_body: u16,
    /// The controller's model and the hand: to keep of a contact force only what the robot can
    /// feel at the hand (below).
    pub model: (ChainModel, HandPoint),
}

impl ReachJudge {
    /// The part of `force` (world, on the hand) in the range of the hand point's Jacobian J at
    /// `q`, J J⁺ F: the part that does work on the chain (Jᵀ F is the same for both). A
    /// planar chain's contact can carry friction impulses along the axis it cannot move in
    /// (Rapier's solver accumulates them up to the friction cone with no effect on the motion);
    /// they are dropped here. `None` if the model cannot evaluate `q`.
    fn felt(&self, q: &[f64; CAP], force: [f64; 3]) -> Option<[f64; 3]> {
        let (model, hand) = &self.model;
        let kin = model.tree.kinematics(&model.base, q).ok()?;
        let j = kin
            .frame_jacobian(hand.body, &hand.placement())
            .ok()?
            .fixed_rows::<3>(0)
            .into_owned();
        // J J⁺ = J Jᵀ (J Jᵀ)⁺: on the 3×3 J Jᵀ, regularised by 1e-12 of its trace so that a
        // direction the chain cannot move in (a zero row) maps to 0.
        let a = j * j.transpose();
        let eps = 1e-12 * a.trace().max(f64::MIN_POSITIVE);
        let inv = (a + Matrix3::identity() * eps).try_inverse()?;
        let p = a * inv * Vector3::new(force[0], force[1], force[2]);
        Some([p[0], p[1], p[2]])
    }

    /// Whether the target in force at `t` has settled, and whether it is pressed against a
    /// wall (`None`: not settled).
    fn settled(&self, t: f64) -> Option<bool> {
        self.targets
            .iter()
            .rev()
            .find(|s| s.0 <= t)
            .filter(|s| t >= s.0 + self.settle_s)
            .map(|s| s.1)
    }
}

fn max_opt(a: Option<f64>, b: f64) -> Option<f64> {
    Some(a.map_or(b, |a| a.max(b)))
}

/// What a chain controller's run reports in `report.json`.
#[derive(Debug, Clone, Serialize)]
pub struct ChainOutcome {
    /// Controller name.
    pub name: &'static str,
    /// Keyframes (on_the_beat) or hand targets (kenwright_reach).
    pub targets: usize,
    /// Per keyframe, per joint, rad (`null`: not reached).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub arrival_error_rad: Vec<Option<Vec<f64>>>,
    /// The largest of them, rad (`null`: none reached, or a reach, which has no keyframes).
    pub max_arrival_error_rad: Option<f64>,
    /// Per joint, the largest over keyframes, rad.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub max_arrival_error_per_joint_rad: Vec<Option<f64>>,
    /// Keyframes every joint reached within [`REACHED_RAD`] of its pose (absent for a reach).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keyframes_within_1e_2_rad: Option<usize>,
    /// Ticks per joint status, summed over joints.
    pub status_counts: Vec<(&'static str, u64)>,
    /// Joint-ticks whose torque was limited to the URDF's effort.
    pub torque_limited_joint_ticks: u64,
    /// Ticks whose state the model refused.
    pub model_error_ticks: u64,
    /// Ticks.
    pub ticks: u64,
    /// Plant step cost, µs.
    pub plant_step_us: Option<Percentiles>,
    /// Wall time, s.
    pub wall_s: f64,
    /// Reach: the largest hand error once each target has settled, m.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_hand_error_m: Option<f64>,
    /// Reach: the largest posture error (max over joints of |q_g − q|) once settled, rad.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_posture_error_rad: Option<f64>,
    /// Reach: the walls' force on the hand, while in contact and settled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_force_n: Option<ForceStats>,
    /// Timing of this controller's run.
    pub timing: Timing,
    /// Faults of this controller's run.
    pub faults: Faults,
}

impl Run<ChainRun> {
    /// The report's view of the run.
    pub fn outcome(&self, joints: usize) -> ChainOutcome {
        let chain = &self.kind;
        let reached = chain.arrival_error_rad.iter().flatten();
        let max = reached
            .clone()
            .flat_map(|e| e.iter().copied())
            .fold(None, |m: Option<f64>, e| Some(m.map_or(e, |m| m.max(e))));
        // No keyframes (a reach): no per-joint figures either.
        let joints = if chain.arrival_error_rad.is_empty() {
            0
        } else {
            joints
        };
        let per_joint = (0..joints)
            .map(|j| {
                reached
                    .clone()
                    .filter_map(|e| e.get(j).copied())
                    .fold(None, |m: Option<f64>, e| Some(m.map_or(e, |m| m.max(e))))
            })
            .collect();
        let within = (!chain.arrival_error_rad.is_empty()).then(|| {
            chain
                .arrival_error_rad
                .iter()
                .flatten()
                .filter(|e| e.iter().all(|&x| x <= REACHED_RAD))
                .count()
        });
        ChainOutcome {
            name: chain.name,
            targets: chain.targets,
            keyframes_within_1e_2_rad: within,
            arrival_error_rad: chain.arrival_error_rad.clone(),
            max_arrival_error_rad: max,
            max_arrival_error_per_joint_rad: per_joint,
            status_counts: chain.status_counts.clone(),
            torque_limited_joint_ticks: chain.torque_limited_joint_ticks,
            model_error_ticks: chain.model_error_ticks,
            ticks: self.ticks,
            plant_step_us: self.plant_step_us,
            wall_s: self.wall_s,
            max_hand_error_m: chain.max_hand_error_m,
            max_posture_error_rad: chain.max_posture_error_rad,
            wall_force_n: chain.wall_force_n,
            timing: self.timing.clone(),
            faults: self.faults.clone(),
        }
    }
}

/// A keyframe is reached when every joint's arrival error is at most this, rad (m for a
/// prismatic joint).
pub const REACHED_RAD: f64 = 1e-2;

/// Records one chain controller's run.
#[derive(Debug)]
pub struct ChainRecorder {
    name: &'static str,
    joints: usize,
    /// (instant, poses) of every keyframe.
    keyframes: Vec<(f64, Vec<f64>)>,
    /// Per keyframe: (|t − t̂| of the state used, errors).
    arrivals: Vec<Option<(f64, Vec<f64>)>>,
    next_keyframe: usize,
    status_counts: Vec<(&'static str, u64)>,
    torque_limited: u64,
    model_errors: u64,
    trajectory: Decimated<[f64; CAP]>,
    csv: Option<ChainCsv>,
    reach: Option<ReachJudge>,
    reach_series: Decimated<[f64; 2]>,
    wall_series: Decimated<f64>,
    max_hand_error_m: Option<f64>,
    max_posture_error_rad: Option<f64>,
    wall: Option<(u64, f64, f64, f64, [f64; 3])>,
    /// The last state frame's step and contact forces, for the tick that answers it.
    contacts: (u64, heapless::Vec<ContactForce, MAX_CONTACTS>),
    replay: Decimated<ReplaySample>,
}

impl ChainRecorder {
    /// A recorder for controller `name` of a `joints`-joint chain with `keyframes`
    /// ((instant, poses)); `csv` receives the tick rows.
    pub fn new(
        name: &'static str,
        joints: usize,
        keyframes: Vec<(f64, Vec<f64>)>,
        csv: Option<ChainCsv>,
    ) -> Self {
        Self {
            name,
            joints,
            arrivals: vec![None; keyframes.len()],
            keyframes,
            next_keyframe: 0,
            status_counts: Vec::new(),
            torque_limited: 0,
            model_errors: 0,
            trajectory: Decimated::default(),
            csv,
            reach: None,
            reach_series: Decimated::default(),
            wall_series: Decimated::default(),
            max_hand_error_m: None,
            max_posture_error_rad: None,
            wall: None,
            contacts: (u64::MAX, heapless::Vec::new()),
            replay: Decimated::default(),
        }
    }

    /// Judge the run as a reach: hand and posture errors after settling, the walls' force on
    /// the hand.
    #[must_use]
    pub fn reach(mut self, judge: ReachJudge) -> Self {
        self.reach = Some(judge);
        self
    }

    fn errors(&self, state: &ChainState, pose: &[f64]) -> Vec<f64> {
        state
            .q
            .iter()
            .zip(pose)
            .take(self.joints)
            .map(|(q, p)| (q - p).abs())
            .collect()
    }

    /// Settle every keyframe whose instant lies between the `previous` state and `state`: its
    /// errors are read from whichever of the two is nearer its instant.
    fn settle_keyframes(&mut self, state: &ChainState, previous: Option<&ChainState>) {
        while let Some((t_k, pose)) = self.keyframes.get(self.next_keyframe) {
            if state.sim_time_s < *t_k {
                break;
            }
            let mut best = ((state.sim_time_s - t_k).abs(), self.errors(state, pose));
            if let Some(p) = previous {
                let d = (p.sim_time_s - t_k).abs();
                if d < best.0 {
                    best = (d, self.errors(p, pose));
                }
            }
            if let Some(slot) = self.arrivals.get_mut(self.next_keyframe) {
                *slot = Some(best);
            }
            self.next_keyframe += 1;
        }
    }
}

impl KindRecorder<ChainController> for ChainRecorder {
    type Outcome = (ChainRun, Option<ChainCsv>);

    fn state(&mut self, frame: &StateFrame, state: &ChainState, previous: Option<&ChainState>) {
        let state = *state;
        self.contacts = (frame.step, frame.contacts.clone());
        if let Some(judge) = &self.reach {
            let force: Option<[f64; 3]> = frame
                .contacts
                .iter()
                .filter(|c| c.body.0 == judge.hand_body)
                .map(|c| c.force_n)
                .reduce(|a, b| [a[0] + b[0], a[1] + b[1], a[2] + b[2]])
                .and_then(|f| judge.felt(&state.q, f));
            let norm = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
            self.wall_series
                .push(state.sim_time_s, force.map_or(0.0, norm));
            if let Some(v) = force
                && judge.settled(state.sim_time_s) == Some(true)
            {
                let f = norm(v);
                let (n, sum, lo, hi, vs) = self.wall.unwrap_or((0, 0.0, f, f, [0.0; 3]));
                self.wall = Some((
                    n + 1,
                    sum + f,
                    lo.min(f),
                    hi.max(f),
                    [vs[0] + v[0], vs[1] + v[1], vs[2] + v[2]],
                ));
            }
        }
        self.settle_keyframes(&state, previous);
        self.trajectory.push(state.sim_time_s, state.q);
    }

    fn tick(&mut self, command: &ChainCommandOut, _last: Option<&ChainState>) {
        let r = &command.record;
        if r.model_error {
            self.model_errors += 1;
        }
        self.torque_limited += u64::from(r.torque_limited.count_ones());
        if !command.safe {
            for s in r.status.iter().take(self.joints) {
                let name = s.name();
                match self.status_counts.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, n)) => *n += 1,
                    None => self.status_counts.push((name, 1)),
                }
            }
        }
        if let Some(judge) = &self.reach
            && !command.safe
            && !r.model_error
        {
            let t = r.state.sim_time_s;
            self.reach_series
                .push(t, [r.hand_error_m, r.posture_error_rad]);
            if judge.settled(t) == Some(false) {
                self.max_hand_error_m = max_opt(self.max_hand_error_m, r.hand_error_m);
                self.max_posture_error_rad =
                    max_opt(self.max_posture_error_rad, r.posture_error_rad);
            }
        }
        let n = self.joints.min(CAP);
        self.replay.push(
            r.state.sim_time_s,
            ReplaySample {
                q: r.state.q.iter().take(n).copied().collect(),
                tau: command.torques_nm.iter().take(n).copied().collect(),
                contacts: if self.contacts.0 == r.state.step {
                    self.contacts.1.clone()
                } else {
                    heapless::Vec::new()
                },
            },
        );
        if let Some(csv) = &mut self.csv {
            csv.row(self.name, command);
        }
    }

    fn finish(self, _last: Option<&ChainState>) -> Self::Outcome {
        let run = ChainRun {
            name: self.name,
            targets: self
                .reach
                .as_ref()
                .map_or(self.keyframes.len(), |j| j.targets.len()),
            arrival_error_rad: self
                .arrivals
                .into_iter()
                .map(|a| a.map(|(_, e)| e))
                .collect(),
            status_counts: self.status_counts,
            torque_limited_joint_ticks: self.torque_limited,
            model_error_ticks: self.model_errors,
            trajectory: self.trajectory.points,
            reach_series: self.reach_series.points,
            wall_series: self.wall_series.points,
            max_hand_error_m: self.max_hand_error_m,
            max_posture_error_rad: self.max_posture_error_rad,
            wall_force_n: self.wall.map(|(samples, sum, min, max, v)| {
                let n = samples as f64;
                ForceStats {
                    samples,
                    mean: sum / n,
                    min,
                    max,
                    mean_vector_n: [v[0] / n, v[1] / n, v[2] / n],
                }
            }),
            replay: self.replay.points,
        };
        (run, self.csv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::recorder::Recorder;
    use control_core::frames::JointState;
    use std::time::Duration;

    fn frame(step: u64, t: f64, q: [f64; 2]) -> StateFrame {
        let mut f = StateFrame::new(step + 1, step, t);
        for p in q {
            let _ = f.push_joint(JointState {
                position_rad: p,
                velocity_rad_s: 0.0,
            });
        }
        f
    }

    #[test]
    fn arrival_errors_are_read_per_joint_at_the_nearest_state_and_unreached_stay_unknown() {
        let keyframes = vec![(0.5, vec![1.0, -1.0]), (1.0, vec![0.0, 0.0])];
        let mut r = Recorder::new(ChainRecorder::new("arrival", 2, keyframes, None));
        for (k, (t, q)) in [
            (0.49, [0.8, -0.7]),
            (0.499, [0.9, -0.95]),
            (0.505, [1.2, -1.3]),
        ]
        .into_iter()
        .enumerate()
        {
            r.state(&frame(k as u64, t, q));
        }
        let (run, _) = r
            .finish(Timing::default(), Faults::default(), Duration::ZERO)
            .split();
        let first = run.kind.arrival_error_rad[0].clone().unwrap_or_default();
        assert_eq!(first.len(), 2);
        assert!((first[0] - 0.1).abs() < 1e-12 && (first[1] - 0.05).abs() < 1e-12);
        assert_eq!(
            run.kind.arrival_error_rad[1], None,
            "t = 1 s was never reached"
        );
        let o = run.outcome(2);
        assert!((o.max_arrival_error_rad.unwrap_or(f64::NAN) - 0.1).abs() < 1e-12);
        assert_eq!(o.max_arrival_error_per_joint_rad.len(), 2);
    }
}
