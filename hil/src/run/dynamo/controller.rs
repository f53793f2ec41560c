//! The pose controllers of a `dynamo_push` scenario, the same object in lockstep and in real
//! time, on the 15-body humanoid (`sim_host::humanoid`): every joint a servo of
//! [`control_core::dynamo`], targets the scenario's pose (standing, then a reach whose joint
//! arrives on time through the arrival gains), in one of three laws:
//! - `parent_space`: each joint holds its child's orientation relative to its parent;
//! - `world_space`: Dynamo's world-space servos, targets in person space (relative to the
//!   root's heading), on the upper body (waist, neck, arms): each of those bodies holds the world
//!   orientation the pose gives it with the root upright. The legs (hips, knees, ankles, toes:
//!   the chain that carries the root from the ground) keep parent-space targets: with
//!   world-space targets on every joint each servo holds its child and pushes back on its
//!   parent, so nothing holds the root, which tips as a free inverted pendulum between the hips
//!   (measured: fell at 1.1–1.5 s unpushed, even with a root PD carried by the hips as
//!   SIMBICON's stance hip);
//! - `world_space_root_spring`: the same, plus Dynamo's breakable root spring, an external
//!   torque on the root that never acts about the vertical.
//!
//! Every law uses the same gains ([`nominal_gains`], [`axis_shares`]) and the same standing
//! pose (the ankles lean the body so its centre of mass stands above them,
//! [`standing_lean_rad`], blended to the reach pose's lean while the arm reaches), and the
//! same damping of the body's lean rate at the ankles ([`LEAN_DAMPING_NMS_PER_RAD`]). The limb
//! joints (neck, shoulders, elbows) run with gains per unit inertia scaled by their subtree's
//! composite inertia about the joint, every tick, plus gravity's torque on the subtree as
//! feed-forward ([`control_core::dynamo::DynamoJoint::tick_scaled`]): with torque gains an
//! arm's swing (0.6 kg·m²) and twist (0.007 kg·m²) cannot both be served, and the arm reaching
//! forward turns one into the other. Before this the reach did not arrive (1.27 rad off at its
//! arrival time) and the arms chattered at the Nyquist rate, saturated at their limit, which
//! rocked the whole body (torso sway 0.29 rad unpushed).
//!
//! [`DynamoController::tick`] runs on the control thread in real time: it never allocates
//! (every buffer is sized when the controller is built), blocks or panics. A servo that refuses
//! its input (a non-finite state) gives that joint the safe state's damping for the tick,
//! counted in the command.

use control_core::articulated::nalgebra::{Matrix3, Quaternion, UnitQuaternion, Vector3};
use control_core::dynamo::{
    Arrival, ArrivalSettings, BodyInertia, BodyMotion as Motion, DynamoJoint, Heading, JointConfig,
    JointInertia, JointKind as ServoKind, RootSpring, RootSpringConfig, SpringState, Target,
    TargetSpace, gravity_torque_about, heading, subtree_inertia_about,
};
use control_core::frames::{BodyMotion, MAX_BODIES, MAX_JOINTS, StateFrame};
use control_core::simbicon3d::{Limb, Side};
use robot_model::humanoid::{HumanoidModel, JointKind};

use super::super::roles::JointRole;
use super::super::session::{LoopCommand, LoopController, LoopState};

/// Which joints a gain scale (the gain sweep) applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GainScope {
    /// Every joint, the ankles' lean damping too.
    AllJoints,
    /// The joints whose law differs between the controllers: the waist, neck, shoulders and
    /// elbows ([`JointRole::is_support`]: not the legs). The legs keep their nominal gains.
    UpperBody,
}

impl GainScope {
    /// Both, in report order.
    pub const ALL: [Self; 2] = [Self::UpperBody, Self::AllJoints];

    /// The name in scenarios and reports.
    pub const fn name(self) -> &'static str {
        match self {
            Self::AllJoints => "all_joints",
            Self::UpperBody => "upper_body",
        }
    }

    /// The scope named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whether the scale applies to a joint playing `role`.
    pub fn scales(self, role: JointRole) -> bool {
        match self {
            Self::AllJoints => true,
            Self::UpperBody => !role.is_support(),
        }
    }
}

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
}

/// One timed joint target: the joint's rotation relative to its parent from `start_s`, to
/// arrive at `arrive_s` (the reach).
#[derive(Debug, Clone, Copy)]
pub struct Reach {
    /// Joint index.
    pub joint: usize,
    /// The target rotation relative to the parent.
    pub rotation: UnitQuaternion<f64>,
    /// When the target is given, s.
    pub start_s: f64,
    /// When it must be reached, s.
    pub arrive_s: f64,
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

/// One joint as the controller drives it.
#[derive(Debug, Clone)]
struct Joint {
    parent: usize,
    child: usize,
    servo: DynamoJoint,
    /// The joint point relative to the parent's centre of mass, parent axes.
    anchor: Vector3<f64>,
    effort_nm: f64,
    /// [`axis_shares`] of the joint.
    shares: Vector3<f64>,
    /// Bodies the joint moves (its child's subtree), body indices.
    subtree: Vec<usize>,
    /// Whether its gains are per unit inertia ([`JointRole::is_upper_limb`]).
    scaled: bool,
}

/// The pose controller of one run.
#[derive(Debug, Clone)]
pub struct DynamoController {
    law: DynamoLaw,
    joints: Vec<Joint>,
    root: usize,
    bodies: usize,
    /// Mass and principal inertia per body.
    inertia: Vec<(f64, Vector3<f64>)>,
    reach: Option<Reach>,
    spring: Option<RootSpring>,
    safe_damping: f64,
    /// Per joint: whether it is on a leg, between the root and the ground (the support chain).
    support: Vec<bool>,
    /// Per joint: whether it is an ankle (its target leans the body so its centre of mass
    /// stands above the ankles; every other joint's standing target is the zero pose).
    ankles: Vec<bool>,
    /// The lean (rad about +z) of the standing pose and of the reach's pose, blended over the
    /// reach ([`DynamoController::lean_at`]).
    lean_rad: (f64, f64),
    /// The plant's gravity, m/s² (the limb joints' feed-forward).
    gravity: Vector3<f64>,
    /// Each ankle's damping of the body's lean rate, N·m·s/rad ([`LEAN_DAMPING_NMS_PER_RAD`],
    /// scaled).
    lean_damping: f64,
    /// The whole body's mass, kg.
    mass_kg: f64,
    /// `qp_balance`'s QP controller (the servos above are then not used).
    balance: Option<super::balance::HumanoidBalance>,
}

/// The fraction of a joint's effort the servos may use: a torque scaled down to exactly the
/// effort can have a norm a rounding above it, which the plant's check refuses.
const EFFORT_MARGIN: f64 = 1.0 - 1e-9;

/// Nominal gains of a joint by its part, before the scale. Upper limb joints
/// ([`JointRole::is_upper_limb`]): per
/// unit inertia (k_p 1/s², k_d 1/s), critically damped at [`LIMB_NATURAL_FREQ_RAD_S`], with
/// gravity's torque on the limb as feed-forward. The rest (legs, waist, toes): N·m/rad and
/// N·m·s/rad, with the share of them each of the parent's x, y, z axes gets ([`axis_shares`]):
/// the plant test's standing PD (`sim-host/tests/humanoid.rs`), stiff where the body's weight
/// rests (legs, waist), light on the toes, and little damping (an explicit PD at 5 ms is stable
/// only for kd·h/I < 2 and ωn·h < 2 on the body it turns: the toes' 0.0007 kg·m² allow 0.14
/// N·m·s/rad; raising the ankles' k_d to 20 made the humanoid fall at 1.2 s).
pub fn nominal_gains(role: JointRole) -> (f64, f64) {
    match role {
        r if r.is_upper_limb() => {
            let wn = LIMB_NATURAL_FREQ_RAD_S;
            (wn * wn, 2.0 * wn)
        }
        JointRole::Waist | JointRole::Limb(_, Limb::Hip | Limb::Knee | Limb::Ankle) => {
            (1000.0, 2.0)
        }
        _ => (20.0, 0.1),
    }
}

/// Each ankle's damping of the body's lean rate (N·m·s/rad, about the horizontal axes, every
/// law): the rate at which the line from the ankle to the whole body's centre of mass turns,
/// measured in world space, ω_lean = r × v_c / |r|². Without it the humanoid swayed ±3 cm at
/// 0.4 Hz, barely damped (the ankles' k_d of 2 N·m·s/rad cannot be raised: the light foot
/// makes the explicit loop unstable at 20), so a push met each controller at another phase of
/// its sway, worth several N·s of survived impulse. The lean's inertia about the ankles is the
/// whole body's, about 70 kg·m²: k_d·h/I = 2 × 400 × 0.005 / 70 = 0.06, far inside the
/// sampled loop's bound, and the foot does not enter the measured rate.
pub const LEAN_DAMPING_NMS_PER_RAD: f64 = 400.0;

/// The natural frequency of the limb joints' critically damped gains per unit inertia, rad/s.
/// Measured at 200 Hz: at 12 rad/s (k_d ≈ 15 N·m·s/rad on an arm's swing) the arms and the
/// torso's yaw (0.21 kg·m²) chatter at the Nyquist rate, saturated at the shoulders' 150 N·m;
/// 8 rad/s does not.
pub const LIMB_NATURAL_FREQ_RAD_S: f64 = 8.0;

/// The share of the nominal gains about each of the parent's x, y, z axes of a leg or waist
/// joint (a servo's torque is scaled by it component by component in the parent's frame, after
/// the torque limit, the same for every law): the plant test's per-axis gains. Not
/// [`JointConfig::axis_gains`], which shapes the torque before the limit: with that order (the
/// only difference: limits act on a few joint-ticks of a run) the unpushed `world_space`
/// humanoid fell at 3.4 s (measured before the limb joints got gains per unit inertia).
/// Lateral (x) 0.3 and twist (y) 1/3 on the waist and hips, lateral 0.3 on the ankles (the
/// foot's roll, 0.0025 kg·m² off the ground, is unstable at 1000 N·m/rad at 5 ms: ωn·h = 3.2);
/// 1 elsewhere. Limb joints get none: fixed parent axes are wrong for a limb that moves (an
/// arm's twist axis becomes a swing axis when it reaches forward), so they scale by their
/// inertia instead.
pub fn axis_shares(role: JointRole) -> [f64; 3] {
    match role {
        JointRole::Waist | JointRole::Limb(_, Limb::Hip) => [0.3, 1.0 / 3.0, 1.0],
        JointRole::Limb(_, Limb::Ankle) => [0.3, 1.0, 1.0],
        _ => [1.0; 3],
    }
}

/// The forward lean about the ankles (rad, about +z, negative: forward) that puts the centre
/// of mass of the pose `joint_rotations` (relative rotations w, x, y, z in joint order, missing:
/// the identity; `&[]`: the zero pose) above the ankles, so the pose stands.
pub fn standing_lean_rad(
    model: &HumanoidModel,
    roles: &[JointRole],
    joint_rotations: &[[f64; 4]],
) -> f64 {
    let up = robot_model::humanoid::BodyPose {
        com_m: [0.0; 3],
        orientation: [1.0, 0.0, 0.0, 0.0],
    };
    let poses = model.pose(up, joint_rotations);
    let m = model.total_mass_kg();
    let mut com = [0.0; 2];
    for (b, p) in model.bodies.iter().zip(&poses) {
        com[0] += b.mass_kg * p.com_m[0] / m;
        com[1] += b.mass_kg * p.com_m[1] / m;
    }
    let ankle = roles
        .iter()
        .position(|r| r.is_ankle())
        .and_then(|j| model.joints.get(j))
        .and_then(|j| {
            poses.get(j.parent).map(|p| {
                [
                    p.com_m[0] + j.anchor_in_parent_m[0],
                    p.com_m[1] + j.anchor_in_parent_m[1],
                ]
            })
        })
        .unwrap_or([0.0; 2]);
    -(ankle[0] - com[0]).atan2(com[1] - ankle[1])
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
        let arrival = ArrivalSettings {
            period_s,
            ..ArrivalSettings::default()
        };
        let v = |a: [f64; 3]| Vector3::new(a[0], a[1], a[2]);
        let mut joints = Vec::with_capacity(model.joints.len());
        if roles.len() != model.joints.len() {
            return Err(format!(
                "{} roles for {} joints",
                roles.len(),
                model.joints.len()
            ));
        }
        for (j, &role) in model.joints.iter().zip(roles) {
            let (kp, kd) = nominal_gains(role);
            let gain_scale = if scope.scales(role) { gain_scale } else { 1.0 };
            let kind = match j.kind {
                JointKind::Ball { .. } => ServoKind::Ball,
                JointKind::Hinge { axis, .. } => ServoKind::Hinge { axis: v(axis) },
                JointKind::TwoAxis { axes, .. } => ServoKind::TwoAxis {
                    axes: [v(axes[0]), v(axes[1])],
                },
            };
            let config = JointConfig {
                kind,
                stiffness_nm_per_rad: kp * gain_scale,
                damping_nms_per_rad: kd * gain_scale,
                // Just inside the effort: a vector scaled to exactly the effort can come out a
                // rounding above it, and the plant refuses the whole frame for that (then steps
                // with zero torques).
                torque_limit_nm: j.effort_nm * EFFORT_MARGIN,
                // Isotropic: the shares scale the limited torque instead (see `axis_shares`).
                axis_gains: Vector3::new(1.0, 1.0, 1.0),
            };
            let servo =
                DynamoJoint::new(config, arrival).map_err(|e| format!("joint {}: {e}", j.name))?;
            let subtree = model.subtree(j.child);
            joints.push(Joint {
                parent: j.parent,
                child: j.child,
                servo,
                anchor: v(j.anchor_in_parent_m),
                effort_nm: j.effort_nm * EFFORT_MARGIN,
                shares: v(axis_shares(role)),
                subtree,
                scaled: role.is_upper_limb(),
            });
        }
        let root = (0..model.bodies.len())
            .find(|b| model.joints.iter().all(|j| j.child != *b))
            .ok_or("the model has no root")?;
        let spring = match law {
            DynamoLaw::WorldSpaceRootSpring => {
                Some(RootSpring::new(spring).map_err(|e| format!("root spring: {e}"))?)
            }
            _ => None,
        };
        let lean = standing_lean_rad(model, roles, &[]);
        // The reach's pose moves the centre of mass (the arm forward: about 2 cm): its own lean.
        let reach_lean = reach.map_or(lean, |r| {
            let mut rotations = vec![[1.0, 0.0, 0.0, 0.0]; model.joints.len()];
            if let Some(q) = rotations.get_mut(r.joint) {
                let r = r.rotation.quaternion();
                *q = [r.w, r.i, r.j, r.k];
            }
            standing_lean_rad(model, roles, &rotations)
        });
        let lean_scale = if scope.scales(JointRole::Limb(Side::Left, Limb::Ankle)) {
            gain_scale
        } else {
            1.0
        };
        let balance = match law {
            DynamoLaw::QpBalance => Some(super::balance::HumanoidBalance::new(
                model,
                gravity_m_s2,
                gain_scale,
                qp,
            )?),
            _ => None,
        };
        Ok(Self {
            balance,
            lean_damping: LEAN_DAMPING_NMS_PER_RAD * lean_scale,
            mass_kg: model.total_mass_kg(),
            gravity: v(gravity_m_s2),
            ankles: roles.iter().map(|r| r.is_ankle()).collect(),
            lean_rad: (lean, reach_lean),
            law,
            joints,
            root,
            bodies: model.bodies.len(),
            inertia: model
                .bodies
                .iter()
                .map(|b| (b.mass_kg, v(b.inertia_kg_m2)))
                .collect(),
            reach,
            spring,
            safe_damping: 0.5 * gain_scale.min(1.0),
            support: roles.iter().map(|r| r.is_support()).collect(),
        })
    }

    fn motion(b: &BodyMotion) -> Motion {
        let [w, x, y, z] = b.orientation;
        let [ax, ay, az] = b.angular_velocity_rad_s;
        Motion {
            orientation: UnitQuaternion::new_normalize(Quaternion::new(w, x, y, z)),
            angular_velocity_rad_s: Vector3::new(ax, ay, az),
        }
    }

    /// The lean at time `t`: the standing pose's until the reach starts, the reach pose's from
    /// its arrival, linear in between.
    fn lean_at(&self, t: f64) -> f64 {
        let (from, to) = self.lean_rad;
        match self.reach {
            Some(r) if t >= r.arrive_s => to,
            Some(r) if t > r.start_s => {
                from + (to - from) * (t - r.start_s) / (r.arrive_s - r.start_s)
            }
            _ => from,
        }
    }

    /// Joint `j`'s target rotation relative to its parent at time `t`.
    fn relative_target(&self, j: usize, t: f64) -> UnitQuaternion<f64> {
        match self.reach {
            Some(r) if r.joint == j && t >= r.start_s => r.rotation,
            _ if self.ankles.get(j).copied().unwrap_or(false) => {
                UnitQuaternion::from_axis_angle(&Vector3::z_axis(), -self.lean_at(t))
            }
            _ => UnitQuaternion::identity(),
        }
    }

    /// One control tick.
    pub fn tick(&mut self, s: HumanoidState) -> DynamoTick {
        let mut out = DynamoTick::zero(&s, false, 3 * self.joints.len() + 3);
        if s.body_count != self.bodies {
            return self.safe(s);
        }
        let t = s.sim_time_s;
        let mut motion = [Motion::at_rest(UnitQuaternion::identity()); MAX_BODIES];
        for (m, b) in motion.iter_mut().zip(&s.bodies).take(self.bodies) {
            *m = Self::motion(b);
        }
        let root = motion.get(self.root).copied().unwrap_or(motion[0]);
        let head = heading(&root).unwrap_or(Heading::IDENTITY);
        // Person-space targets: each body's orientation in the heading frame when the root is
        // upright and every joint at its target (joints are ordered parents first).
        let mut person = [UnitQuaternion::identity(); MAX_BODIES];
        if let Some(p) = person.get_mut(self.root) {
            *p = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), self.lean_at(t));
        }
        // Dynamo's servos only: qp_balance needs neither these nor the centre of mass below.
        let servos = self.balance.is_none();
        for (j, joint) in self.joints.iter().enumerate().filter(|_| servos) {
            let parent = person
                .get(joint.parent)
                .copied()
                .unwrap_or_else(UnitQuaternion::identity);
            if let Some(p) = person.get_mut(joint.child) {
                *p = parent * self.relative_target(j, t);
            }
        }
        // Once a tick, for both ankles' lean damping.
        let centre = if servos {
            self.centre_of_mass(&s)
        } else {
            (Vector3::zeros(), Vector3::zeros())
        };
        // Each joint's target relative to its parent, for qp_balance.
        let mut targets = [UnitQuaternion::identity(); MAX_JOINTS];
        for (j, joint) in self.joints.iter().enumerate() {
            let (Some(parent), Some(child)) = (motion.get(joint.parent), motion.get(joint.child))
            else {
                continue;
            };
            let rel_target = self.relative_target(j, t);
            if let Some(slot) = targets.get_mut(j) {
                *slot = rel_target;
            }
            let actual_rel = parent.orientation.inverse() * child.orientation;
            let err = (rel_target.inverse() * actual_rel).angle();
            out.pose_error_sq_sum += err * err;
            out.joints += 1;
            if self.reach.is_some_and(|r| r.joint == j) {
                out.reach_error_rad = Some(err);
            }
            if self.balance.is_some() {
                continue;
            }
            // The composite inertia the joint moves, about the joint point (limb joints every
            // tick, others only for their arrival).
            let arriving = self
                .reach
                // Arrival gains until the arrival; then the joint's own gains hold the reach (the
                // arrival solver's hold at 10 rad/s is weaker than the arm's weight, and its
                // gains re-solved against a droop it cannot see climb without bound).
                .filter(|r| r.joint == j && t >= r.start_s && t < r.arrive_s);
            let inertia = if joint.scaled || arriving.is_some() {
                self.subtree_inertia(joint, &s, &motion)
            } else {
                None
            };
            let timed = arriving.map(|r| Arrival {
                time_to_go_s: r.arrive_s - t,
                inertia: match inertia {
                    // The gains solved about v also damp every other axis (the module's
                    // off-axis damping): clamped for the least principal inertia, so the
                    // explicit loop stays stable about every axis.
                    Some((i, _)) if !joint.scaled => {
                        JointInertia::Scalar(i.symmetric_eigenvalues().min())
                    }
                    // Limb joints scale their gains by the tensor and solve for a unit inertia
                    // (`tick_scaled` ignores this one).
                    _ => JointInertia::Scalar(1.0),
                },
            });
            // The legs hold parent-space targets under every law (see the module docs).
            let support = self.support.get(j).copied().unwrap_or(false);
            let target = if self.law == DynamoLaw::ParentSpace || support {
                Target {
                    arrival: timed,
                    ..Target::fixed(TargetSpace::Parent, rel_target)
                }
            } else {
                Target {
                    arrival: timed,
                    ..Target::fixed(
                        TargetSpace::Person,
                        person
                            .get(joint.child)
                            .copied()
                            .unwrap_or_else(UnitQuaternion::identity),
                    )
                }
            };
            let result = match (joint.scaled, inertia) {
                (true, Some((i, load))) => joint
                    .servo
                    .tick_scaled(parent, child, &head, &target, &i, &-load),
                (true, None) => Err(control_core::dynamo::DynamoError::OutOfRange),
                (false, _) => joint.servo.tick(parent, child, &head, &target),
            };
            let torque = match result {
                Ok(o) => {
                    if o.limited {
                        out.limited += 1;
                    }
                    // The per-axis shares, in the parent's frame (they only shrink it).
                    let local = parent.orientation.inverse() * o.torque_nm;
                    let shared = parent.orientation * local.component_mul(&joint.shares);
                    if self.ankles.get(j).copied().unwrap_or(false) {
                        match self.lean_damped(joint, &s, parent, centre, shared) {
                            Some((damped, limited)) => {
                                if limited && !o.limited {
                                    out.limited += 1;
                                }
                                damped
                            }
                            // A state whose centre of mass or its velocity is not finite: the
                            // servo's torque without the lean damping, counted as refused.
                            None => {
                                out.refused += 1;
                                shared
                            }
                        }
                    } else {
                        shared
                    }
                }
                Err(_) => {
                    out.refused += 1;
                    self.damping(parent, child, joint.effort_nm)
                }
            };
            out.put(3 * j, &torque);
        }
        if self.balance.is_some() {
            let n = self.joints.len();
            let Some(balance) = &mut self.balance else {
                return out;
            };
            let bodies = s.bodies.get(..self.bodies).unwrap_or(&[]);
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
                    let last = balance.last.as_ref();
                    out.qp = Some(QpTick {
                        steps: balance.steps(),
                        swinging: balance.swinging(),
                        ..QpTick::of(status, last)
                    });
                    out.limited += last.map_or(0, |o| o.limited) as u16;
                }
                None => {
                    let mut safe = self.safe(s);
                    safe.refused += 1;
                    return safe;
                }
            }
            return out;
        }
        if let Some(spring) = &mut self.spring
            && let Ok(o) = spring.tick(&root.orientation, &root.angular_velocity_rad_s)
        {
            out.spring = Some(o.state);
            out.root_torque_nm = o.torque_nm.norm();
            let at = 3 * self.joints.len();
            out.put(at, &o.torque_nm);
        }
        out
    }

    /// The inertia of `joint`'s child subtree about the joint point and gravity's torque on it
    /// about that point, world axes (`None` if a body's state or inertia is unusable).
    fn subtree_inertia(
        &self,
        joint: &Joint,
        s: &HumanoidState,
        motion: &[Motion; MAX_BODIES],
    ) -> Option<(Matrix3<f64>, Vector3<f64>)> {
        let com = |b: usize| {
            let c = s.bodies.get(b).map_or([0.0; 3], |m| m.com_m);
            Vector3::new(c[0], c[1], c[2])
        };
        let parent = motion.get(joint.parent)?;
        let point = com(joint.parent) + parent.orientation * joint.anchor;
        let mut members = [BodyInertia {
            mass_kg: 0.0,
            principal_inertia_kgm2: Vector3::zeros(),
            orientation: UnitQuaternion::identity(),
            com_m: Vector3::zeros(),
        }; MAX_BODIES];
        let mut n = 0;
        for (slot, &b) in members.iter_mut().zip(&joint.subtree) {
            let (mass_kg, principal_inertia_kgm2) = self.inertia.get(b).copied()?;
            *slot = BodyInertia {
                mass_kg,
                principal_inertia_kgm2,
                orientation: motion.get(b)?.orientation,
                com_m: com(b),
            };
            n += 1;
        }
        let members = members.get(..n)?;
        Some((
            subtree_inertia_about(&point, members).ok()?,
            gravity_torque_about(&point, members, &self.gravity).ok()?,
        ))
    }

    /// The whole body's centre of mass and its velocity (the bodies' mass-weighted means).
    fn centre_of_mass(&self, s: &HumanoidState) -> (Vector3<f64>, Vector3<f64>) {
        let v = |a: [f64; 3]| Vector3::new(a[0], a[1], a[2]);
        let mut com = Vector3::zeros();
        let mut velocity = Vector3::zeros();
        for (b, (m, _)) in s.bodies.iter().zip(&self.inertia) {
            com += v(b.com_m) * (m / self.mass_kg);
            velocity += v(b.velocity_m_s) * (m / self.mass_kg);
        }
        (com, velocity)
    }

    /// An ankle's `torque` plus its damping of the body's lean rate
    /// ([`LEAN_DAMPING_NMS_PER_RAD`]) about the horizontal axes, limited to the joint's effort,
    /// and whether the limit cut it; `None` if the rate is not finite (a non-finite body
    /// position or velocity, or the centre of mass at the ankle); `centre` is
    /// [`DynamoController::centre_of_mass`].
    fn lean_damped(
        &self,
        joint: &Joint,
        s: &HumanoidState,
        parent: &Motion,
        (com, velocity): (Vector3<f64>, Vector3<f64>),
        torque: Vector3<f64>,
    ) -> Option<(Vector3<f64>, bool)> {
        let v = |a: [f64; 3]| Vector3::new(a[0], a[1], a[2]);
        let ankle = s
            .bodies
            .get(joint.parent)
            .map_or(com, |b| v(b.com_m) + parent.orientation * joint.anchor);
        let r = com - ankle;
        let mut rate = r.cross(&velocity) / r.norm_squared();
        // Only the tipping: no damping about the vertical (y up).
        rate.y = 0.0;
        // On the joint: + on the foot, − on the leg, which carries the body: −k_d·ω_lean on it.
        let damped = torque + rate * self.lean_damping;
        let n = damped.norm();
        if !rate.iter().all(|x| x.is_finite()) || !n.is_finite() {
            None
        } else if n > joint.effort_nm {
            Some((damped * (joint.effort_nm / n), true))
        } else {
            Some((damped, false))
        }
    }

    fn damping(&self, parent: &Motion, child: &Motion, limit: f64) -> Vector3<f64> {
        let t = -self.safe_damping * (child.angular_velocity_rad_s - parent.angular_velocity_rad_s);
        let n = t.norm();
        if !n.is_finite() {
            Vector3::zeros()
        } else if n > limit {
            t * (limit / n)
        } else {
            t
        }
    }

    /// The safe state: damping only on every joint's relative angular velocity, within its
    /// effort; no root torque.
    pub fn safe(&self, s: HumanoidState) -> DynamoTick {
        let mut out = DynamoTick::zero(&s, true, 3 * self.joints.len() + 3);
        for (j, joint) in self.joints.iter().enumerate() {
            let (Some(p), Some(c)) = (s.bodies.get(joint.parent), s.bodies.get(joint.child)) else {
                continue;
            };
            let torque = self.damping(&Self::motion(p), &Self::motion(c), joint.effort_nm);
            out.put(3 * j, &torque);
        }
        out
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
        state.fits(self.bodies)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let knee = JointRole::Limb(Side::Left, Limb::Knee);
        assert!(
            GainScope::UpperBody.scales(JointRole::Waist)
                && GainScope::UpperBody.scales(JointRole::Limb(Side::Right, Limb::Elbow))
        );
        assert!(!GainScope::UpperBody.scales(knee) && GainScope::AllJoints.scales(knee));
        assert_eq!(
            GainScope::from_name("upper_body"),
            Some(GainScope::UpperBody)
        );
        assert_eq!(GainScope::from_name("legs"), None);
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
