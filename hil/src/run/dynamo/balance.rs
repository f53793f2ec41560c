//! The `qp_balance` controller of a `dynamo_push` scenario: the library's
//! [`control_core::balance::humanoid::HumanoidBalance`] (Abe, da Silva and Popović's
//! multiobjective QP with friction cones, with the contact hold, the recovery step and the
//! hand's reach) on the 15-body humanoid, with this project's tuning of it, and `--record-qp`.
//!
//! The humanoid's description (`robot_model::humanoid::HumanoidModel`, the one the plant is built
//! from) becomes a floating-base [`Tree`] and the map from the plant's bodies to its
//! coordinates through `robot_model::humanoid::HumanoidTree`: the root (pelvis) is the base, its
//! frame at its centre of mass; each body's frame sits at its joint. A ball joint is three
//! revolute joints (Euler angles, two massless frames between), its middle axis the one with the
//! smallest range (the farthest from gimbal lock in use: the hips' and shoulders' middle axes
//! are their twist); a two-axis joint (the ankles) is its two free axes with the locked one
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
//! Never on the real-time path: allocation (every buffer is sized when the controller is
//! built), blocking, panics. Recording the QPs (`--record-qp`, lockstep only) writes a file.

use control_core::articulated::nalgebra::{UnitQuaternion, Vector3};
use control_core::balance::humanoid::{BodyMap, HandReach, HumanoidBalanceSpec};
use control_core::balance::step::{StepSettings, Stepper};
use control_core::balance::{
    Balance, BalanceOutput, BalanceSettings, BalanceStatus, ContactBody, JointGroup,
};
use control_core::frames::{BodyMotion, MAX_BODIES};
use control_core::tree::{BaseKind, Inertial, JointSpec, Tree, TreeSpec};
use robot_model::humanoid::{HumanoidModel, HumanoidTree};

/// Velocity capacity (the humanoid has 34: 6 + 6 balls × 3 + 2 ankles × 2 + 6 hinges).
pub const NV: usize = 36;
/// QP variables (the humanoid: 34 + 12 points × 3 + 8 auxiliaries = 78).
pub const NX: usize = 80;
/// QP rows (the humanoid: 6 + 4 × 6 + 12 × 4 + 6 × 2 + 8 × 6 = 138).
pub const NR: usize = 144;

type Qp = Balance<NV, NX, NR>;
type Core = control_core::balance::humanoid::HumanoidBalance<NV, NX, NR>;

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

/// Ticks a contact body stays planted after the plant last measured a normal force on it
/// (`[qp_balance] contact_hold_ticks`, [`control_core::balance::contact::ContactHold`]). The
/// measurement is a step old: with none, a foot the plant saw unloaded for one step left the QP's planted set at once, the
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

/// What the controller was built from: enough to build it again (a clone is a fresh controller
/// in the same configuration, without the warm start).
#[derive(Debug, Clone)]
struct Recipe {
    joints: Vec<JointSpec>,
    base: Inertial,
    contacts: [ContactBody; 4],
    groups: Vec<JointGroup>,
    settings: BalanceSettings,
    map: BodyMap<MAX_BODIES>,
    masses: Vec<f64>,
    gravity: Vector3<f64>,
    com_height_m: f64,
    /// Whether it steps to recover (`[qp_balance] step`).
    step: bool,
    contact_hold_ticks: u32,
}

/// The humanoid's balance controller ([`control_core::balance::humanoid::HumanoidBalance`],
/// boxed: about 0.7 MB) as a scenario builds it, and the scenario's QP recording.
pub struct HumanoidBalance {
    recipe: Recipe,
    core: Box<Core>,
    /// Plant body → tree body (`usize::MAX`: left out), for the hand's task.
    tree_body: Vec<usize>,
    /// `--record-qp`: where the ticks' QPs go (none: not recorded).
    pub log: Option<QpLog>,
}

impl std::fmt::Debug for HumanoidBalance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.core.fmt(f)
    }
}

impl Clone for HumanoidBalance {
    fn clone(&self) -> Self {
        // The recipe was accepted once: building it again cannot fail.
        let mut core =
            build(&self.recipe).unwrap_or_else(|_| unreachable!("a built recipe builds"));
        core.hand = self.core.hand;
        core.largest_locked_angle_rad = self.core.largest_locked_angle_rad;
        Self {
            recipe: self.recipe.clone(),
            core,
            tree_body: self.tree_body.clone(),
            log: self.log.clone(),
        }
    }
}

/// Builds the controller on a thread with a large stack: the value is about 0.7 MB and is
/// moved into its box (a debug build keeps it on the stack on the way).
fn build(recipe: &Recipe) -> Result<Box<Core>, String> {
    let recipe = recipe.clone();
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || -> Result<Box<Core>, String> {
            let tree = Tree::<NV>::new(&TreeSpec {
                base: BaseKind::Floating,
                base_body: recipe.base,
                joints: &recipe.joints,
            })
            .map_err(|e| e.to_string())?;
            let qp = Qp::new(tree, &recipe.contacts, &recipe.groups, recipe.settings)
                .map_err(|e| e.to_string())?;
            let spec = HumanoidBalanceSpec {
                map: recipe.map.clone(),
                contacts: recipe.contacts,
                masses: &recipe.masses,
                gravity: recipe.gravity,
                com_height_m: recipe.com_height_m,
                stepper: if recipe.step {
                    Stepper::new(StepSettings::DEFAULT)
                } else {
                    None
                },
                contact_hold_ticks: recipe.contact_hold_ticks,
            };
            Ok(Box::new(Core::new(qp, spec).ok_or_else(|| {
                format!(
                    "{} bodies: the balance controller holds at most {MAX_BODIES}",
                    recipe.masses.len()
                )
            })?))
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
        let contacts: [ContactBody; 4] = contacts.try_into().map_err(|c: Vec<ContactBody>| {
            format!(
                "{} soles: the humanoid stands on four (two feet, two toes)",
                c.len()
            )
        })?;
        let recipe = Recipe {
            joints,
            base,
            contacts,
            groups,
            settings,
            map: shape.map.clone(),
            masses: model.bodies.iter().map(|b| b.mass_kg).collect(),
            gravity,
            com_height_m,
            step: qp.is_none_or(|q| q.step),
            contact_hold_ticks: qp.map_or(CONTACT_HOLD_TICKS, |q| q.contact_hold_ticks),
        };
        let core = build(&recipe)?;
        Ok(Self {
            recipe,
            core,
            tree_body: shape.tree_body,
            log: None,
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
        self.core.hand = Some(HandReach {
            body,
            from_com: [
                spec.point_m[0] - com[0],
                spec.point_m[1] - com[1],
                spec.point_m[2] - com[2],
            ],
            tree_body: *self.tree_body.get(body).ok_or("hand.link: past the tree")?,
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
        self.core.hand_error_m(bodies)
    }

    /// Recovery steps started so far and the longest of them, m.
    pub fn steps(&self) -> (u32, f64) {
        self.core.steps()
    }

    /// Whether a foot was in the air, stepping, at the last tick.
    pub fn swinging(&self) -> bool {
        self.core.swinging()
    }

    /// The last tick's output.
    pub fn last(&self) -> Option<&BalanceOutput<NV>> {
        self.core.last.as_ref()
    }

    /// One tick ([`control_core::balance::humanoid::HumanoidBalance::tick`]), its QP recorded
    /// when `--record-qp` asks.
    pub fn tick(
        &mut self,
        time_s: f64,
        bodies: &[BodyMotion],
        targets: &[UnitQuaternion<f64>],
        contact_normal_n: &[f64; 4],
        torques: &mut [f64],
    ) -> Option<BalanceStatus> {
        let status = self
            .core
            .tick(time_s, bodies, targets, contact_normal_n, torques)?;
        if let (Some(log), Some(out)) = (self.log.as_mut(), self.core.last.as_ref()) {
            log.record(self.core.balance(), out);
        }
        Some(status)
    }
}
