//! Any legged robot (a floating-base [`crate::tree::Tree`], from its URDF) balancing by
//! [`Balance`], with a recovery step: [`LeggedBalance`] holds a standing pose and its base's
//! orientation, plants the feet the plant measured a load on (held some ticks,
//! [`ContactHold`]), and, on a robot with two feet, steps when the capture point leaves the
//! feet ([`crate::balance::step`]), holding the legs where the step landed.
//!
//! Never allocates, blocks or panics: capacities are in the type (`NV`, `NX`, `NR` the QP's,
//! `F` the feet). It holds its QP by value (box it, built on a thread with the stack for it).

use nalgebra::{Isometry3, Point3, UnitQuaternion, Vector3};

use super::contact::ContactHold;
use super::step::{FootState, StepCommand, Stepper, hold_legs};
use super::{Balance, BalanceInput, BalanceOutput, ContactBody, MAX_POINTS, PLANTED_N, PointTask};

/// What a [`LeggedBalance`] tick reads: the robot's state in the tree's coordinates and the
/// ground's load on each foot.
#[derive(Debug, Clone, Copy)]
pub struct LeggedInput<'a, const NV: usize> {
    /// The state's time, s.
    pub time_s: f64,
    /// The base's pose (its frame's origin), world.
    pub base: &'a Isometry3<f64>,
    /// The tree's joint coordinates (the first 6 unused: the base).
    pub q: &'a [f64; NV],
    /// The base's velocity (linear, angular; base frame) and the joints' rates.
    pub v: &'a [f64; NV],
    /// The ground's normal force on each foot's body as the plant measured it, N (foot order).
    pub loads_n: &'a [f64],
}

/// A legged robot's balance controller (the module docs): `F` feet at most.
pub struct LeggedBalance<const NV: usize, const NX: usize, const NR: usize, const F: usize> {
    qp: Balance<NV, NX, NR>,
    feet: heapless::Vec<ContactBody, F>,
    /// The standing pose: each coordinate's target.
    pose: [f64; NV],
    /// The base's orientation to hold.
    upright: UnitQuaternion<f64>,
    com_height_m: f64,
    gravity: Vector3<f64>,
    stepper: Option<Stepper>,
    hold: ContactHold<F>,
    /// The last tick's step command (none: no step evaluated).
    last_step: Option<StepCommand>,
    /// Once a step has landed, the coordinates there: the legs' targets from then on.
    legs_held: Option<[f64; NV]>,
}

impl<const NV: usize, const NX: usize, const NR: usize, const F: usize> core::fmt::Debug
    for LeggedBalance<NV, NX, NR, F>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LeggedBalance")
            .field("feet", &self.feet.len())
            .field("settings", self.qp.settings())
            .finish_non_exhaustive()
    }
}

/// What a [`LeggedBalance`] is built from besides its QP.
#[derive(Debug, Clone, Copy)]
pub struct LeggedSpec<'a, const NV: usize> {
    /// The feet (the QP's contact bodies, in its order).
    pub feet: &'a [ContactBody],
    /// The standing pose: each coordinate's target.
    pub pose: &'a [f64; NV],
    /// The base's orientation to hold.
    pub upright: UnitQuaternion<f64>,
    /// The centre of mass's height above the feet to hold, m (> 0).
    pub com_height_m: f64,
    /// Gravity, m/s².
    pub gravity: Vector3<f64>,
    /// The recovery step (none: no stepping; it needs exactly two feet).
    pub stepper: Option<Stepper>,
    /// Ticks a foot stays planted after its last load.
    pub contact_hold_ticks: u32,
}

impl<const NV: usize, const NX: usize, const NR: usize, const F: usize>
    LeggedBalance<NV, NX, NR, F>
{
    /// The controller of `qp` standing on `spec.feet`; `None` past `F` feet.
    pub fn new(qp: Balance<NV, NX, NR>, spec: LeggedSpec<'_, NV>) -> Option<Self> {
        Some(Self {
            qp,
            feet: heapless::Vec::from_slice(spec.feet).ok()?,
            pose: *spec.pose,
            upright: spec.upright,
            com_height_m: spec.com_height_m,
            gravity: spec.gravity,
            stepper: spec.stepper,
            hold: ContactHold::new(spec.contact_hold_ticks),
            last_step: None,
            legs_held: None,
        })
    }

    /// The QP controller (its tree, its last QP).
    pub fn balance(&self) -> &Balance<NV, NX, NR> {
        &self.qp
    }

    /// Recovery steps started so far and the longest of them, m.
    pub fn steps(&self) -> (u32, f64) {
        self.stepper.as_ref().map_or((0, 0.0), Stepper::steps)
    }

    /// Whether a foot was in the air, stepping, at the last tick.
    pub fn swinging(&self) -> bool {
        matches!(self.last_step, Some(StepCommand::Swing { .. }))
    }

    /// The recovery step's tick: the centre of mass, its velocity and both feet from the tree
    /// at the input's state; `None` if the model cannot be evaluated there.
    fn step_tick(&mut self, input: &LeggedInput<'_, NV>) -> Option<StepCommand> {
        let kin = self.qp.tree().kinematics(input.base, input.q).ok()?;
        let (_, com) = kin.center_of_mass().ok()?;
        let velocity = kin.com_jacobian().ok()? * nalgebra::SVector::<f64, NV>::from(*input.v);
        let omega = libm::sqrt(self.gravity.norm() / self.com_height_m);
        let up = -self.gravity.normalize();
        let mut world = [[[0.0; 3]; MAX_POINTS]; 2];
        for (w, foot) in world.iter_mut().zip(&self.feet) {
            let pose = kin.body_pose(foot.body)?;
            for (slot, p) in w.iter_mut().zip(foot.points.iter().take(foot.count)) {
                *slot = (pose * Point3::from(*p)).coords.into();
            }
        }
        let feet = &self.feet;
        let state = |k: usize| -> Option<FootState<'_>> {
            let foot = feet.get(k)?;
            let w = world.get(k)?;
            let load = *input.loads_n.get(k)?;
            Some(FootState {
                body: foot.body,
                sole: foot.points.get(..foot.count)?,
                corners_world: w.get(..foot.count)?,
                sole_world: [*w.first()?, *w.get(1)?, *w.get(2)?],
                loaded: load > PLANTED_N,
                load_n: load,
            })
        };
        let feet = [state(0)?, state(1)?];
        Some(self.stepper.as_mut()?.tick(
            input.time_s,
            &com,
            &Vector3::new(velocity[0], velocity[1], velocity[2]),
            omega,
            &up,
            &feet,
        ))
    }

    /// One tick: the QP's output (its torques by tree coordinate, the base's six first and
    /// zero).
    pub fn tick(&mut self, input: &LeggedInput<'_, NV>) -> BalanceOutput<NV> {
        let mut planted = [[false; MAX_POINTS]; F];
        let loads = self
            .feet
            .iter()
            .enumerate()
            .map(|(k, _)| input.loads_n.get(k).is_some_and(|f| *f > PLANTED_N));
        let held = self.hold.tick(loads);
        for (p, held) in planted.iter_mut().zip(held) {
            *p = [held; MAX_POINTS];
        }
        let mut tasks = [PointTask::on(0); 3];
        let mut task_count = 0;
        let mut q_target = self.pose;
        if self.stepper.is_some() {
            let command = self.step_tick(input);
            self.last_step = command;
            // None: a model the step could not evaluate (the QP reports that one itself); no
            // step this tick.
            let command = command.unwrap_or(StepCommand::Stand);
            if let Some(p) = command.swing_foot().and_then(|f| planted.get_mut(f)) {
                *p = [false; MAX_POINTS];
            }
            if command.landed_now() {
                self.legs_held = Some(*input.q);
            }
            for (slot, t) in tasks.iter_mut().zip(command.tasks()) {
                *slot = *t;
                task_count += 1;
            }
            if let Some(held) = self.legs_held {
                let feet = self.feet.iter().map(|f| f.body);
                hold_legs(self.qp.tree(), feet, &held, &mut q_target);
            }
        }
        self.qp.tick(&BalanceInput {
            base_pose: input.base,
            q: input.q,
            v: input.v,
            q_target: &q_target,
            upright_target: &self.upright,
            com_height_m: self.com_height_m,
            planted: planted.get(..self.feet.len()).unwrap_or(&[]),
            gravity: self.gravity,
            tasks: tasks.get(..task_count).unwrap_or(&[]),
        })
    }
}

impl<const NV: usize, const NX: usize, const NR: usize, const F: usize>
    crate::controller::Controller<LeggedInput<'_, NV>> for LeggedBalance<NV, NX, NR, F>
{
    type Command = BalanceOutput<NV>;
    type Error = core::convert::Infallible;

    fn tick(&mut self, input: &LeggedInput<'_, NV>) -> Result<BalanceOutput<NV>, Self::Error> {
        Ok(LeggedBalance::tick(self, input))
    }

    /// As [`Balance`]'s: groups scaled back to their effort; anything but a solved QP is a
    /// fallback.
    fn limits(command: &BalanceOutput<NV>) -> crate::controller::Limits {
        <Balance<NV, NX, NR> as crate::controller::Controller<BalanceInput<'_, NV>>>::limits(
            command,
        )
    }
}

/// Each of `torques_nm` held within its joint's `effort_nm` (a hair inside, 1e-9 of it: a plant
/// refuses a value beyond), a non-finite one set to 0; how many were changed. Entries past
/// either slice are left alone.
pub fn limit_to_efforts(torques_nm: &mut [f64], effort_nm: &[f64]) -> u32 {
    let mut limited = 0;
    for (t, &effort) in torques_nm.iter_mut().zip(effort_nm) {
        let e = effort * (1.0 - 1e-9);
        if !t.is_finite() {
            *t = 0.0;
            limited += 1;
        } else if t.abs() > e {
            *t = t.clamp(-e, e);
            limited += 1;
        }
    }
    limited
}

/// The simplest stance controller, the baseline a balance controller is judged against: each
/// joint's PD towards its standing pose plus the torque that holds the robot still there,
/// τ_k = hold_k + kp_k (pose_k − q_k) − kd_k q̇_k, within its effort ([`limit_to_efforts`]). Its
/// safe state damps alone, τ_k = −kd_k q̇_k. `N` joints at most.
///
/// Never allocates, blocks or panics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PdHold<const N: usize> {
    joints: usize,
    pose: [f64; N],
    hold: [f64; N],
    kp: [f64; N],
    kd: [f64; N],
    effort: [f64; N],
}

impl<const N: usize> PdHold<N> {
    /// The controller of `pose.len()` joints (rad, or m for a slider): their static torques
    /// `hold`, stiffness `kp`, damping `kd` and efforts `effort` (each as long as `pose`);
    /// `None` past `N`, for slices of other lengths, or for a value that is not finite (an
    /// effort or a gain below 0 too).
    pub fn new(pose: &[f64], hold: &[f64], kp: &[f64], kd: &[f64], effort: &[f64]) -> Option<Self> {
        let n = pose.len();
        if n > N || [hold.len(), kp.len(), kd.len(), effort.len()] != [n; 4] {
            return None;
        }
        let finite = |s: &[f64]| s.iter().all(|x| x.is_finite());
        let non_negative = |s: &[f64]| s.iter().all(|&x| x >= 0.0);
        if !(finite(pose) && finite(hold) && finite(kp) && finite(kd) && finite(effort))
            || !(non_negative(kp) && non_negative(kd) && non_negative(effort))
        {
            return None;
        }
        let copy = |s: &[f64]| {
            let mut a = [0.0; N];
            for (a, &x) in a.iter_mut().zip(s) {
                *a = x;
            }
            a
        };
        Some(Self {
            joints: n,
            pose: copy(pose),
            hold: copy(hold),
            kp: copy(kp),
            kd: copy(kd),
            effort: copy(effort),
        })
    }

    /// The joints it drives.
    pub fn joints(&self) -> usize {
        self.joints
    }

    /// Each joint's effort.
    pub fn effort(&self) -> &[f64] {
        self.effort.get(..self.joints).unwrap_or(&[])
    }

    /// The torques at joint positions `q` and velocities `qd` (joint order; entries past the
    /// joints are 0), and how many were held within their effort.
    pub fn tick(&self, q: &[f64; N], qd: &[f64; N]) -> ([f64; N], u32) {
        let mut t = [0.0; N];
        for (k, t) in t.iter_mut().enumerate().take(self.joints) {
            let at = |a: &[f64; N]| a.get(k).copied().unwrap_or(0.0);
            *t = at(&self.hold) + at(&self.kp) * (at(&self.pose) - at(q)) - at(&self.kd) * at(qd);
        }
        let limited = limit_to_efforts(&mut t, self.effort());
        (t, limited)
    }

    /// The safe state's torques at joint velocities `qd`: the damping alone, within the efforts.
    pub fn safe(&self, qd: &[f64; N]) -> ([f64; N], u32) {
        let mut t = [0.0; N];
        for ((t, &kd), &w) in t.iter_mut().zip(&self.kd).zip(qd).take(self.joints) {
            *t = -kd * w;
        }
        let limited = limit_to_efforts(&mut t, self.effort());
        (t, limited)
    }
}

/// What a [`PdHold`] tick reads: the joints' positions and velocities (joint order).
#[derive(Debug, Clone, Copy)]
pub struct PdHoldInput<'a, const N: usize> {
    /// Positions, rad (m for a slider).
    pub q: &'a [f64; N],
    /// Velocities.
    pub qd: &'a [f64; N],
}

/// What a [`PdHold`] tick sends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PdHoldCommand<const N: usize> {
    /// The torques, each within its effort (0 past the joints).
    pub torques_nm: [f64; N],
    /// How many were held within their effort (or were not finite and sent as 0).
    pub limited: u32,
}

impl<const N: usize> crate::controller::Controller<PdHoldInput<'_, N>> for PdHold<N> {
    type Command = PdHoldCommand<N>;
    type Error = core::convert::Infallible;

    fn tick(&mut self, input: &PdHoldInput<'_, N>) -> Result<PdHoldCommand<N>, Self::Error> {
        let (torques_nm, limited) = PdHold::tick(self, input.q, input.qd);
        Ok(PdHoldCommand {
            torques_nm,
            limited,
        })
    }

    fn limits(command: &PdHoldCommand<N>) -> crate::controller::Limits {
        crate::controller::Limits {
            torque_limited: command.limited,
            ..Default::default()
        }
    }
}
