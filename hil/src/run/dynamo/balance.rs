//! The `qp_balance` controller of a `dynamo_push` scenario: [`control_core::balance`] (Abe, da
//! Silva and Popović's multiobjective QP with friction cones) on the 15-body humanoid.
//!
//! The humanoid's description (`robot_model::humanoid::HumanoidModel`, the one the plant is built
//! from) becomes a floating-base [`Tree`] through `robot_model::humanoid::HumanoidTree`: the root
//! (pelvis) is the base, its frame at its centre of mass; each body's frame sits at its joint. A ball joint is three revolute joints
//! (Euler angles, two massless frames between), its middle axis the one with the smallest
//! range (the farthest from gimbal lock in use: the hips' and shoulders' middle axes are
//! their twist); a two-axis joint (the ankles) is its two free axes with the locked one
//! between them, whose angle the plant keeps near zero (the largest seen is reported); a hinge
//! is one joint. Each is one [`JointGroup`] with the joint's effort, so the QP bounds the norm
//! of the torque vector the plant checks. The feet stand on the four bottom corners of their
//! sole box and the toes on the two front corners of theirs; every corner of a body touches
//! while the plant measured a normal force on the body at the last step (or, the contact hold,
//! within [`CONTACT_HOLD_TICKS`] ticks before it), so the QP holds each
//! planted foot flat with at least the minimum normal force on every corner (the slides'
//! contact stabilisation: it keeps the centre of pressure inside the sole, away from its
//! edges). Planting only the corners within 5 mm of the ground instead, which leaves a foot
//! free to roll onto its front edge, measured worse (12 N·s survived against 24 with the
//! library's default gains, judged by tilt alone).
//!
//! Each tick maps the plant's body motions to the tree's coordinates (relative rotations to
//! Euler angles, relative angular velocities to their rates), the pose targets (the same
//! standing pose, lean and timed reach as the Dynamo laws) likewise, and sends every group's
//! torque vector. Never on the real-time path: allocation (every buffer is sized when the
//! controller is built), blocking, panics.

use control_core::articulated::nalgebra::{Quaternion, UnitQuaternion, Vector3};
use control_core::balance::contact::ContactHold;
use control_core::balance::step::{FootState, StepCommand, StepSettings, Stepper, hold_legs};
use control_core::balance::{
    Balance, BalanceInput, BalanceOutput, BalanceSettings, BalanceStatus, ContactBody, JointGroup,
    MAX_POINTS, PointTask,
};
use control_core::frames::BodyMotion;
use control_core::tree::{BaseKind, Inertial, JointSpec, Tree, TreeKinematics, TreeSpec};
use robot_model::humanoid::{HumanoidModel, HumanoidTree};

/// Velocity capacity (the humanoid has 34: 6 + 6 balls × 3 + 2 ankles × 2 + 6 hinges).
pub const NV: usize = 36;
/// QP variables (the humanoid: 34 + 12 points × 3 + 8 auxiliaries = 78).
pub const NX: usize = 80;
/// QP rows (the humanoid: 6 + 4 × 6 + 12 × 4 + 6 × 2 + 8 × 6 = 138).
pub const NR: usize = 144;

type Qp = Balance<NV, NX, NR>;

/// The centre of mass's horizontal spring `k_c`, 1/s² (the library's default is 60). With the
/// plant's 70.4 kg humanoid, 200 Hz, `balance_push.toml` on its feet (measured before the
/// contact hold, [`CONTACT_HOLD_TICKS`]): 120, 150 and 180 survive 22, 24 and 22 N·s (60: 18).
pub const COM_KP: f64 = 150.0;

/// The smallest normal force per sole corner, N (the library's default is 5). On its feet,
/// before the contact hold, 10, 15 and 20 N survived 22, 24 and 16 N·s (20 N: many ticks
/// infeasible; 5 N: 18 N·s).
pub const MIN_NORMAL_N: f64 = 15.0;

/// The weight of the angular-momentum damping objective (the library's default is 1), unless a
/// scenario's `[qp_balance] momentum_weight` says. On `balance_push.toml`'s pushes on its feet,
/// before the contact hold (2 N·s steps, and 20–30 N·s in 1 N·s steps) 25, 30 and 35 survive
/// every push up to 26/26, 26/26
/// and 24/25 N·s, against 22/23 at 1; 20 and 40 fall at 23 and 24 N·s; with 20 and more a tick
/// takes about 4 iterations instead of 8.
pub const MOMENTUM_WEIGHT: f64 = 30.0;

/// A contact body is planted while the plant measured more than this normal force on it, N.
pub const PLANTED_N: f64 = 1.0;

/// Ticks a contact body stays planted after the plant last measured a normal force on it
/// (`[qp_balance] contact_hold_ticks`, [`ContactHold`]). The measurement is a step old: with
/// none, a foot the plant saw unloaded for one step left the QP's planted set at once, the
/// torques that held it changed, and after a push the feet could take turns, tick by tick, each
/// unloading the other (on `balance_push.toml` at 16 N·s, 0.4 s of it walked both feet 8 cm
/// forward and splayed the toes). One tick of hold ends that: the feet stay within 2 cm up to
/// 18 N·s.
pub const CONTACT_HOLD_TICKS: u32 = 1;

/// Largest `[qp_balance] contact_hold_ticks` accepted.
pub const MAX_CONTACT_HOLD_TICKS: u32 = 1000;

/// `[qp_balance] contact_hold_ticks`'s default, for both push kinds' schemas.
pub fn default_contact_hold_ticks() -> u32 {
    CONTACT_HOLD_TICKS
}

/// Why both push kinds refuse `[qp_balance] contact_hold_ticks = ticks`, if they do.
pub fn contact_hold_refusal(ticks: u32) -> Option<String> {
    (ticks > MAX_CONTACT_HOLD_TICKS)
        .then(|| format!("{ticks}: not in [0, {MAX_CONTACT_HOLD_TICKS}]"))
}

/// Every how many `qp_balance` ticks [`QpLog`] records one, unless `--record-qp-every` says.
pub const RECORD_EVERY: u64 = 10;

/// `hil run --record-qp FILE`: the QPs of `qp_balance` ticks as JSON lines, one every
/// [`RECORD_EVERY`] ticks of each run (or every `--record-qp-every N`) (lockstep only: it allocates and writes a file). Each line:
/// `run`, `tick`, `time_s`, `n`, `m`, `cones` (`[zero, nonneg, soc3]`), `accelerations` and
/// `forces` (how many of the first variables are which), `p` (the upper triangle as
/// `[row, column, value]`), `q`, `a` (its non-zeros as `[row, column, value]`), `b`, `status`,
/// `iterations`, `x` (the solver's answer) and `objective` (½xᵀPx + qᵀx).
#[derive(Debug, Clone)]
pub struct QpLog {
    file: std::sync::Arc<std::sync::Mutex<QpLogFile>>,
    run: String,
    ticks: u64,
    every: u64,
}

/// The file behind a [`QpLog`], shared by every run of a scenario.
#[derive(Debug)]
pub struct QpLogFile {
    path: std::path::PathBuf,
    writer: std::io::BufWriter<std::fs::File>,
    /// Lines written.
    pub lines: u64,
    /// The first write error, if any (nothing is written after it).
    pub error: Option<String>,
}

impl QpLogFile {
    /// Creates (or truncates) `path`.
    pub fn create(
        path: &std::path::Path,
    ) -> Result<std::sync::Arc<std::sync::Mutex<Self>>, String> {
        let file = std::fs::File::create(path)
            .map_err(|e| format!("--record-qp {}: {e}", path.display()))?;
        Ok(std::sync::Arc::new(std::sync::Mutex::new(Self {
            path: path.to_owned(),
            writer: std::io::BufWriter::new(file),
            lines: 0,
            error: None,
        })))
    }

    /// Flushes; the first error of the whole recording, naming the file.
    pub fn finish(&mut self) -> Result<u64, String> {
        use std::io::Write;
        if self.error.is_none()
            && let Err(e) = self.writer.flush()
        {
            self.error = Some(e.to_string());
        }
        match &self.error {
            Some(e) => Err(format!("--record-qp {}: {e}", self.path.display())),
            None => Ok(self.lines),
        }
    }
}

impl QpLog {
    /// A log of the run named `run` into `file`, one tick in `every` (at least 1).
    pub fn new(
        file: &std::sync::Arc<std::sync::Mutex<QpLogFile>>,
        run: String,
        every: u64,
    ) -> Self {
        Self {
            file: file.clone(),
            run,
            ticks: 0,
            every: every.max(1),
        }
    }

    fn record(&mut self, qp: &Qp, out: &BalanceOutput<NV>) {
        use std::io::Write;
        let tick = self.ticks;
        self.ticks += 1;
        if !tick.is_multiple_of(self.every) {
            return;
        }
        let Some((problem, dims, x)) = qp.last_qp() else {
            return;
        };
        let (n, m) = (dims.variables, dims.rows);
        let mut p = Vec::new();
        for i in 0..n {
            for j in i..n {
                let v = problem.p[i * n + j];
                if v != 0.0 {
                    p.push((i, j, v));
                }
            }
        }
        let mut a = Vec::new();
        for i in 0..m {
            for j in 0..n {
                let v = problem.a[i * n + j];
                if v != 0.0 {
                    a.push((i, j, v));
                }
            }
        }
        let mut objective = 0.0;
        for i in 0..n {
            let px: f64 = (0..n).map(|j| problem.p[i * n + j] * x[j]).sum();
            objective += x[i] * (0.5 * px + problem.q[i]);
        }
        let line = serde_json::json!({
            "run": self.run,
            "tick": tick,
            "n": n,
            "m": m,
            "cones": [dims.cones.zero, dims.cones.nonneg, dims.cones.soc3],
            "accelerations": dims.accelerations,
            "forces": dims.forces,
            "p": p,
            "q": problem.q,
            "a": a,
            "b": problem.b,
            "status": format!("{:?}", out.status),
            "iterations": out.qp.map_or(0, |i| i.iterations),
            "x": x,
            "objective": objective,
        });
        let Ok(mut file) = self.file.lock() else {
            return;
        };
        if file.error.is_some() {
            return;
        }
        let written = serde_json::to_writer(&mut file.writer, &line)
            .map_err(|e| e.to_string())
            .and_then(|()| file.writer.write_all(b"\n").map_err(|e| e.to_string()));
        match written {
            Ok(()) => file.lines += 1,
            Err(e) => file.error = Some(e),
        }
    }
}

/// A hand reaching for a point while the body balances ([`super::HandSpec`], resolved on the
/// model): a [`PointTask`] on the hand's point whose target moves along a smooth path from
/// where the hand was at `start_s` to the final target at `arrive_s`, then stays.
#[derive(Debug, Clone, Copy)]
pub struct HandReach {
    /// The plant body the point is on, and the point from its centre of mass (body axes).
    body: usize,
    from_com: [f64; 3],
    /// The tree body and the point in its frame (the link's frame).
    tree_body: usize,
    point: [f64; 3],
    /// The plant body below `from_joint` and that joint's point from its centre of mass.
    shoulder_body: usize,
    shoulder_from_com: [f64; 3],
    /// `fraction` × the arm's length along the unit horizontal direction, m.
    reach: [f64; 3],
    start_s: f64,
    arrive_s: f64,
    /// Set at the first tick at or after `start_s`: the hand's start and the final target.
    path: Option<([f64; 3], [f64; 3])>,
}

impl HandReach {
    /// The final target, once the reach has started.
    pub fn target(&self) -> Option<[f64; 3]> {
        self.path.map(|(_, t)| t)
    }
}

/// `body`'s point `from_com` (body axes, from its centre of mass) in the world.
fn world_point(b: &BodyMotion, from_com: [f64; 3]) -> Option<Vector3<f64>> {
    let [w, x, y, z] = b.orientation;
    let q = Quaternion::new(w, x, y, z);
    if !(q.norm() > 0.5 && q.coords.iter().all(|c| c.is_finite())) {
        return None;
    }
    Some(Vector3::from(b.com_m) + UnitQuaternion::from_quaternion(q) * Vector3::from(from_com))
}

/// What the controller was built from: enough to build it again (a clone is a fresh controller
/// in the same configuration, without the warm start).
#[derive(Debug, Clone)]
struct Recipe {
    joints: Vec<JointSpec>,
    base: Inertial,
    contacts: Vec<ContactBody>,
    groups: Vec<JointGroup>,
    settings: BalanceSettings,
}

/// The humanoid's balance controller: the tree, the map from the plant's bodies to it, and the
/// QP controller (boxed: about 0.7 MB).
pub struct HumanoidBalance {
    recipe: Recipe,
    qp: Box<Qp>,
    shape: HumanoidTree,
    gravity: Vector3<f64>,
    com_height_m: f64,
    /// The largest locked-axis angle of a two-axis joint seen, rad.
    pub largest_locked_angle_rad: f64,
    /// The last tick's output.
    pub last: Option<BalanceOutput<NV>>,
    /// `--record-qp`: where the ticks' QPs go (none: not recorded).
    pub log: Option<QpLog>,
    /// The hand's reach (none: no hand task).
    pub hand: Option<HandReach>,
    /// The recovery step (none: `[qp_balance] step = false`).
    stepper: Option<Stepper>,
    /// The step's kinematics, kept from tick to tick (filled in place, not built anew).
    step_kin: Box<TreeKinematics<NV>>,
    /// The last tick's step command.
    last_step: Option<StepCommand>,
    /// Once a step has landed, the legs' coordinates there: their pose targets from then on.
    legs_held: Option<[f64; NV]>,
    /// The plant's bodies' masses, kg (the centre of mass's velocity for the step).
    masses: Vec<f64>,
    /// The planted feet and toes, held [`CONTACT_HOLD_TICKS`] (or the scenario's) ticks after
    /// their last load.
    contacts: ContactHold<4>,
}

impl std::fmt::Debug for HumanoidBalance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HumanoidBalance")
            .field("joints", &self.shape.groups.len())
            .field("settings", &self.recipe.settings)
            .finish_non_exhaustive()
    }
}

impl Clone for HumanoidBalance {
    fn clone(&self) -> Self {
        // The recipe was accepted once: building it again cannot fail.
        let qp = build(&self.recipe).unwrap_or_else(|_| unreachable!("a built recipe builds"));
        Self {
            recipe: self.recipe.clone(),
            qp,
            shape: self.shape.clone(),
            gravity: self.gravity,
            com_height_m: self.com_height_m,
            largest_locked_angle_rad: self.largest_locked_angle_rad,
            last: None,
            log: self.log.clone(),
            hand: self.hand,
            stepper: self.stepper.and_then(|st| Stepper::new(*st.settings())),
            step_kin: Box::default(),
            legs_held: None,
            last_step: None,
            masses: self.masses.clone(),
            contacts: ContactHold::new(self.contacts.hold_ticks()),
        }
    }
}

/// Builds the QP controller on a thread with a large stack: the value is about 0.7 MB and is
/// moved into its box (a debug build keeps it on the stack on the way).
fn build(recipe: &Recipe) -> Result<Box<Qp>, String> {
    let recipe = recipe.clone();
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || -> Result<Box<Qp>, String> {
            let tree = Tree::<NV>::new(&TreeSpec {
                base: BaseKind::Floating,
                base_body: recipe.base,
                joints: &recipe.joints,
            })
            .map_err(|e| e.to_string())?;
            Ok(Box::new(
                Qp::new(tree, &recipe.contacts, &recipe.groups, recipe.settings)
                    .map_err(|e| e.to_string())?,
            ))
        })
        .map_err(|e| format!("balance controller: cannot start its builder thread: {e}"))?
        .join()
        .map_err(|_| "balance controller: its builder thread panicked".to_string())?
}

impl HumanoidBalance {
    /// The controller for `model` under `gravity_m_s2`, its pose gains scaled by `gain_scale`
    /// (stiffness × s, damping × √s), with a scenario's `[qp_balance]` settings (`None`: the
    /// defaults).
    pub fn new(
        model: &HumanoidModel,
        gravity_m_s2: [f64; 3],
        gain_scale: f64,
        qp: Option<super::QpBalanceSpec>,
    ) -> Result<Self, String> {
        let shape = HumanoidTree::new(model, &|_| true)?;
        let joints = shape.joints.clone();
        let groups = shape.groups.clone();
        // Contact points: the sole box's bottom corners (the toes: the two in front).
        let contacts = shape.contact_bodies(model)?;
        // The target height: the zero pose's centre of mass above its soles.
        let base = shape.base;
        let tree = Tree::<NV>::new(&shape.spec()).map_err(|e| e.to_string())?;
        let gravity = Vector3::from(gravity_m_s2);
        let up = -gravity.normalize();
        let com_height_m = HumanoidTree::standing_height(&tree, &contacts, &up)?;
        // The pendulum's rate ω = √(g / h) sets the centre of mass's damping: with
        // k_d = ω + k_p / ω the spring drives the capture point ξ = x + ẋ / ω straight at its
        // target (ξ̇ = −(k_p / ω)(ξ − x_d)), without the overshoot that carries it past the toes.
        let omega = (gravity.norm() / com_height_m).sqrt();
        if !omega.is_finite() {
            return Err(format!(
                "the centre of mass is {com_height_m} m above the soles"
            ));
        }
        let s = BalanceSettings::DEFAULT;
        let settings = BalanceSettings {
            // Below the plant's 0.8: a margin for the plant's contact model.
            friction: 0.7,
            min_normal_n: MIN_NORMAL_N,
            com_kp: COM_KP,
            com_kd: omega + COM_KP / omega,
            pose_kp: s.pose_kp * gain_scale,
            pose_kd: s.pose_kd * gain_scale.sqrt(),
            upright_kp: s.upright_kp * gain_scale,
            upright_kd: s.upright_kd * gain_scale.sqrt(),
            com_weight: qp.map_or(s.com_weight, |q| q.com_weight),
            screen_fraction: qp.map_or(s.screen_fraction, |q| q.screen_fraction),
            momentum_weight: qp.map_or(MOMENTUM_WEIGHT, |q| q.momentum_weight),
            qp: control_core::qp::Settings {
                range_space: qp.map_or(s.qp.range_space, |q| q.range_space),
                ..s.qp
            },
            ..s
        };
        let recipe = Recipe {
            joints,
            base,
            contacts,
            groups,
            settings,
        };
        let step = qp.is_none_or(|q| q.step);
        let spec = qp;
        let qp = build(&recipe)?;
        Ok(Self {
            recipe,
            qp,
            shape,
            gravity,
            com_height_m,
            largest_locked_angle_rad: 0.0,
            last: None,
            log: None,
            hand: None,
            stepper: if step {
                Stepper::new(StepSettings::DEFAULT)
            } else {
                None
            },
            step_kin: Box::default(),
            legs_held: None,
            last_step: None,
            masses: model.bodies.iter().map(|b| b.mass_kg).collect(),
            contacts: ContactHold::new(spec.map_or(CONTACT_HOLD_TICKS, |q| q.contact_hold_ticks)),
        })
    }

    /// Reach with a hand as `spec` says, on `model` (the one this controller was built from).
    pub fn reach_with_hand(
        &mut self,
        spec: &super::HandSpec,
        model: &HumanoidModel,
    ) -> Result<(), String> {
        let body = model
            .body_index(&spec.link)
            .ok_or_else(|| format!("hand.link: `{}` is no link", spec.link))?;
        let from = model
            .joint_index(&spec.from_joint)
            .ok_or_else(|| format!("hand.from_joint: `{}` is no joint", spec.from_joint))?;
        let length = spec.arm_length_m(model).ok_or_else(|| {
            format!(
                "hand.from_joint: `{}` is not above the hand",
                spec.from_joint
            )
        })?;
        let com = model.bodies[body].com_in_link_m;
        let shoulder = &model.joints[from];
        let d = Vector3::new(spec.direction[0], 0.0, spec.direction[2]).normalize();
        self.hand = Some(HandReach {
            body,
            from_com: [
                spec.point_m[0] - com[0],
                spec.point_m[1] - com[1],
                spec.point_m[2] - com[2],
            ],
            tree_body: *self
                .shape
                .tree_body
                .get(body)
                .ok_or("hand.link: past the tree")?,
            point: spec.point_m,
            shoulder_body: shoulder.child,
            shoulder_from_com: shoulder.anchor_in_child_m,
            reach: (d * spec.fraction * length).into(),
            start_s: spec.start_s,
            arrive_s: spec.arrive_s,
            path: None,
        });
        Ok(())
    }

    /// The hand's distance from its final target now, m (`None` before the reach starts or
    /// without a hand).
    pub fn hand_error_m(&self, bodies: &[BodyMotion]) -> Option<f64> {
        let h = self.hand.as_ref()?;
        let target = h.target()?;
        let now = world_point(bodies.get(h.body)?, h.from_com)?;
        Some((now - Vector3::from(target)).norm())
    }

    /// Recovery steps started so far and the longest of them, m.
    pub fn steps(&self) -> (u32, f64) {
        self.stepper.as_ref().map_or((0, 0.0), Stepper::steps)
    }

    /// Whether a foot was in the air, stepping, at the last tick.
    pub fn swinging(&self) -> bool {
        matches!(self.last_step, Some(StepCommand::Swing { .. }))
    }

    /// The recovery step's tick ([`Stepper::tick`]): the centre of mass from the plant's
    /// bodies, the feet (contact bodies 0 and 1, each with its toes, 2 and 3) from the tree at
    /// `base`, `q`. `None` if the state cannot be mapped.
    fn step_tick(
        &mut self,
        time_s: f64,
        bodies: &[BodyMotion],
        base: &control_core::articulated::nalgebra::Isometry3<f64>,
        q: &[f64; NV],
        contact_normal_n: &[f64; 4],
    ) -> Option<StepCommand> {
        let (mut mass, mut com, mut velocity) = (0.0, Vector3::zeros(), Vector3::zeros());
        for (b, m) in bodies.iter().zip(&self.masses) {
            mass += m;
            com += Vector3::from(b.com_m) * *m;
            velocity += Vector3::from(b.velocity_m_s) * *m;
        }
        let (com, velocity) = (com / mass, velocity / mass);
        let omega = (self.gravity.norm() / self.com_height_m).sqrt();
        let up = -self.gravity.normalize();
        self.qp
            .tree()
            .kinematics_into(&mut self.step_kin, base, q)
            .ok()?;
        let kin = &self.step_kin;
        // Per foot: its sole's corners and its toes' (world).
        let mut world = [[[0.0; 3]; 2 * MAX_POINTS]; 2];
        let mut counts = [0usize; 2];
        for (k, (w, n)) in world.iter_mut().zip(&mut counts).enumerate() {
            for c in [k, k + 2] {
                let cb = self.recipe.contacts.get(c)?;
                let pose = kin.body_pose(cb.body)?;
                for p in cb.points.iter().take(cb.count) {
                    let at = pose * control_core::articulated::nalgebra::Point3::from(*p);
                    *w.get_mut(*n)? = at.coords.into();
                    *n += 1;
                }
            }
        }
        let foot = |k: usize| -> Option<FootState<'_>> {
            let cb = self.recipe.contacts.get(k)?;
            let w = world.get(k)?;
            Some(FootState {
                body: cb.body,
                sole: cb.points.get(..cb.count)?,
                corners_world: w.get(..*counts.get(k)?)?,
                sole_world: [*w.first()?, *w.get(1)?, *w.get(2)?],
                loaded: *contact_normal_n.get(k)? > PLANTED_N,
                load_n: *contact_normal_n.get(k)?,
            })
        };
        let feet = [foot(0)?, foot(1)?];
        let stepper = self.stepper.as_mut()?;
        Some(stepper.tick(time_s, &com, &velocity, omega, &up, &feet))
    }

    /// One tick: the bodies' motions `bodies`, each joint's target rotation relative to its
    /// parent `targets` (joint order), the ground's normal force on the contact bodies
    /// `contact_normal_n` (feet, toes); writes each joint's torque vector (world) into
    /// `torques` (3 per joint, joint order). `None` if the state cannot be mapped (a
    /// non-finite motion, an Euler singularity): the caller sends its safe state.
    pub fn tick(
        &mut self,
        time_s: f64,
        bodies: &[BodyMotion],
        targets: &[UnitQuaternion<f64>],
        contact_normal_n: &[f64; 4],
        torques: &mut [f64],
    ) -> Option<BalanceStatus> {
        // The hand's task: none before its start; then the point along its path.
        let mut task = [PointTask::on(0); 4];
        let mut tasks = 0;
        if let Some(h) = self.hand.as_mut()
            && time_s >= h.start_s
        {
            if h.path.is_none() {
                let start = world_point(bodies.get(h.body)?, h.from_com)?;
                let shoulder = world_point(bodies.get(h.shoulder_body)?, h.shoulder_from_com)?;
                h.path = Some((start.into(), (shoulder + Vector3::from(h.reach)).into()));
            }
            if let Some((start, end)) = h.path {
                // A smoothstep from start to end: position, velocity, acceleration.
                let span = h.arrive_s - h.start_s;
                let u = ((time_s - h.start_s) / span).clamp(0.0, 1.0);
                let moving = u < 1.0;
                let (s, ds, dds) = (
                    u * u * (3.0 - 2.0 * u),
                    if moving {
                        6.0 * u * (1.0 - u) / span
                    } else {
                        0.0
                    },
                    if moving {
                        (6.0 - 12.0 * u) / (span * span)
                    } else {
                        0.0
                    },
                );
                let way = Vector3::from(end) - Vector3::from(start);
                task[0] = PointTask {
                    body: h.tree_body,
                    point: h.point,
                    target: (Vector3::from(start) + way * s).into(),
                    target_velocity: (way * ds).into(),
                    target_acceleration: (way * dds).into(),
                };
                tasks = 1;
            }
        }
        let mut q = [0.0; NV];
        let mut v = [0.0; NV];
        let mut q_target = [0.0; NV];
        let (base, locked) = self.shape.state(bodies, &mut q, &mut v)?;
        self.largest_locked_angle_rad = self.largest_locked_angle_rad.max(locked);
        for j in 0..self.shape.groups.len() {
            let target = targets
                .get(j)
                .copied()
                .unwrap_or_else(UnitQuaternion::identity);
            self.shape.pose_coordinates(j, &target, &mut q_target)?;
        }
        let root_rotation = base.rotation;
        // Upright, heading kept: the root's forward axis turned about the vertical only.
        let up = -self.gravity.normalize();
        let forward = root_rotation * Vector3::x();
        let flat = forward - up * up.dot(&forward);
        let upright = if flat.norm() > 1e-6 {
            UnitQuaternion::rotation_between(&Vector3::x(), &flat.normalize())
                .unwrap_or_else(UnitQuaternion::identity)
        } else {
            UnitQuaternion::identity()
        };
        let mut planted = [[false; MAX_POINTS]; 4];
        let held = self
            .contacts
            .tick(contact_normal_n.iter().map(|f| *f > PLANTED_N));
        for (touch, held) in planted.iter_mut().zip(held) {
            *touch = [held; MAX_POINTS];
        }
        if self.stepper.is_some() {
            let command = self.step_tick(time_s, bodies, &base, &q, contact_normal_n)?;
            self.last_step = Some(command);
            if let Some(foot) = command.swing_foot() {
                // The foot and its toes are in the air, whatever brushes the ground.
                for k in [foot, foot + 2] {
                    if let Some(p) = planted.get_mut(k) {
                        *p = [false; MAX_POINTS];
                    }
                }
            }
            if command.landed_now() {
                self.legs_held = Some(q);
            }
            for t in command.tasks() {
                *task.get_mut(tasks)? = *t;
                tasks += 1;
            }
        }
        if let Some(held) = self.legs_held {
            // The feet's legs (the toes' joints keep the standing pose's targets).
            let feet = self.recipe.contacts.iter().take(2).map(|c| c.body);
            hold_legs(self.qp.tree(), feet, &held, &mut q_target);
        }
        let out = self.qp.tick(&BalanceInput {
            base_pose: &base,
            q: &q,
            v: &v,
            q_target: &q_target,
            upright_target: &upright,
            com_height_m: self.com_height_m,
            planted: &planted,
            gravity: self.gravity,
            tasks: task.get(..tasks).unwrap_or(&[]),
        });
        for (j, slot) in torques
            .chunks_exact_mut(3)
            .take(self.shape.groups.len())
            .enumerate()
        {
            slot.copy_from_slice(&out.group_torques[j]);
        }
        if let Some(log) = self.log.as_mut() {
            log.record(&self.qp, &out);
        }
        let status = out.status;
        self.last = Some(out);
        Some(status)
    }
}
