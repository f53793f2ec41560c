//! The walker's ground-contact stabiliser on the 15-body humanoid:
//! [`control_core::contact_stabiliser`] wired to the plant's bodies, with the paper's reduced
//! models.
//!
//! Each tick the stance side's model (a [`HumanoidTree`] of the bodies the reduced model keeps,
//! the removed parts' weights as [`Load`]s at their centres of mass on the bodies they hang
//! from) predicts the stance foot's ground reaction under the walker's torques, with the stance
//! foot (and its toes while they carry more than [`PLANTED_N`]) held still, and with the other
//! foot held too while it is on the ground and the model has it. The supplement found is added
//! to the stance ankle's and knee's torque vectors. Reduced models (Carensac et al., 5.1):
//! - **M0**: the whole character;
//! - **M3**: everything above the pelvis removed (the pelvis and both legs kept);
//! - **M5**: the arms, the head and the swing leg removed (pelvis, torso and stance leg kept).
//!
//! Allocation happens in [`StanceStabiliser::new`] only; a tick never allocates, blocks or
//! panics (every buffer is sized there).

use control_core::articulated::nalgebra::Vector3;
use control_core::balance::PLANTED_N;
use control_core::contact_stabiliser::{
    ContactStabiliser, JointTorque, Load, MAX_LOADS, MAX_LOCKED, SampleAxis, Sole, StabiliserInput,
    StabiliserOutput, StabiliserSettings,
};
use control_core::simbicon3d::{BipRoles, MAX_WALK_JOINTS};
use control_core::tree::{BaseKind, Tree, TreeSpec};
use robot_model::humanoid::{HumanoidModel, JointKind};

use crate::run::dynamo::balance::NV;
use crate::run::dynamo::controller::HumanoidState;
use robot_model::humanoid::{HumanoidTree, soles};

/// A hinge or two-axis coordinate this close to a limit (or past it) is held at it for the
/// prediction, rad: the plant's limit holds it, the tree alone would let it through (the
/// stance knee straight at 0 is the common case).
pub const LIMIT_MARGIN_RAD: f64 = 0.01;

/// The largest supplement about each sampled axis, as a fraction of its joint's effort.
pub const SUPPLEMENT_SHARE: f64 = 0.25;

/// The paper's reduced models that this runtime builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReducedModel {
    /// The whole character.
    M0,
    /// Everything above the pelvis removed.
    M3,
    /// The arms, the head and the swing leg removed.
    M5,
}

impl ReducedModel {
    /// Its name in reports.
    pub const fn name(self) -> &'static str {
        match self {
            Self::M0 => "M0",
            Self::M3 => "M3",
            Self::M5 => "M5",
        }
    }
}

/// Velocity capacity of M3's tree (the pelvis and two legs of ball hips, hinge knees,
/// two-axis ankles and hinge toes: 6 + 2 × 7).
pub const NV_M3: usize = 20;
/// Velocity capacity of M5's tree (the pelvis, the torso on a ball waist and the stance leg:
/// 6 + 3 + 7).
pub const NV_M5: usize = 16;

/// One stance side's model, its tree's velocity capacity `N`.
#[derive(Debug, Clone)]
struct SideModel<const N: usize> {
    shape: HumanoidTree,
    stabiliser: Box<ContactStabiliser<N>>,
    sole: Sole,
    axes: [SampleAxis; 3],
    /// (ankle, knee) plant joints.
    joints: [usize; 2],
    /// Tree bodies: this side's foot and toes, the other side's (`usize::MAX`: not in the model).
    feet: [[usize; 2]; 2],
    /// Removed parts: the tree body each hangs from, its plant bodies.
    removed: Vec<(usize, Vec<usize>)>,
    /// The hinges' and two-axis joints' tree joints with their limits, rad.
    limits: Vec<(usize, [f64; 2])>,
}

/// Each reduced model's pair of side models, each sized to its tree.
#[derive(Debug, Clone)]
enum Sides {
    M0([SideModel<NV>; 2]),
    M3([SideModel<NV_M3>; 2]),
    M5([SideModel<NV_M5>; 2]),
}

/// Where the spread without a supplement comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Baseline {
    /// The model's rigid one-step prediction (the paper's).
    Predicted,
    /// The plant's corner forces of the last step; the model gives the supplement's effect.
    #[default]
    Measured,
}

/// The stabiliser of a walk: one model per stance side.
#[derive(Debug, Clone)]
pub struct StanceStabiliser {
    model: ReducedModel,
    baseline: Baseline,
    sides: Sides,
    masses: Vec<f64>,
    gravity: Vector3<f64>,
    /// Scratch: the walker's torque vectors of the joints the model has.
    torques: [JointTorque; MAX_WALK_JOINTS],
}

impl StanceStabiliser {
    /// The stabiliser for the humanoid `model` walking with `roles`, predicting with `reduced`.
    pub fn new(
        model: &HumanoidModel,
        roles: &BipRoles,
        reduced: ReducedModel,
        baseline: Baseline,
        gravity_m_s2: [f64; 3],
        settings: StabiliserSettings,
    ) -> Result<Self, String> {
        let soles = soles(model)?;
        let leg = |side: usize| -> Result<Vec<usize>, String> {
            let hip = roles.sides.get(side).ok_or("no such side")?.hip;
            let j = model.joints.get(hip).ok_or("the hip is no joint")?;
            Ok(model.subtree(j.child))
        };
        let legs = [leg(0)?, leg(1)?];
        let waist_child = model
            .joints
            .get(roles.waist)
            .ok_or("the waist is no joint")?
            .child;
        let build = Builder {
            model,
            roles,
            reduced,
            legs: &legs,
            waist_child,
            root: roles.root_body,
            soles: &soles,
            settings,
        };
        let sides = match reduced {
            ReducedModel::M0 => Sides::M0([build.side(0)?, build.side(1)?]),
            ReducedModel::M3 => Sides::M3([build.side(0)?, build.side(1)?]),
            ReducedModel::M5 => Sides::M5([build.side(0)?, build.side(1)?]),
        };
        Ok(Self {
            model: reduced,
            baseline,
            sides,
            masses: model.bodies.iter().map(|b| b.mass_kg).collect(),
            gravity: Vector3::from(gravity_m_s2),
            torques: [JointTorque::default(); MAX_WALK_JOINTS],
        })
    }

    /// The reduced model it predicts with.
    pub const fn model(&self) -> ReducedModel {
        self.model
    }

    /// Where its baseline comes from.
    pub const fn baseline(&self) -> Baseline {
        self.baseline
    }

    /// One tick: state `s`, stance side `stance` (0 left, 1 right), the walker's torque vectors
    /// `torques_nm` (3 per joint, joint order). Adds the supplement to the stance ankle's and
    /// knee's vectors and returns what the stabiliser did (`None`: the state could not be
    /// mapped; nothing added).
    pub fn tick(
        &mut self,
        s: &HumanoidState,
        stance: usize,
        torques_nm: &mut [f64],
    ) -> Option<StabiliserOutput> {
        let (masses, gravity, scratch) = (&self.masses, self.gravity, &mut self.torques);
        let measured = match self.baseline {
            Baseline::Predicted => None,
            Baseline::Measured => s.sole_corners(stance),
        };
        let tick = Tick {
            s,
            torques_nm,
            masses,
            gravity,
            stance,
            measured,
        };
        let (out, [ankle, knee]) = match &mut self.sides {
            Sides::M0(sides) => predict(sides.get_mut(stance)?, &tick, scratch)?,
            Sides::M3(sides) => predict(sides.get_mut(stance)?, &tick, scratch)?,
            Sides::M5(sides) => predict(sides.get_mut(stance)?, &tick, scratch)?,
        };
        // The supplement: the ankle's two axes on its vector, the knee's on its own.
        for (i, (s, a)) in out.supplement_nm.iter().zip(out.axes).enumerate() {
            let j = if i < 2 { ankle } else { knee };
            if let Some(t) = torques_nm.get_mut(3 * j..3 * j + 3) {
                for (t, a) in t.iter_mut().zip(a) {
                    *t += s * a;
                }
            }
        }
        Some(out)
    }
}

/// What a side model is built from.
struct Builder<'a> {
    model: &'a HumanoidModel,
    roles: &'a BipRoles,
    reduced: ReducedModel,
    legs: &'a [Vec<usize>; 2],
    waist_child: usize,
    root: usize,
    soles: &'a [robot_model::humanoid::Sole],
    settings: StabiliserSettings,
}

impl Builder<'_> {
    /// The model of stance side `stance`.
    fn side<const N: usize>(&self, stance: usize) -> Result<SideModel<N>, String> {
        let (model, roles, reduced, legs, waist_child, root, soles, settings) = (
            self.model,
            self.roles,
            self.reduced,
            self.legs,
            self.waist_child,
            self.root,
            self.soles,
            self.settings,
        );
        let keep = |b: usize| -> bool {
            match reduced {
                ReducedModel::M0 => true,
                ReducedModel::M3 => b == root || legs.iter().any(|l| l.contains(&b)),
                ReducedModel::M5 => b == root || b == waist_child || legs[stance].contains(&b),
            }
        };
        let shape = HumanoidTree::new(model, &keep)?;
        let tree = Tree::<N>::new(&TreeSpec {
            base: BaseKind::Floating,
            base_body: shape.base,
            joints: &shape.joints,
        })
        .map_err(|e| e.to_string())?;
        let side = roles.sides.get(stance).ok_or("no such side")?;
        let group = |joint: usize| -> Result<(usize, usize, f64), String> {
            let g = shape
                .joint_of
                .get(joint)
                .copied()
                .flatten()
                .and_then(|g| shape.groups.get(g))
                .ok_or("the stance leg is not in the model")?;
            Ok((g.first, g.count, model.joints[joint].effort_nm))
        };
        let (ankle_first, ankle_count, ankle_effort) = group(side.ankle)?;
        let (knee_first, knee_count, knee_effort) = group(side.knee)?;
        if ankle_count != 2 || knee_count != 1 {
            return Err(format!(
                "the stabiliser samples a two-axis ankle and a hinge knee; the model has \
                     {ankle_count} and {knee_count} axes"
            ));
        }
        let axis = |axis_joint, group_first, group_count, effort: f64| SampleAxis {
            axis_joint,
            group_first,
            group_count,
            max_nm: SUPPLEMENT_SHARE * effort,
        };
        let axes = [
            axis(ankle_first, ankle_first, 2, ankle_effort),
            axis(ankle_first + 1, ankle_first, 2, ankle_effort),
            axis(knee_first, knee_first, 1, knee_effort),
        ];
        let foot = side.foot_body;
        let s = soles
            .iter()
            .find(|s| s.body == foot)
            .ok_or("the stance foot has no sole")?;
        let corner = s.corners.first().ok_or("the sole has no corners")?;
        let c = shape.com_in_frame[foot];
        let sole = Sole {
            body: shape.tree_body[foot],
            centre_m: [
                c[0] + s.center[0],
                c[1] + s.center[1] + corner[1],
                c[2] + s.center[2],
            ],
            forward: [1.0, 0.0, 0.0],
            left: [0.0, 0.0, -1.0],
            half_length_m: corner[0].abs(),
            half_width_m: corner[2].abs(),
        };
        let g = model.ground_contact_bodies;
        let tree_of = |b: usize| shape.tree_body.get(b).copied().unwrap_or(usize::MAX);
        let other = 1 - stance;
        let feet = [
            [tree_of(g[stance]), tree_of(g[2 + stance])],
            [tree_of(g[other]), tree_of(g[2 + other])],
        ];
        let mut removed = Vec::new();
        for j in &model.joints {
            let (p, c) = (tree_of(j.parent), tree_of(j.child));
            if p != usize::MAX && c == usize::MAX {
                removed.push((p, model.subtree(j.child)));
            }
        }
        let mut limits = Vec::new();
        for (j, g) in model.joints.iter().zip(&shape.joint_of) {
            let Some(group) = g.and_then(|g| shape.groups.get(g)) else {
                continue;
            };
            match j.kind {
                JointKind::Hinge { limits_rad, .. } => limits.push((group.first, limits_rad)),
                JointKind::TwoAxis { limits_rad, .. } => {
                    limits.push((group.first, limits_rad[0]));
                    limits.push((group.first + 1, limits_rad[1]));
                }
                JointKind::Ball { .. } => {}
            }
        }
        if removed.len() > MAX_LOADS {
            return Err(format!(
                "{} removed parts (at most {MAX_LOADS})",
                removed.len()
            ));
        }
        Ok(SideModel {
            stabiliser: Box::new(ContactStabiliser::new(tree, settings)),
            shape,
            sole,
            axes,
            joints: [side.ankle, side.knee],
            feet,
            removed,
            limits,
        })
    }
}

/// One tick's inputs to a side model.
struct Tick<'a> {
    s: &'a HumanoidState,
    torques_nm: &'a [f64],
    masses: &'a [f64],
    gravity: Vector3<f64>,
    stance: usize,
    measured: Option<[f64; 4]>,
}

/// The stabiliser's tick on one side model: its output and the (ankle, knee) plant joints.
fn predict<const N: usize>(
    side: &mut SideModel<N>,
    t: &Tick<'_>,
    scratch: &mut [JointTorque; MAX_WALK_JOINTS],
) -> Option<(StabiliserOutput, [usize; 2])> {
    let Tick {
        s,
        torques_nm,
        masses,
        gravity,
        stance,
        measured,
    } = *t;
    let bodies = s.bodies.get(..s.body_count)?;
    let mut q = [0.0; N];
    let mut v = [0.0; N];
    let (base, _) = side.shape.map.state(bodies, &mut q, &mut v)?;
    let mut used = 0;
    for (j, g) in side.shape.joint_of.iter().enumerate() {
        let (Some(g), Some(t)) = (g, torques_nm.get(3 * j..3 * j + 3)) else {
            continue;
        };
        let group = side.shape.groups.get(*g)?;
        *scratch.get_mut(used)? = JointTorque {
            group_first: group.first,
            group_count: group.count,
            torque_nm: [t[0], t[1], t[2]],
        };
        used += 1;
    }
    // Held still: the stance foot, its toes if loaded, the other foot and toes if loaded.
    let n = s.contact_normal_n;
    let other = 1 - stance;
    let loaded = [[n[stance], n[2 + stance]], [n[other], n[2 + other]]];
    let mut planted = [0usize; 4];
    let mut count = 0;
    let mut stance_bodies = 0;
    for (k, (bodies, forces)) in side.feet.iter().zip(loaded).enumerate() {
        for (i, (&b, f)) in bodies.iter().zip(forces).enumerate() {
            // The stance foot always; the rest while loaded and in the model.
            let hold = (k == 0 && i == 0) || (f > PLANTED_N && b != usize::MAX);
            if hold && let Some(slot) = planted.get_mut(count) {
                *slot = b;
                count += 1;
                if k == 0 {
                    stance_bodies += 1;
                }
            }
        }
    }
    let mut locked = [0usize; MAX_LOCKED];
    let mut held = 0;
    for &(joint, [lo, hi]) in &side.limits {
        let at = q.get(joint).copied().unwrap_or(0.0);
        if (at <= lo + LIMIT_MARGIN_RAD || at >= hi - LIMIT_MARGIN_RAD)
            && let Some(slot) = locked.get_mut(held)
        {
            *slot = joint;
            held += 1;
        }
    }
    let mut loads = [Load::default(); MAX_LOADS];
    for (load, (hang, parts)) in loads.iter_mut().zip(&side.removed) {
        let (mut m, mut mx) = (0.0, Vector3::zeros());
        for &b in parts {
            let mass = masses.get(b).copied().unwrap_or(0.0);
            m += mass;
            mx += Vector3::from(bodies.get(b)?.com_m) * mass;
        }
        if m > 0.0 {
            *load = Load {
                body: *hang,
                point_m: (mx / m).into(),
                force_n: (gravity * m).into(),
            };
        }
    }
    let out = side.stabiliser.tick(&StabiliserInput {
        base_pose: &base,
        q: &q,
        v: &v,
        tau: &[0.0; N],
        joint_torques: scratch.get(..used)?,
        gravity,
        planted: planted.get(..count)?,
        stance_bodies,
        locked: locked.get(..held)?,
        sole: side.sole,
        axes: &side.axes,
        loads: loads.get(..side.removed.len())?,
        measured,
    });
    Some((out, side.joints))
}
