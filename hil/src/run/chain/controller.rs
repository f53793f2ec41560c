//! The joint-space controllers, the same object in lockstep and in real time, on the robot's
//! fixed-base tree (built from the same robot model as the plant). They sequence the keyframes
//! and run one of the four laws of the "On the Beat!" comparison:
//! - `single_link`: λ = t̂/n, gains from each link's own inertia about its joint;
//! - `composite`: the same with the composite inertia m_i (the link and all it carries);
//! - `composite_feedforward`: composite, plus the parent feed-forward m_i(a_i·s_i);
//! - `arrival`: our Lambert-W arrival gains on m_i, re-solved every tick with the period clamp,
//!   plus the feed-forward.
//!
//! or hold a hand on its targets (Kenwright's reach: Jᵀ F with a posture torque in the null
//! space, plain or dynamically consistent; CCD IK tracked by the arrival servo's hold).
//!
//! Every law adds the model's gravity holding torque, and every joint-space law (all but the
//! Jᵀ F reach) what the URDF's `<dynamics damping friction>` will take from the motion it asks
//! for ([`control_core::articulated::TreeCommand::add_losses`]; the plant applies both). Each joint's torque is limited to the
//! URDF's `<limit effort>` (the plant refuses a whole frame beyond it); every limited tick is
//! counted in the record, never silent.
//!
//! The joint-space laws run through the library's [`KeyframeServo`] (the keyframe in force,
//! losses, efforts) and every law's safe state is its [`JointSafety`]'s; this module picks the
//! law from the scenario and feeds it the plant's state.
//!
//! [`ChainController::tick`] runs on the control thread in real time: it never allocates, blocks
//! or panics. A model error (a non-finite state, a torque that is not a finite f64) gives the
//! safe state's torques for that tick, flagged in the record.

use control_core::articulated::nalgebra::{Isometry3, Vector3};
use control_core::articulated::{ArrivalSettings, Coupling, JointLosses, JointStatus, TreeArrival};
use control_core::beat::{BeatConfig, BeatServo, InertiaModel};
use control_core::frames::StateFrame;
use control_core::gains::Integrator;
use control_core::keyframes::{JointSafety, KeyframeLaw, KeyframeServo, ServoTick};
use control_core::reach::{Projector, Reach, ReachConfig, ccd_ik};
use control_core::tree::{Placement, Tree};

use super::super::session::{LoopCommand, LoopController, LoopState};
use super::scenario::{ChainScenario, ChainTask};

/// Joints a robot may have here: what a state frame carries (and what the robot plant takes).
pub const CAP: usize = control_core::frames::MAX_JOINTS;
const _: () = assert!(CAP <= 64, "torque_limited is a u64 bit set");

/// Which law drives the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainLaw {
    /// λ = t̂/n on each link's own inertia.
    SingleLink,
    /// λ = t̂/n on the composite inertia.
    Composite,
    /// λ = t̂/n on the composite inertia, plus the parent feed-forward.
    CompositeFeedforward,
    /// Lambert-W arrival gains on the composite inertia, plus the coupling compensation.
    Arrival,
    /// Kenwright: Jᵀ F at the hand, the posture torque projected with the plain pseudo-inverse.
    JtNullspace,
    /// The same with the dynamically consistent projector.
    JtNullspaceDynamic,
    /// CCD IK to joint targets, tracked by critically damped PD (+ gravity).
    CcdIk,
    /// Jᵀ F at the hand and no posture torque at all: the reference the null-space torque is
    /// judged against (the wall force it should leave unchanged).
    JtNoPosture,
}

impl ChainLaw {
    /// The three of a pose tour, in report order: the arrival controller beside the single-link
    /// and composite beat controllers.
    pub const TOUR: [Self; 3] = [Self::Arrival, Self::SingleLink, Self::Composite];
    /// The four of "On the Beat!", in report order.
    pub const BEAT: [Self; 4] = [
        Self::SingleLink,
        Self::Composite,
        Self::CompositeFeedforward,
        Self::Arrival,
    ];
    /// The three of Kenwright's reach, in report order.
    pub const REACH: [Self; 4] = [
        Self::JtNullspace,
        Self::JtNullspaceDynamic,
        Self::CcdIk,
        Self::JtNoPosture,
    ];

    /// The controllers of a task, in report order.
    pub fn of(task: ChainTask) -> &'static [Self] {
        match task {
            ChainTask::OnTheBeat => &Self::BEAT,
            ChainTask::KenwrightReach => &Self::REACH,
            ChainTask::PoseTour => &Self::TOUR,
        }
    }

    /// The name used in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::SingleLink => "single_link",
            Self::Composite => "composite",
            Self::CompositeFeedforward => "composite_feedforward",
            Self::Arrival => "arrival",
            Self::JtNullspace => "jt_nullspace",
            Self::JtNullspaceDynamic => "jt_nullspace_dynamic",
            Self::CcdIk => "ccd_ik",
            Self::JtNoPosture => "jt_no_posture",
        }
    }
}

/// The chain's state as an accepted state frame carried it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChainState {
    /// Plant step.
    pub step: u64,
    /// Simulated time, s.
    pub sim_time_s: f64,
    /// Joints in the frame.
    pub joints: usize,
    /// Joint angles, rad (0 past `joints`).
    pub q: [f64; CAP],
    /// Joint velocities, rad/s (0 past `joints`).
    pub qd: [f64; CAP],
}

impl Default for ChainState {
    fn default() -> Self {
        Self {
            step: 0,
            sim_time_s: 0.0,
            joints: 0,
            q: [0.0; CAP],
            qd: [0.0; CAP],
        }
    }
}

impl ChainState {
    /// The state in `frame` (`None` for a frame without joints).
    pub fn of(frame: &StateFrame) -> Option<Self> {
        if frame.joints.is_empty() {
            return None;
        }
        let mut s = Self {
            step: frame.step,
            sim_time_s: frame.sim_time_s,
            joints: frame.joints.len().min(CAP),
            ..Self::default()
        };
        for ((q, qd), j) in s.q.iter_mut().zip(s.qd.iter_mut()).zip(&frame.joints) {
            *q = j.position_rad;
            *qd = j.velocity_rad_s;
        }
        Some(s)
    }
}

impl LoopState for ChainState {
    fn step(&self) -> u64 {
        self.step
    }

    fn sim_time_s(&self) -> f64 {
        self.sim_time_s
    }
}

/// What a joint's law did this tick, for the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JointTick {
    /// Gains within the limit.
    #[default]
    Tracking,
    /// Gains clamped to the stable limit.
    GainClamped,
    /// No stable gain arrives on time; the closest arrival was used.
    Infeasible,
    /// Holding the last pose.
    Holding,
}

impl JointTick {
    /// The name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Tracking => "tracking",
            Self::GainClamped => "gain_clamped",
            Self::Infeasible => "infeasible",
            Self::Holding => "holding",
        }
    }
}

/// What one tick saw and did.
#[derive(Debug, Clone, Copy)]
pub struct ChainTickRecord {
    /// The state answered.
    pub state: ChainState,
    /// The inertia each joint's gains were computed for, kg·m².
    pub inertia_kgm2: [f64; CAP],
    /// Stiffness used per joint, N·m/rad.
    pub stiffness: [f64; CAP],
    /// What each joint's law did.
    pub status: [JointTick; CAP],
    /// Joints whose torque was limited to the URDF's effort this tick (bit j: joint j).
    pub torque_limited: u64,
    /// The model refused the state (safe torques sent).
    pub model_error: bool,
    /// The index of the keyframe (or hand target) being aimed at.
    pub keyframe: usize,
    /// Reach: |x* − x| of the hand point, m (NaN for other tasks).
    pub hand_error_m: f64,
    /// Reach: max over joints of |q_g − q|, rad (NaN for other tasks).
    pub posture_error_rad: f64,
}

/// What the control thread sends back: torques for a plant step and the tick's record.
#[derive(Debug, Clone, Copy)]
pub struct ChainCommandOut {
    /// The plant step whose state this answers.
    pub step: u64,
    /// Joints commanded.
    pub joints: usize,
    /// Torques, N·m (0 past `joints`).
    pub torques_nm: [f64; CAP],
    /// Whether this is the safe state's output.
    pub safe: bool,
    /// The tick as recorded.
    pub record: ChainTickRecord,
}

impl LoopCommand for ChainCommandOut {
    fn step(&self) -> u64 {
        self.step
    }

    fn is_safe(&self) -> bool {
        self.safe
    }

    fn torques(&self) -> &[f64] {
        self.torques_nm.get(..self.joints).unwrap_or(&[])
    }
}

/// A tick the model refused (a non-finite state, a result out of range): the safe state's
/// torques go out and the record says so. No detail is kept, so nothing is allocated on the
/// control thread.
#[derive(Debug, Clone, Copy)]
struct Refused;

// The IK's solution makes `Ccd` the largest variant; a law is built once per run, not moved on
// the control thread.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy)]
enum Law {
    /// A joint-space law through the keyframes (the library's servo: limits and losses too).
    Keyframes(KeyframeServo<CAP>),
    /// Jᵀ F at the hand, within the joints' limits.
    Reach(Reach, JointSafety<CAP>),
    /// The IK's joint targets (solved when the hand target changes) held by the arrival
    /// servo's critically damped hold.
    Ccd {
        hold: KeyframeServo<CAP>,
        solution: [f64; CAP],
        solved_for: Option<usize>,
    },
}

impl Law {
    /// The joints' limits and safe state.
    fn safety(&self) -> &JointSafety<CAP> {
        match self {
            Self::Keyframes(s) | Self::Ccd { hold: s, .. } => s.safety(),
            Self::Reach(_, s) => s,
        }
    }
}

/// The reach task: the hand, its targets, the posture goal and the IK's limits.
#[derive(Debug, Clone)]
struct ReachTask {
    hand: HandPoint,
    /// (from instant, world position).
    targets: Vec<(f64, Vector3<f64>)>,
    posture_center: [f64; CAP],
    posture_amplitude: [f64; CAP],
    posture_period_s: f64,
    posture_still_from_s: f64,
    ccd_max_sweeps: usize,
    ccd_tolerance_m: f64,
}

impl ReachTask {
    fn posture(&self, t: f64) -> [f64; CAP] {
        let mut q = [0.0; CAP];
        let t = t.min(self.posture_still_from_s);
        let phase = (std::f64::consts::TAU * t / self.posture_period_s).sin();
        for ((q, c), a) in q
            .iter_mut()
            .zip(&self.posture_center)
            .zip(&self.posture_amplitude)
        {
            *q = c + a * phase;
        }
        q
    }
}

/// The controller's model: the robot's fixed-base tree (built from the same robot model as the
/// plant) and the pose its base is welded at.
#[derive(Debug, Clone)]
pub struct ChainModel {
    /// The tree.
    pub tree: Box<Tree<CAP>>,
    /// Where its base is welded, world frame.
    pub base: Isometry3<f64>,
    /// Each joint's damping and dry friction as the URDF gives them (the plant applies them),
    /// compensated by every joint-space law.
    pub losses: [JointLosses; CAP],
}

impl ChainModel {
    /// Its moving joints.
    pub fn joint_count(&self) -> usize {
        self.tree.joint_count()
    }

    /// Every joint's composite inertia about its axis at `q` (kg·m², or kg for a prismatic
    /// joint), by joint.
    pub fn axis_inertia(&self, q: &[f64; CAP]) -> Option<[f64; CAP]> {
        let m = self
            .tree
            .kinematics(&self.base, q)
            .ok()?
            .composite()
            .ok()?
            .axis_inertia();
        let mut out = [0.0; CAP];
        for (o, v) in out.iter_mut().zip(m.iter()) {
            *o = *v;
        }
        Some(out)
    }
}

/// The hand of a reach scenario: a point fixed in one moving body of the tree.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HandPoint {
    /// The tree's body (k + 1 for joint k's child; never the fixed base, 0).
    pub body: usize,
    /// The point, in the body's frame, m.
    pub point_m: Vector3<f64>,
}

impl HandPoint {
    /// The point `point_m` (m) fixed in the URDF link `link` of `robot` (a link merged into a
    /// body is a frame on it); `None` if no such link moves.
    pub fn of(robot: &robot_model::RobotModel, link: &str, point_m: [f64; 3]) -> Option<Self> {
        let frame = robot.frame(link).filter(|f| f.body > 0)?;
        let r = frame.placement.rotation;
        let t = frame.placement.xyz_m;
        let [x, y, z] = point_m;
        let row = |i: usize| r[i][0] * x + r[i][1] * y + r[i][2] * z + t[i];
        Some(Self {
            body: frame.body,
            point_m: Vector3::new(row(0), row(1), row(2)),
        })
    }

    /// The point as a placement on its body (no rotation).
    pub fn placement(&self) -> Placement {
        Placement {
            xyz_m: [self.point_m[0], self.point_m[1], self.point_m[2]],
            rotation: Placement::IDENTITY.rotation,
        }
    }
}

/// One controller of the chain for one run.
#[derive(Debug, Clone)]
pub struct ChainController {
    law: Law,
    model: ChainModel,
    joints: usize,
    gravity: Vector3<f64>,
    /// (instant, poses) of every keyframe.
    keyframes: Vec<(f64, [f64; CAP])>,
    /// The hand target in force (reach laws; the keyframe servo keeps its own).
    current: usize,
    half_period_s: f64,
    reach: Option<ReachTask>,
}

impl ChainController {
    /// The controller `law` for `scenario`, on the tree `model` with the plant's effort limits
    /// `effort_nm` (URDF joint order); `state_period_s` is the period fresh states arrive at,
    /// which the gains must be stable for; `hand` is the scenario's hand (reach scenarios).
    pub fn new(
        law: ChainLaw,
        scenario: &ChainScenario,
        model: ChainModel,
        effort_nm: &[f64],
        state_period_s: f64,
        hand: Option<HandPoint>,
    ) -> Result<Self, String> {
        let c = &scenario.controllers;
        let g = scenario.gravity_m_s2();
        let gravity = Vector3::new(g[0], g[1], g[2]);
        let half_period_s = 0.5 * scenario.control_period_s();
        let joints = model.joint_count();
        let safety = JointSafety::new(
            joints,
            effort_nm,
            &model.losses,
            state_period_s,
            c.stability_margin,
            c.hold_natural_freq_rad_s,
        )
        .ok_or_else(|| {
            format!(
                "the joints' limits: {joints} joints, {} efforts, a period of {state_period_s} s: \
                 out of range",
                effort_nm.len()
            )
        })?;
        let servo = |law| {
            KeyframeServo::new(law, safety, gravity, half_period_s)
                .ok_or_else(|| "gravity or the control period is not finite".to_owned())
        };
        let beat = |inertia, parent_feedforward| {
            BeatServo::new(BeatConfig {
                inertia,
                parent_feedforward,
                time_constants: c.time_constants.unwrap_or(0.0),
                period_s: state_period_s,
                integrator: Integrator::SemiImplicitEuler,
                stability_margin: c.stability_margin,
            })
            .map(KeyframeLaw::Beat)
            .map_err(|e| e.to_string())
        };
        let arrival = TreeArrival::new(
            ArrivalSettings {
                period_s: state_period_s,
                integrator: Integrator::SemiImplicitEuler,
                stability_margin: c.stability_margin,
                hold_natural_freq_rad_s: c.hold_natural_freq_rad_s,
                pose_tolerance_rad: c.tolerance_rad,
            },
            Coupling::InverseDynamics,
        )
        .map_err(|e| e.to_string());
        let reach_task = match (&scenario.posture, &c.reach, hand) {
            (Some(posture), Some(r), Some(hand)) => {
                let mut center = [0.0; CAP];
                let mut amplitude = [0.0; CAP];
                for (a, &b) in center.iter_mut().zip(&posture.center_rad) {
                    *a = b;
                }
                for (a, &b) in amplitude.iter_mut().zip(&posture.amplitude_rad) {
                    *a = b;
                }
                Some(ReachTask {
                    hand,
                    targets: scenario
                        .hand_targets
                        .iter()
                        .map(|t| {
                            let [x, y, z] = t.position_m;
                            (t.time_s, Vector3::new(x, y, z))
                        })
                        .collect(),
                    posture_center: center,
                    posture_amplitude: amplitude,
                    posture_period_s: posture.period_s,
                    posture_still_from_s: posture.still_from_s.unwrap_or(f64::INFINITY),
                    ccd_max_sweeps: r.ccd_max_sweeps,
                    ccd_tolerance_m: r.ccd_tolerance_m,
                })
            }
            _ => None,
        };
        let reach = |projector, posture: bool| {
            let (Some(task), Some(r)) = (&reach_task, &c.reach) else {
                return Err(
                    "a reach controller needs the scenario's hand, posture and reach gains"
                        .to_owned(),
                );
            };
            Reach::new(ReachConfig {
                projector,
                // The tick takes the hand's body itself; the point is in that body's frame.
                hand_point_m: [
                    task.hand.point_m[0],
                    task.hand.point_m[1],
                    task.hand.point_m[2],
                ],
                stiffness_n_per_m: r.stiffness_n_per_m,
                damping_ns_per_m: r.damping_ns_per_m,
                posture_stiffness_nm_per_rad: if posture {
                    r.posture_stiffness_nm_per_rad
                } else {
                    0.0
                },
                posture_damping_nms_per_rad: if posture {
                    r.posture_damping_nms_per_rad
                } else {
                    0.0
                },
                gravity_compensation: true,
            })
            .map(|r| Law::Reach(r, safety))
            .map_err(|e| e.to_string())
        };
        let law = match law {
            ChainLaw::SingleLink => Law::Keyframes(servo(beat(InertiaModel::SingleLink, false)?)?),
            ChainLaw::Composite => Law::Keyframes(servo(beat(InertiaModel::Composite, false)?)?),
            ChainLaw::CompositeFeedforward => {
                Law::Keyframes(servo(beat(InertiaModel::Composite, true)?)?)
            }
            ChainLaw::Arrival => Law::Keyframes(servo(KeyframeLaw::Arrival(arrival?))?),
            ChainLaw::JtNullspace => reach(Projector::PseudoInverse, true)?,
            ChainLaw::JtNullspaceDynamic => reach(Projector::DynamicallyConsistent, true)?,
            ChainLaw::JtNoPosture => reach(Projector::PseudoInverse, false)?,
            ChainLaw::CcdIk => {
                if reach_task.is_none() {
                    return Err("ccd_ik needs the scenario's hand, posture and reach gains".into());
                }
                Law::Ccd {
                    hold: servo(KeyframeLaw::Arrival(arrival?))?,
                    solution: [0.0; CAP],
                    solved_for: None,
                }
            }
        };
        let keyframes = scenario
            .keyframes
            .iter()
            .map(|k| {
                let mut q = [0.0; CAP];
                for (a, &b) in q.iter_mut().zip(&k.positions_rad) {
                    *a = b;
                }
                (k.time_s, q)
            })
            .collect();
        Ok(Self {
            law,
            joints,
            model,
            gravity,
            keyframes,
            current: 0,
            half_period_s,
            reach: reach_task,
        })
    }

    /// One tick. Never allocates, blocks or panics.
    pub fn tick(&mut self, state: ChainState) -> ChainCommandOut {
        let now = state.sim_time_s;
        if state.joints != self.joints {
            // Not this chain's state (the drivers end such a run): the safe torques, flagged.
            let mut out = self.safe(ChainState::default());
            out.step = state.step;
            out.safe = false;
            out.record.model_error = true;
            return out;
        }
        let result = match self.reach.take() {
            Some(task) => {
                // The hand target in force: the last one whose instant has come.
                while task
                    .targets
                    .get(self.current + 1)
                    .is_some_and(|t| now > t.0 - self.half_period_s)
                {
                    self.current += 1;
                }
                let result = self.reach_command(&task, &state, now);
                self.reach = Some(task);
                result
            }
            None => match &mut self.law {
                Law::Keyframes(servo) => {
                    let m = &self.model;
                    let sent = servo
                        .tick(&m.tree, &m.base, &state.q, &state.qd, &self.keyframes, now)
                        .map_err(|_| Refused);
                    sent.map(|t| self.out(state, &t, false))
                }
                _ => Err(Refused),
            },
        };
        match result {
            Ok(out) => out,
            Err(_) => {
                let mut out = self.safe(state);
                out.safe = false;
                out.record.model_error = true;
                out
            }
        }
    }

    /// A reach law's tick: the torques, limited, with the hand and posture errors recorded.
    fn reach_command(
        &mut self,
        task: &ReachTask,
        state: &ChainState,
        now: f64,
    ) -> Result<ChainCommandOut, Refused> {
        let target = task.targets.get(self.current).map(|t| t.1).ok_or(Refused)?;
        let posture = task.posture(now);
        let m = &self.model;
        let mut out = match &mut self.law {
            Law::Reach(reach, safety) => {
                let cmd = reach
                    .tick(
                        &m.tree,
                        &m.base,
                        task.hand.body,
                        &state.q,
                        &state.qd,
                        &target,
                        &Vector3::zeros(),
                        &posture,
                        &self.gravity,
                    )
                    .map_err(|_| Refused)?;
                let mut sent = ServoTick::EMPTY;
                safety.limit_into(&mut sent, &cmd.torques_nm);
                let mut out = self.out(*state, &sent, false);
                out.record.status = [JointTick::Tracking; CAP];
                out
            }
            Law::Ccd {
                hold,
                solution,
                solved_for,
            } => {
                if *solved_for != Some(self.current) {
                    let ik = ccd_ik(
                        &m.tree,
                        &m.base,
                        &state.q,
                        task.hand.body,
                        &task.hand.point_m,
                        &target,
                        task.ccd_max_sweeps,
                        task.ccd_tolerance_m,
                    )
                    .map_err(|_| Refused)?;
                    *solution = ik.q_rad;
                    *solved_for = Some(self.current);
                }
                let sent = hold
                    .hold(&m.tree, &m.base, &state.q, &state.qd, solution)
                    .map_err(|_| Refused)?;
                self.out(*state, &sent, false)
            }
            _ => return Err(Refused),
        };
        let hand = m
            .tree
            .kinematics(&m.base, &state.q)
            .and_then(|kin| kin.frame_pose(task.hand.body, &task.hand.placement()))
            .map_err(|_| Refused)?
            .translation
            .vector;
        out.record.hand_error_m = (target - hand).norm();
        out.record.posture_error_rad = posture
            .iter()
            .zip(&state.q)
            .take(self.joints)
            .map(|(g, q)| (g - q).abs())
            .fold(0.0, f64::max);
        Ok(out)
    }

    /// The command of what the library's servo sent, with its record.
    fn out(&self, state: ChainState, sent: &ServoTick<CAP>, safe: bool) -> ChainCommandOut {
        let mut out = self.empty(state, safe);
        out.torques_nm = sent.torques_nm;
        out.record.inertia_kgm2 = sent.inertia_kgm2;
        out.record.stiffness = sent.stiffness;
        out.record.torque_limited = sent.torque_limited;
        for (slot, status) in out.record.status.iter_mut().zip(sent.status) {
            *slot = match status {
                None | Some(JointStatus::Holding) => JointTick::Holding,
                Some(JointStatus::GainClamped) => JointTick::GainClamped,
                Some(JointStatus::Infeasible(_)) => JointTick::Infeasible,
                Some(_) => JointTick::Tracking,
            };
        }
        out
    }

    fn empty(&self, state: ChainState, safe: bool) -> ChainCommandOut {
        ChainCommandOut {
            step: state.step,
            joints: self.joints,
            torques_nm: [0.0; CAP],
            safe,
            record: ChainTickRecord {
                state,
                inertia_kgm2: [0.0; CAP],
                stiffness: [0.0; CAP],
                status: [JointTick::Holding; CAP],
                torque_limited: 0,
                model_error: false,
                keyframe: match &self.law {
                    Law::Keyframes(servo) => servo.current(),
                    _ => self.current,
                },
                hand_error_m: f64::NAN,
                posture_error_rad: f64::NAN,
            },
        }
    }

    /// The safe state: damping only, τ_j = −γ_j ω_j with γ_j = 2 m_j ω_hold on the composite
    /// inertia of the state's configuration (clamped to the stable limit for the period), each
    /// limited to the joint's effort. If the model cannot evaluate the state (non-finite), zero
    /// torque.
    pub fn safe(&self, state: ChainState) -> ChainCommandOut {
        let m = &self.model;
        let sent = self
            .law
            .safety()
            .safe(&m.tree, &m.base, &state.q, &state.qd);
        self.out(state, &sent, true)
    }
}

impl LoopController for ChainController {
    type State = ChainState;
    type Command = ChainCommandOut;

    fn state_of(frame: &StateFrame) -> Option<ChainState> {
        ChainState::of(frame)
    }

    fn tick(&mut self, state: ChainState) -> ChainCommandOut {
        Self::tick(self, state)
    }

    fn safe(&self, state: ChainState) -> ChainCommandOut {
        Self::safe(self, state)
    }

    fn accepts(&self, state: &ChainState) -> Result<(), String> {
        if state.joints == self.joints {
            Ok(())
        } else {
            Err(format!(
                "the plant's states carry {} joint(s), the controller's model of the chain has {}: not the plant of this scenario",
                state.joints, self.joints
            ))
        }
    }
}
