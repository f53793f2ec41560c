//! The chain's controllers, the same object in lockstep and in real time: they sequence the
//! keyframes and run one of the four laws of the "On the Beat!" comparison on the controller's
//! model of the chain (built from the plant's own URDF):
//! - `single_link`: λ = t̂/n, gains from each link's own inertia about its joint;
//! - `composite`: the same with the composite inertia m_i (the link and all it carries);
//! - `composite_feedforward`: composite, plus the parent feed-forward m_i(a_i·s_i);
//! - `arrival`: our Lambert-W arrival gains on m_i, re-solved every tick with the period clamp,
//!   plus the feed-forward.
//!
//! Every law adds the model's gravity holding torque. Each joint's torque is limited to the
//! URDF's `<limit effort>` (the plant refuses a whole frame beyond it); every limited tick is
//! counted in the record, never silent.
//!
//! [`ChainController::tick`] runs on the control thread in real time: it never allocates, blocks
//! or panics. A model error (a non-finite state, a torque that is not a finite f64) gives the
//! safe state's torques for that tick, flagged in the record.

use control_core::articulated::nalgebra::Vector3;
use control_core::articulated::{
    ArrivalConfig, Chain, ChainArrival, ChainCommand, JointStatus, JointTarget, ModelError,
};
use control_core::beat::{BeatConfig, BeatServo, BeatTarget, InertiaModel};
use control_core::frames::{MAX_JOINTS, StateFrame};
use control_core::gains::{GainLimit, Integrator};

use super::super::session::{LoopCommand, LoopController, LoopState};
use super::scenario::ChainScenario;

/// Joints a chain may have here: what a frame carries.
pub const CAP: usize = MAX_JOINTS;

/// Which law drives the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainLaw {
    /// λ = t̂/n on each link's own inertia.
    SingleLink,
    /// λ = t̂/n on the composite inertia.
    Composite,
    /// λ = t̂/n on the composite inertia, plus the parent feed-forward.
    CompositeFeedforward,
    /// Lambert-W arrival gains on the composite inertia, plus the parent feed-forward.
    Arrival,
}

impl ChainLaw {
    /// All four, in report order.
    pub const ALL: [Self; 4] = [
        Self::SingleLink,
        Self::Composite,
        Self::CompositeFeedforward,
        Self::Arrival,
    ];

    /// The name used in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::SingleLink => "single_link",
            Self::Composite => "composite",
            Self::CompositeFeedforward => "composite_feedforward",
            Self::Arrival => "arrival",
        }
    }
}

/// The chain's state as an accepted state frame carried it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
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
    pub torque_limited: u16,
    /// The model refused the state (safe torques sent).
    pub model_error: bool,
    /// The index of the keyframe being aimed at.
    pub keyframe: usize,
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

#[derive(Debug, Clone, Copy)]
enum Law {
    Beat(BeatServo),
    Arrival(ChainArrival),
}

/// One controller of the chain for one run.
#[derive(Debug, Clone)]
pub struct ChainController {
    law: Law,
    chain: Chain<CAP>,
    joints: usize,
    gravity: Vector3<f64>,
    effort_nm: [f64; CAP],
    /// (instant, poses) of every keyframe.
    keyframes: Vec<(f64, [f64; CAP])>,
    current: usize,
    half_period_s: f64,
    period_s: f64,
    margin: f64,
    hold_freq_rad_s: f64,
}

impl ChainController {
    /// The controller `law` for `scenario`, on the model `chain` with the plant's effort limits
    /// `effort_nm` (URDF joint order); `state_period_s` is the period fresh states arrive at,
    /// which the gains must be stable for.
    pub fn new(
        law: ChainLaw,
        scenario: &ChainScenario,
        chain: Chain<CAP>,
        effort_nm: &[f64],
        state_period_s: f64,
    ) -> Result<Self, ModelError> {
        let c = &scenario.controllers;
        let beat = |inertia, parent_feedforward| {
            BeatServo::new(BeatConfig {
                inertia,
                parent_feedforward,
                time_constants: c.time_constants,
                period_s: state_period_s,
                integrator: Integrator::SemiImplicitEuler,
                stability_margin: c.stability_margin,
            })
            .map(Law::Beat)
        };
        let law = match law {
            ChainLaw::SingleLink => beat(InertiaModel::SingleLink, false)?,
            ChainLaw::Composite => beat(InertiaModel::Composite, false)?,
            ChainLaw::CompositeFeedforward => beat(InertiaModel::Composite, true)?,
            ChainLaw::Arrival => Law::Arrival(ChainArrival::new(ArrivalConfig {
                period_s: state_period_s,
                integrator: Integrator::SemiImplicitEuler,
                stability_margin: c.stability_margin,
                hold_natural_freq_rad_s: c.hold_natural_freq_rad_s,
                pose_tolerance_rad: c.tolerance_rad,
            })?),
        };
        let mut effort = [0.0; CAP];
        for (e, &l) in effort.iter_mut().zip(effort_nm) {
            *e = l;
        }
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
        let g = scenario.model.gravity_m_s2;
        Ok(Self {
            law,
            joints: chain.len(),
            chain,
            gravity: Vector3::new(g[0], g[1], g[2]),
            effort_nm: effort,
            keyframes,
            current: 0,
            half_period_s: 0.5 * scenario.control_period_s(),
            period_s: state_period_s,
            margin: c.stability_margin,
            hold_freq_rad_s: c.hold_natural_freq_rad_s,
        })
    }

    /// One tick. Never allocates, blocks or panics.
    pub fn tick(&mut self, state: ChainState) -> ChainCommandOut {
        let now = state.sim_time_s;
        // Aim at the next keyframe once the current one's instant has come.
        while self.current + 1 < self.keyframes.len()
            && self
                .keyframes
                .get(self.current)
                .is_some_and(|k| now > k.0 - self.half_period_s)
        {
            self.current += 1;
        }
        match self.command(&state, now) {
            Ok(cmd) => self.limited(state, &cmd),
            Err(_) => {
                let mut out = self.safe(state);
                out.safe = false;
                out.record.model_error = true;
                out
            }
        }
    }

    fn command(&self, state: &ChainState, now: f64) -> Result<ChainCommand<CAP>, ModelError> {
        let Some(&(t_k, pose)) = self.keyframes.get(self.current) else {
            return Err(ModelError::OutOfRange);
        };
        let previous = match self.current.checked_sub(1) {
            Some(i) => self.keyframes.get(i).map_or(0.0, |k| k.0),
            None => 0.0,
        };
        match &self.law {
            Law::Beat(servo) => {
                let mut targets = [BeatTarget::default(); CAP];
                for (t, &p) in targets.iter_mut().zip(&pose) {
                    *t = BeatTarget {
                        pose_rad: p,
                        velocity_rad_s: 0.0,
                        segment_s: t_k - previous,
                    };
                }
                servo.tick(&self.chain, &state.q, &state.qd, &targets, &self.gravity)
            }
            Law::Arrival(servo) => {
                let mut targets = [JointTarget::default(); CAP];
                for (t, &p) in targets.iter_mut().zip(&pose) {
                    *t = JointTarget {
                        pose_rad: p,
                        time_to_go_s: t_k - now,
                    };
                }
                servo.tick(&self.chain, &state.q, &state.qd, &targets, &self.gravity)
            }
        }
    }

    /// The command with each torque limited to its joint's effort, and its record.
    fn limited(&self, state: ChainState, cmd: &ChainCommand<CAP>) -> ChainCommandOut {
        let mut out = self.empty(state, false);
        for (j, jc) in cmd.joints().iter().enumerate() {
            let limit = self.effort_nm.get(j).copied().unwrap_or(0.0);
            let t = jc.torque_nm.clamp(-limit, limit);
            if t != jc.torque_nm {
                out.record.torque_limited |= 1 << j;
            }
            if let Some(slot) = out.torques_nm.get_mut(j) {
                *slot = t;
            }
            if let Some(slot) = out.record.inertia_kgm2.get_mut(j) {
                *slot = jc.inertia_kgm2;
            }
            if let Some(slot) = out.record.stiffness.get_mut(j) {
                *slot = jc.gains.stiffness_nm_per_rad;
            }
            if let Some(slot) = out.record.status.get_mut(j) {
                *slot = match jc.status {
                    JointStatus::GainClamped => JointTick::GainClamped,
                    JointStatus::Infeasible(_) => JointTick::Infeasible,
                    JointStatus::Holding => JointTick::Holding,
                    _ => JointTick::Tracking,
                };
            }
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
                keyframe: self.current,
            },
        }
    }

    /// The safe state: damping only, τ_j = −γ_j ω_j with γ_j = 2 m_j ω_hold on the composite
    /// inertia of the state's configuration (clamped to the stable limit for the period), each
    /// limited to the joint's effort. If the model cannot evaluate the state (non-finite), zero
    /// torque.
    pub fn safe(&self, state: ChainState) -> ChainCommandOut {
        let mut out = self.empty(state, true);
        let inertia = self
            .chain
            .forward_kinematics(&state.q)
            .and_then(|k| k.composite())
            .map(|c| c.axis_inertia());
        let Ok(inertia) = inertia else {
            return out;
        };
        for j in 0..self.joints {
            let (Some(&m), Some(&w), Some(&limit)) =
                (inertia.get(j), state.qd.get(j), self.effort_nm.get(j))
            else {
                continue;
            };
            let gamma =
                GainLimit::new(m, self.period_s, Integrator::SemiImplicitEuler, self.margin)
                    .map_or(0.0, |l| {
                        (2.0 * m * self.hold_freq_rad_s).min(l.max_damping_nms_per_rad)
                    });
            let t = -gamma * w;
            let t = if t.is_finite() {
                t.clamp(-limit, limit)
            } else {
                0.0
            };
            if let Some(slot) = out.torques_nm.get_mut(j) {
                *slot = t;
            }
            if let Some(slot) = out.record.inertia_kgm2.get_mut(j) {
                *slot = m;
            }
        }
        out
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
}
