//! The humanoid's controllers in a `dynamo_push` scenario, the same object in lockstep and in
//! real time: Dynamo's three laws are [`control_core::dynamo::humanoid::HumanoidPose`] (the
//! library's whole-body pose controller: gains by part, the standing lean, the timed reach,
//! the ankles' lean damping, the root spring); `qp_balance` is [`super::balance`]'s QP toward
//! the same pose targets. This module turns a plant state into their input and their command
//! into a torque frame, and reports what the recorder keeps.
//!
//! [`DynamoController::tick`] runs on the control thread in real time: it never allocates
//! (every buffer is sized when the controller is built), blocks or panics. A servo that refuses
//! its input (a non-finite state) gives that joint the safe state's damping for the tick,
//! counted in the command.

use control_core::articulated::nalgebra::Vector3;
pub use control_core::dynamo::humanoid::{GainScope, Reach};
use control_core::dynamo::humanoid::{
    HumanoidCommand, HumanoidInput, HumanoidPose, HumanoidSpec, PoseLaw,
};
use control_core::dynamo::{RootSpringConfig, SpringState};
use control_core::frames::{BodyMotion, MAX_BODIES, MAX_JOINTS, StateFrame};
use robot_model::humanoid::{HumanoidModel, MAX_HUMANOID_JOINTS};

use super::super::roles::JointRole;
use super::super::session::{LoopCommand, LoopController, LoopState};

/// Which law drives the joints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DynamoLaw {
    /// Parent-space PD on every joint.
    ParentSpace,
    /// Dynamo's world-space PD, person-space targets.
    WorldSpace,
    /// World-space PD plus the root spring.
    WorldSpaceRootSpring,
    /// Abe, da Silva and Popović's multiobjective QP with friction cones
    /// ([`super::balance`]): accelerations, contact forces and torques chosen together.
    QpBalance,
}

impl DynamoLaw {
    /// All three, in report order.
    pub const ALL: [Self; 4] = [
        Self::ParentSpace,
        Self::WorldSpace,
        Self::WorldSpaceRootSpring,
        Self::QpBalance,
    ];

    /// The name in scenarios and reports.
    pub const fn name(self) -> &'static str {
        match self {
            Self::ParentSpace => "parent_space",
            Self::WorldSpace => "world_space",
            Self::WorldSpaceRootSpring => "world_space_root_spring",
            Self::QpBalance => "qp_balance",
        }
    }

    /// The law named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.name() == name)
    }

    /// The library's pose law (`qp_balance`: none, the QP drives the joints).
    pub const fn pose_law(self) -> Option<PoseLaw> {
        match self {
            Self::ParentSpace => Some(PoseLaw::ParentSpace),
            Self::WorldSpace => Some(PoseLaw::WorldSpace),
            Self::WorldSpaceRootSpring => Some(PoseLaw::WorldSpaceRootSpring),
            Self::QpBalance => None,
        }
    }
}

/// The humanoid's state as a tick sees it.
#[derive(Debug, Clone, Copy, Default)]
pub struct HumanoidState {
    /// The plant step.
    pub step: u64,
    /// Its time, s.
    pub sim_time_s: f64,
    /// Bodies carried.
    pub body_count: usize,
    /// The bodies' world motion, body order.
    pub bodies: [BodyMotion; MAX_BODIES],
    /// The ground's normal (vertical) force on the left foot, right foot, left toes and right
    /// toes at the last step, N.
    pub contact_normal_n: [f64; 4],
    /// The ground's normal force at each bottom corner of the left and the right sole at the
    /// last step (the plant's contact points 1–4: `sim_host::humanoid::SOLE_CORNERS` order), N.
    pub sole_corner_n: [[f64; 4]; 2],
}

impl HumanoidState {
    /// Whether this state comes from the plant of a humanoid with `bodies` bodies; if not, why.
    pub fn fits(&self, bodies: usize) -> Result<(), String> {
        if self.body_count == bodies {
            Ok(())
        } else {
            Err(format!(
                "the plant's states carry {} bodies, the humanoid has {bodies}: not the plant of this scenario",
                self.body_count
            ))
        }
    }

    /// Side `side`'s (0 left, 1 right) sole-corner normal forces in the order
    /// `control_core::contact_stabiliser` takes them: back right, back left, front right, front
    /// left. The plant's points 1–4 are (−x, −z), (−x, +z), (+x, −z), (+x, +z) in the sole's
    /// axes, and the humanoid's left is −z.
    pub fn sole_corners(&self, side: usize) -> Option<[f64; 4]> {
        let &[bl, br, fl, fr] = self.sole_corner_n.get(side)?;
        Some([br, bl, fr, fl])
    }

    /// The state a frame carries.
    pub fn of(frame: &StateFrame) -> Self {
        let mut bodies = [BodyMotion::default(); MAX_BODIES];
        for (b, m) in bodies.iter_mut().zip(&frame.bodies) {
            *b = *m;
        }
        let mut contact_normal_n = [0.0; 4];
        for (n, c) in contact_normal_n.iter_mut().zip(&frame.contacts) {
            *n = c.force_n[1];
        }
        let mut sole_corner_n = [[0.0; 4]; 2];
        let feet = [frame.contacts.first(), frame.contacts.get(1)].map(|c| c.map(|c| c.body));
        for c in frame.contacts.iter().filter(|c| c.point >= 1) {
            let Some(foot) = feet.iter().position(|f| *f == Some(c.body)) else {
                continue;
            };
            if let Some(n) = sole_corner_n
                .get_mut(foot)
                .and_then(|s| s.get_mut(usize::from(c.point) - 1))
            {
                *n = c.force_n[1];
            }
        }
        Self {
            step: frame.step,
            sim_time_s: frame.sim_time_s,
            body_count: frame.bodies.len(),
            bodies,
            contact_normal_n,
            sole_corner_n,
        }
    }
}

impl LoopState for HumanoidState {
    fn step(&self) -> u64 {
        self.step
    }

    fn sim_time_s(&self) -> f64 {
        self.sim_time_s
    }
}

/// What a tick sends, and what the recorder keeps of it.
#[derive(Debug, Clone, Copy)]
pub struct DynamoTick {
    /// The plant step it answers.
    pub step: u64,
    /// Its time, s.
    pub time_s: f64,
    /// The safe state's output.
    pub safe: bool,
    /// Values sent: 3 per joint, then 3 for the root.
    pub len: usize,
    /// The torques, N·m.
    pub torques_nm: [f64; MAX_JOINTS],
    /// |root torque|, N·m.
    pub root_torque_nm: f64,
    /// The root spring's state (none without a spring).
    pub spring: Option<SpringState>,
    /// Joints whose torque the limit cut.
    pub limited: u16,
    /// Joints whose servo refused its input (damping sent instead).
    pub refused: u16,
    /// Σ over joints of the squared angle between each joint's relative rotation and its
    /// pose target, rad².
    pub pose_error_sq_sum: f64,
    /// Joints in that sum.
    pub joints: u16,
    /// The reach joint's angle from its target (the same measure), rad; `None` without a reach.
    pub reach_error_rad: Option<f64>,
    /// `qp_balance` only: how its QP ended, its iterations and the largest friction use
    /// ‖f_t‖/(μ f_n) of its forces.
    pub qp: Option<QpTick>,
    /// `qp_balance` with a hand: the hand's distance from its final target, m (`None` before
    /// the reach starts).
    pub hand_error_m: Option<f64>,
}

/// What a balance tick's QP did (the humanoid's `qp_balance`, a robot's).
#[derive(Debug, Clone, Copy)]
pub struct QpTick {
    /// How it ended (anything but solved: fallback torques).
    pub status: control_core::balance::BalanceStatus,
    /// Interior-point iterations of all the tick's solves (0 when no solve ran).
    pub iterations: u32,
    /// Solves: more than 1 when a torque limit left out was needed after all.
    pub solves: u32,
    /// Joint groups whose torque limits were left out of the final QP.
    pub limits_left_out: u32,
    /// Largest ‖f_t‖ / (μ f_n) over the forces it chose.
    pub friction_use: f64,
    /// Recovery steps started so far and the longest of them, m.
    pub steps: (u32, f64),
    /// Whether a foot was in the air, stepping, this tick.
    pub swinging: bool,
}

impl QpTick {
    /// What the balance controller's output `out` says.
    pub fn of<const NV: usize>(
        status: control_core::balance::BalanceStatus,
        out: Option<&control_core::balance::BalanceOutput<NV>>,
    ) -> Self {
        Self {
            status,
            iterations: out.map_or(0, |o| o.iterations),
            solves: out.map_or(0, |o| o.solves),
            limits_left_out: out.map_or(0, |o| o.limits_left_out),
            friction_use: out.map_or(0.0, |o| o.friction_use),
            steps: (0, 0.0),
            swinging: false,
        }
    }
}

impl DynamoTick {
    /// No torque yet for the state `s`: `len` values, all zero, nothing counted.
    fn zero(s: &HumanoidState, safe: bool, len: usize) -> Self {
        Self {
            step: s.step,
            time_s: s.sim_time_s,
            safe,
            len,
            torques_nm: [0.0; MAX_JOINTS],
            root_torque_nm: 0.0,
            spring: None,
            limited: 0,
            refused: 0,
            pose_error_sq_sum: 0.0,
            joints: 0,
            reach_error_rad: None,
            qp: None,
            hand_error_m: None,
        }
    }

    /// The torque frame of the library's `command` for the `joints` joints, answering `s`.
    fn of<const J: usize>(s: &HumanoidState, command: &HumanoidCommand<J>, joints: usize) -> Self {
        let mut out = Self::zero(s, command.safe, 3 * joints + 3);
        for (j, torque) in command.torques_nm.iter().enumerate().take(joints) {
            out.put(3 * j, torque);
        }
        if let Some(state) = command.spring {
            out.spring = Some(state);
            out.root_torque_nm = command.root_torque_nm.norm();
            out.put(3 * joints, &command.root_torque_nm);
        }
        out.limited = command.limited;
        out.refused = command.refused;
        out.pose_error_sq_sum = command.pose_error_sq_sum;
        out.joints = command.joints;
        out.reach_error_rad = command.reach_error_rad;
        out
    }

    /// Writes the three values of `torque` from value index `at` (the root's after the joints').
    fn put(&mut self, at: usize, torque: &Vector3<f64>) {
        for (slot, x) in self.torques_nm.iter_mut().skip(at).zip(torque.iter()) {
            *slot = *x;
        }
    }
}

impl LoopCommand for DynamoTick {
    fn step(&self) -> u64 {
        self.step
    }

    fn is_safe(&self) -> bool {
        self.safe
    }

    fn torques(&self) -> &[f64] {
        self.torques_nm.get(..self.len).unwrap_or(&[])
    }
}

/// The pose controller of one run.
#[derive(Debug, Clone)]
pub struct DynamoController {
    /// The pose servos (`qp_balance`: only its targets, pose error and safe state).
    pose: HumanoidPose<MAX_HUMANOID_JOINTS, MAX_BODIES>,
    /// `qp_balance`'s QP controller.
    balance: Option<super::balance::HumanoidBalance>,
}

impl DynamoController {
    /// `qp_balance`: reach with a hand as `hand` says (on `model`, the one this controller was
    /// built from). An error for the other laws, which have no hand task.
    pub fn reach_with_hand(
        &mut self,
        hand: &super::HandSpec,
        model: &HumanoidModel,
    ) -> Result<(), String> {
        match self.balance.as_mut() {
            Some(b) => b.reach_with_hand(hand, model),
            None => Err("hand: only qp_balance reaches with a hand".into()),
        }
    }

    /// `--record-qp`: records this controller's QPs into `log` (`qp_balance` only; the other
    /// laws solve none).
    pub fn record_qp(&mut self, log: super::balance::QpLog) {
        if let Some(b) = self.balance.as_mut() {
            b.log = Some(log);
        }
    }

    /// The controller of `law` for `model`, whose joints play the parts `roles` (joint order:
    /// the gains and the ankles' lean damping go by part), gains of the joints in `scope` scaled
    /// by `gain_scale`, `reach` the timed target, `spring` the root spring (used by
    /// `world_space_root_spring` only), `qp` a scenario's `[qp_balance]` settings (`qp_balance`
    /// only), `period_s` the control period.
    pub fn new(
        law: DynamoLaw,
        (model, roles): (&HumanoidModel, &[JointRole]),
        (gain_scale, scope): (f64, GainScope),
        reach: Option<Reach>,
        (spring, qp): (RootSpringConfig, Option<super::QpBalanceSpec>),
        period_s: f64,
        gravity_m_s2: [f64; 3],
    ) -> Result<Self, String> {
        if model.bodies.len() > MAX_BODIES || model.torque_len() > MAX_JOINTS {
            return Err(format!(
                "{} bodies and {} torque values: a frame carries {MAX_BODIES} and {MAX_JOINTS}",
                model.bodies.len(),
                model.torque_len()
            ));
        }
        let joints = model.pose_joints(roles)?;
        let bodies = model.body_masses();
        let lean = model.standing_lean_rad(roles, &[]);
        // The reach's pose moves the centre of mass (the arm forward: about 2 cm): its own lean.
        let reach_lean = reach.map_or(lean, |r| {
            let mut rotations = vec![[1.0, 0.0, 0.0, 0.0]; model.joints.len()];
            if let Some(q) = rotations.get_mut(r.joint) {
                let r = r.rotation.quaternion();
                *q = [r.w, r.i, r.j, r.k];
            }
            model.standing_lean_rad(roles, &rotations)
        });
        let spec = HumanoidSpec {
            gains: (gain_scale, scope),
            lean_rad: (lean, reach_lean),
            reach,
            spring,
            gravity_m_s2: Vector3::from(gravity_m_s2),
            ..HumanoidSpec::new(&bodies, &joints, period_s)
        };
        // qp_balance keeps the pose's targets and safe state; its servos never run.
        let pose = HumanoidPose::new(law.pose_law().unwrap_or(PoseLaw::ParentSpace), &spec)
            .map_err(|e| match e {
                control_core::dynamo::humanoid::HumanoidError::Joint { joint, error } => {
                    let name = model.joints.get(joint).map_or("?", |j| j.name.as_str());
                    format!("joint {name}: {error}")
                }
                e => e.to_string(),
            })?;
        let balance = match law {
            DynamoLaw::QpBalance => Some(super::balance::HumanoidBalance::new(
                model,
                gravity_m_s2,
                gain_scale,
                qp,
            )?),
            _ => None,
        };
        Ok(Self { pose, balance })
    }

    /// The bodies of `s` the controller reads (all it carries).
    fn bodies(s: &HumanoidState) -> &[BodyMotion] {
        s.bodies.get(..s.body_count).unwrap_or(&s.bodies)
    }

    /// One control tick.
    pub fn tick(&mut self, s: HumanoidState) -> DynamoTick {
        if s.body_count != self.pose.body_count() {
            return self.safe(s);
        }
        let input = HumanoidInput {
            time_s: s.sim_time_s,
            bodies: Self::bodies(&s),
        };
        let Some(balance) = &mut self.balance else {
            let command = self.pose.tick(&input);
            return DynamoTick::of(&s, &command, self.pose.joint_count());
        };
        let n = self.pose.joint_count();
        let t = s.sim_time_s;
        let mut out = DynamoTick::of(&s, &self.pose.measure(&input), n);
        // Each joint's target relative to its parent.
        let targets = self.pose.targets(t);
        let bodies = input.bodies;
        let torques = out.torques_nm.get_mut(..3 * n).unwrap_or(&mut []);
        match balance.tick(
            t,
            bodies,
            targets.get(..n).unwrap_or(&[]),
            &s.contact_normal_n,
            torques,
        ) {
            Some(status) => {
                out.hand_error_m = balance.hand_error_m(bodies);
                let last = balance.last();
                out.qp = Some(QpTick {
                    steps: balance.steps(),
                    swinging: balance.swinging(),
                    ..QpTick::of(status, last)
                });
                out.limited += last.map_or(0, |o| o.limited) as u16;
                out
            }
            None => {
                let mut safe = self.safe(s);
                safe.refused += 1;
                safe
            }
        }
    }

    /// The safe state: damping only on every joint's relative angular velocity, within its
    /// effort; no root torque.
    pub fn safe(&self, s: HumanoidState) -> DynamoTick {
        let command = self.pose.safe(Self::bodies(&s));
        DynamoTick::of(&s, &command, self.pose.joint_count())
    }
}

impl LoopController for DynamoController {
    type State = HumanoidState;
    type Command = DynamoTick;

    fn state_of(frame: &StateFrame) -> Option<HumanoidState> {
        Some(HumanoidState::of(frame))
    }

    fn tick(&mut self, state: HumanoidState) -> DynamoTick {
        Self::tick(self, state)
    }

    fn safe(&self, state: HumanoidState) -> DynamoTick {
        Self::safe(self, state)
    }

    fn accepts(&self, state: &HumanoidState) -> Result<(), String> {
        state.fits(self.pose.body_count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use control_core::dynamo::humanoid::LEAN_DAMPING_NMS_PER_RAD;

    fn model() -> HumanoidModel {
        let urdf =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/humanoid15.urdf");
        HumanoidModel::load(&urdf).expect("the shipped humanoid loads")
    }

    /// The humanoid's joints' parts by the default `[roles]`.
    fn roles(model: &HumanoidModel) -> Vec<JointRole> {
        let urdf =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/humanoid15.urdf");
        let roles = super::super::super::roles::RolesSpec::default()
            .resolve(model, &urdf)
            .expect("the default roles resolve");
        super::super::super::roles::joint_roles(&roles, model).expect("every joint plays a part")
    }

    /// The zero pose standing, every body moving at `velocity_m_s`, no rotation.
    fn state(model: &HumanoidModel, velocity_m_s: [f64; 3]) -> HumanoidState {
        let up = robot_model::humanoid::BodyPose {
            com_m: [0.0, 1.0, 0.0],
            orientation: [1.0, 0.0, 0.0, 0.0],
        };
        let mut bodies = [BodyMotion::default(); MAX_BODIES];
        for (b, p) in bodies.iter_mut().zip(model.pose(up, &[])) {
            b.com_m = p.com_m;
            b.orientation = p.orientation;
            b.velocity_m_s = velocity_m_s;
        }
        HumanoidState {
            step: 0,
            sim_time_s: 0.0,
            body_count: model.bodies.len(),
            bodies,
            contact_normal_n: [300.0, 300.0, 20.0, 20.0],
            sole_corner_n: [[75.0; 4]; 2],
        }
    }

    #[test]
    fn qp_balance_answers_a_standing_state_with_torques_within_the_efforts() {
        let model = model();
        let mut c = controller(&model, DynamoLaw::QpBalance, (1.0, GainScope::AllJoints));
        for v in [[0.0; 3], [0.3, 0.0, 0.1]] {
            let out = c.tick(state(&model, v));
            let qp = out.qp.expect("qp_balance reports its QP");
            assert_eq!(qp.status, control_core::balance::BalanceStatus::Solved);
            assert!(qp.iterations > 0 && qp.friction_use <= 1.0 + 1e-6);
            assert!(!out.safe && out.refused == 0);
            for (j, joint) in model.joints.iter().enumerate() {
                let t = Vector3::new(
                    out.torques_nm[3 * j],
                    out.torques_nm[3 * j + 1],
                    out.torques_nm[3 * j + 2],
                );
                assert!(t.iter().all(|x| x.is_finite()));
                assert!(t.norm() <= joint.effort_nm, "{}: {}", joint.name, t.norm());
            }
            // Something holds the body: the legs carry torque.
            let hip = model.joint_index("left_hip").unwrap();
            assert!(
                out.torques_nm[3 * hip..3 * hip + 3]
                    .iter()
                    .any(|x| x.abs() > 1e-3)
            );
        }
        // A clone is a working controller too (a fresh QP).
        let mut twin = c.clone();
        let out = twin.tick(state(&model, [0.0; 3]));
        assert_eq!(
            out.qp.map(|q| q.status),
            Some(control_core::balance::BalanceStatus::Solved)
        );
        // A state it cannot map (a zero quaternion) gets the safe state, counted.
        let mut bad = state(&model, [0.0; 3]);
        bad.bodies[3].orientation = [0.0; 4];
        let out = c.tick(bad);
        assert!(out.safe && out.refused == 1);
    }

    fn controller(
        model: &HumanoidModel,
        law: DynamoLaw,
        gains: (f64, GainScope),
    ) -> DynamoController {
        let spring = RootSpringConfig {
            stiffness_nm_per_rad: 690.0,
            damping_nms_per_rad: 69.0,
            max_torque_nm: 69.0,
            break_torque_nm: Some(138.0),
            ..RootSpringConfig::default()
        };
        DynamoController::new(
            law,
            (model, &roles(model)),
            gains,
            None,
            (spring, None),
            0.005,
            [0.0, -9.81, 0.0],
        )
        .expect("the controller builds")
    }

    /// The ankles' torque (+ on the foot, − on the leg) about z, the pitch axis, per ankle.
    fn ankle_pitch(model: &HumanoidModel, c: &mut DynamoController, v: [f64; 3]) -> Vec<f64> {
        let out = c.tick(state(model, v));
        model
            .joints
            .iter()
            .enumerate()
            .filter(|&(i, _)| roles(model)[i].is_ankle())
            .map(|(i, _)| out.torques_nm[3 * i + 2])
            .collect()
    }

    #[test]
    fn the_ankles_damp_the_lean_rate_under_every_law() {
        let model = model();
        // Dynamo's laws (qp_balance has no lean damping: its angular momentum objective).
        for law in DynamoLaw::ALL
            .into_iter()
            .filter(|l| *l != DynamoLaw::QpBalance)
        {
            let mut c = controller(&model, law, (1.0, GainScope::AllJoints));
            let still = ankle_pitch(&model, &mut c, [0.0; 3]);
            let moving = ankle_pitch(&model, &mut c, [0.3, 0.0, 0.0]);
            assert_eq!(still.len(), 2);
            for (s, m) in still.iter().zip(&moving) {
                // Moving forward (+x) with the centre of mass about 1 m above the ankles: the
                // lean turns at about −0.3 rad/s about z, and the leg gets +k_d·0.3 N·m about z
                // (backwards), the joint's value −k_d·0.3.
                let d = m - s;
                let per_rate = -d / 0.3;
                assert!(
                    (0.8..1.3).contains(&(per_rate / LEAN_DAMPING_NMS_PER_RAD)),
                    "{}: {s} → {m}",
                    law.name()
                );
            }
        }
    }

    #[test]
    fn an_upper_body_gain_scale_leaves_the_legs_at_their_nominal_gains() {
        let model = model();
        let v = [0.3, 0.0, 0.0];
        let law = DynamoLaw::WorldSpace;
        let nominal = ankle_pitch(
            &model,
            &mut controller(&model, law, (1.0, GainScope::AllJoints)),
            v,
        );
        let upper = ankle_pitch(
            &model,
            &mut controller(&model, law, (4.0, GainScope::UpperBody)),
            v,
        );
        let all = ankle_pitch(
            &model,
            &mut controller(&model, law, (4.0, GainScope::AllJoints)),
            v,
        );
        assert_eq!(nominal, upper);
        assert_ne!(nominal, all);
    }

    #[test]
    fn a_non_finite_body_velocity_is_refused_not_damped() {
        let model = model();
        let mut c = controller(&model, DynamoLaw::ParentSpace, (1.0, GainScope::AllJoints));
        let still = c.tick(state(&model, [0.0; 3]));
        let mut bad = state(&model, [0.0; 3]);
        bad.bodies[3].velocity_m_s = [f64::NAN, 0.0, 0.0];
        let out = c.tick(bad);
        // Both ankles lose their lean damping and say so; every torque stays finite.
        assert_eq!(out.refused, still.refused + 2);
        assert!(out.torques().iter().all(|t| t.is_finite()));
    }
}
