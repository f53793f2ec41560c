//! The ground-contact stabiliser on a walking humanoid: one [`ContactStabiliser`] per stance
//! side, each predicting with a (reduced) model of the character, fed from the plant's bodies,
//! its supplement added to the stance ankle's and knee's torque vectors.
//!
//! Each tick the stance side's model (a floating-base tree of the bodies the reduced model
//! keeps, the removed parts' weights as [`Load`]s at their centres of mass on the bodies they
//! hang from) predicts the stance foot's ground reaction under the walker's torques, with the
//! stance foot (and its toes while they carry more than [`PLANTED_N`]) held still, and with the
//! other foot held too while it is on the ground and the model has it. A hinge or two-axis
//! coordinate within [`LIMIT_MARGIN_RAD`] of a limit is held at it. Reduced models (Carensac
//! et al., 5.1), [`ReducedModel`]:
//! - **M0**: the whole character;
//! - **M3**: everything above the pelvis removed (the pelvis and both legs kept);
//! - **M5**: the arms, the head and the swing leg removed (pelvis, torso and stance leg kept).
//!
//! `robot-model`'s `humanoid::stance_stabiliser` builds a [`StanceStabiliser`] from a URDF.
//!
//! Never allocates, blocks or panics: capacities are in the types, and a state that cannot be
//! mapped is `None` (nothing added). A [`StanceStabiliser`] holds its side models by value
//! (about 70 KB): box it or keep it in a boxed controller.
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic
    )
)]

use nalgebra::Vector3;

use super::{
    ContactStabiliser, JointTorque, Load, MAX_LOADS, MAX_LOCKED, SampleAxis, SettingsError, Sole,
    StabiliserInput, StabiliserOutput, StabiliserSettings,
};
use crate::balance::humanoid::{BodyMap, Unmapped};
use crate::balance::{JointGroup, PLANTED_N};
use crate::frames::{BodyMotion, MAX_BODIES};
use crate::simbicon3d::{MAX_WALK_JOINTS, MAX_WALK_TORQUES};
use crate::tree::Tree;

/// A hinge or two-axis coordinate this close to a limit (or past it) is held at it for the
/// prediction, rad: the plant's limit holds it, the tree alone would let it through (the
/// stance knee straight at 0 is the common case).
pub const LIMIT_MARGIN_RAD: f64 = 0.01;

/// The largest supplement about each sampled axis, as a fraction of its joint's effort.
pub const SUPPLEMENT_SHARE: f64 = 0.25;

/// Velocity capacity of M0's tree (the whole 15-body humanoid: 6 + 3 × 10 at most).
pub const NV_M0: usize = 36;
/// Velocity capacity of M3's tree (the pelvis and two legs of ball hips, hinge knees,
/// two-axis ankles and hinge toes: 6 + 2 × 7).
pub const NV_M3: usize = 20;
/// Velocity capacity of M5's tree (the pelvis, the torso on a ball waist and the stance leg:
/// 6 + 3 + 7).
pub const NV_M5: usize = 16;

/// Most coordinates with limits in a side model (two per joint).
pub const MAX_LIMITED: usize = 2 * MAX_WALK_JOINTS;

/// The paper's reduced models that this stabiliser predicts with.
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

/// Where the spread without a supplement comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Baseline {
    /// The model's rigid one-step prediction (the paper's).
    Predicted,
    /// The plant's corner forces of the last step; the model gives the supplement's effect.
    #[default]
    Measured,
}

impl Baseline {
    /// Its name in scenarios and reports.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Predicted => "predicted",
            Self::Measured => "measured",
        }
    }
}

/// A body part a reduced model leaves out: its weight hangs from the kept body it was joined
/// to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemovedPart {
    /// The tree body it hangs from.
    pub hang: usize,
    /// Its plant bodies (its centre of mass is theirs, weighted by mass, summed in this order).
    pub bodies: heapless::Vec<usize, MAX_BODIES>,
}

impl RemovedPart {
    /// The part of plant bodies `bodies` hanging from tree body `hang`; `None` past
    /// [`MAX_BODIES`].
    pub fn new(hang: usize, bodies: &[usize]) -> Option<Self> {
        Some(Self {
            hang,
            bodies: heapless::Vec::from_slice(bodies).ok()?,
        })
    }
}

/// What a [`StanceSide`] is built from besides its tree.
#[derive(Debug, Clone)]
pub struct StanceSideSpec<'a> {
    /// The plant's bodies → the tree's coordinates.
    pub map: BodyMap<MAX_BODIES>,
    /// Per plant joint (joint order): its tree joints, `None` when the model leaves it out.
    pub groups: &'a [Option<JointGroup>],
    /// The stance foot's sole.
    pub sole: Sole,
    /// The sampled axes: the stance ankle's two, then the knee.
    pub axes: [SampleAxis; 3],
    /// The plant joints of the stance ankle and knee (where the supplement goes).
    pub ankle_knee: [usize; 2],
    /// Tree bodies of this side's foot and toes, then the other side's (`usize::MAX`: not in
    /// the model).
    pub feet: [[usize; 2]; 2],
    /// The removed parts, at most [`MAX_LOADS`].
    pub removed: &'a [RemovedPart],
    /// Tree joints with limits (rad), at most [`MAX_LIMITED`].
    pub limits: &'a [(usize, [f64; 2])],
    /// The search's settings.
    pub settings: StabiliserSettings,
}

/// Why [`StanceSide::new`] refused a side.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum StanceSideError {
    /// More joints, removed parts or limited joints than it holds ([`MAX_WALK_JOINTS`],
    /// [`MAX_LOADS`], [`MAX_LIMITED`]).
    Capacity,
    /// The search's settings out of range.
    Settings(SettingsError),
}

impl core::fmt::Display for StanceSideError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Capacity => write!(
                f,
                "more joints, removed parts or limited joints than the stabiliser holds ({MAX_WALK_JOINTS}, {MAX_LOADS}, {MAX_LIMITED})"
            ),
            Self::Settings(e) => write!(f, "stabiliser settings: {e}"),
        }
    }
}

/// One stance side's model, its tree's velocity capacity `N`.
#[derive(Debug, Clone)]
pub struct StanceSide<const N: usize> {
    map: BodyMap<MAX_BODIES>,
    groups: heapless::Vec<Option<JointGroup>, MAX_WALK_JOINTS>,
    stabiliser: ContactStabiliser<N>,
    sole: Sole,
    axes: [SampleAxis; 3],
    ankle_knee: [usize; 2],
    feet: [[usize; 2]; 2],
    removed: heapless::Vec<RemovedPart, MAX_LOADS>,
    limits: heapless::Vec<(usize, [f64; 2]), MAX_LIMITED>,
}

impl<const N: usize> StanceSide<N> {
    /// The side predicting with `tree` (a floating base, the one `spec.map` maps to); refused
    /// past a capacity (joints, removed parts, limits) or with settings out of range.
    pub fn new(tree: Tree<N>, spec: &StanceSideSpec<'_>) -> Result<Self, StanceSideError> {
        Ok(Self {
            map: spec.map.clone(),
            groups: heapless::Vec::from_slice(spec.groups)
                .map_err(|_| StanceSideError::Capacity)?,
            stabiliser: ContactStabiliser::new(tree, spec.settings)
                .map_err(StanceSideError::Settings)?,
            sole: spec.sole,
            axes: spec.axes,
            ankle_knee: spec.ankle_knee,
            feet: spec.feet,
            removed: heapless::Vec::from_slice(spec.removed)
                .map_err(|_| StanceSideError::Capacity)?,
            limits: heapless::Vec::from_slice(spec.limits)
                .map_err(|_| StanceSideError::Capacity)?,
        })
    }
}

/// Each reduced model's pair of side models (left stance, right stance), each sized to its
/// tree.
#[derive(Debug, Clone)]
// No allocator to box the largest variant with: the caller boxes the whole stabiliser.
#[allow(clippy::large_enum_variant)]
pub enum StanceSides {
    /// The whole character.
    M0([StanceSide<NV_M0>; 2]),
    /// The pelvis and both legs.
    M3([StanceSide<NV_M3>; 2]),
    /// The pelvis, the torso and the stance leg.
    M5([StanceSide<NV_M5>; 2]),
}

/// What a tick reads from the plant.
#[derive(Debug, Clone, Copy)]
pub struct StanceInput<'a> {
    /// Every body's world motion, body order.
    pub bodies: &'a [BodyMotion],
    /// The ground's normal force on the left foot, the right foot, the left toes and the right
    /// toes at the last step, N.
    pub contact_normal_n: [f64; 4],
    /// Each sole's (left, right) corner normal forces at the last step, in
    /// [`super::Distribution::of_corners`]'s order, N (read with [`Baseline::Measured`]).
    pub sole_corner_n: [[f64; 4]; 2],
}

/// The stabiliser of a walk: one model per stance side.
#[derive(Debug, Clone)]
pub struct StanceStabiliser {
    baseline: Baseline,
    sides: StanceSides,
    masses: heapless::Vec<f64, MAX_BODIES>,
    gravity: Vector3<f64>,
    /// Scratch: the walker's torque vectors of the joints the model has.
    torques: [JointTorque; MAX_WALK_JOINTS],
}

impl StanceStabiliser {
    /// The stabiliser of `sides`, its baseline `baseline`, the plant's body masses `masses`
    /// (kg, body order) under `gravity_m_s2`; `None` past [`MAX_BODIES`].
    pub fn new(
        sides: StanceSides,
        baseline: Baseline,
        masses: &[f64],
        gravity_m_s2: [f64; 3],
    ) -> Option<Self> {
        Some(Self {
            baseline,
            sides,
            masses: heapless::Vec::from_slice(masses).ok()?,
            gravity: Vector3::from(gravity_m_s2),
            torques: [JointTorque::default(); MAX_WALK_JOINTS],
        })
    }

    /// The reduced model it predicts with.
    pub const fn model(&self) -> ReducedModel {
        match self.sides {
            StanceSides::M0(_) => ReducedModel::M0,
            StanceSides::M3(_) => ReducedModel::M3,
            StanceSides::M5(_) => ReducedModel::M5,
        }
    }

    /// Where its baseline comes from.
    pub const fn baseline(&self) -> Baseline {
        self.baseline
    }

    /// One tick: the plant's `input`, stance side `stance` (0 left, 1 right), the walker's
    /// torque vectors `torques_nm` (3 per joint, joint order). Adds the supplement to the
    /// stance ankle's and knee's vectors and returns what the stabiliser did (`None`: the state
    /// could not be mapped; nothing added).
    pub fn tick(
        &mut self,
        input: &StanceInput<'_>,
        stance: usize,
        torques_nm: &mut [f64],
    ) -> Option<StabiliserOutput> {
        let (masses, gravity, scratch) = (&self.masses, self.gravity, &mut self.torques);
        let measured = match self.baseline {
            Baseline::Predicted => None,
            Baseline::Measured => input.sole_corner_n.get(stance).copied(),
        };
        let tick = Tick {
            input,
            torques_nm,
            masses,
            gravity,
            stance,
            measured,
        };
        let (out, [ankle, knee]) = match &mut self.sides {
            StanceSides::M0(sides) => predict(sides.get_mut(stance)?, &tick, scratch)?,
            StanceSides::M3(sides) => predict(sides.get_mut(stance)?, &tick, scratch)?,
            StanceSides::M5(sides) => predict(sides.get_mut(stance)?, &tick, scratch)?,
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

/// What a [`StanceStabiliser`] tick reads, as one input (for
/// [`crate::controller::Controller`]).
#[derive(Debug, Clone, Copy)]
pub struct StanceTickInput<'a> {
    /// The plant's state.
    pub plant: StanceInput<'a>,
    /// The stance side: 0 left, 1 right.
    pub stance: usize,
    /// The walker's torque vectors, 3 per joint (joint order), N·m.
    pub torques_nm: [f64; MAX_WALK_TORQUES],
}

/// What a [`StanceStabiliser`] tick sends, as one command.
#[derive(Debug, Clone, Copy)]
pub struct StanceCommand {
    /// The walker's torques with the supplement added to the stance ankle and knee.
    pub torques_nm: [f64; MAX_WALK_TORQUES],
    /// What the stabiliser did.
    pub output: StabiliserOutput,
}

impl crate::controller::Controller<StanceTickInput<'_>> for StanceStabiliser {
    type Command = StanceCommand;
    type Error = Unmapped;

    fn tick(&mut self, i: &StanceTickInput<'_>) -> Result<StanceCommand, Unmapped> {
        let mut torques_nm = i.torques_nm;
        let output =
            StanceStabiliser::tick(self, &i.plant, i.stance, &mut torques_nm).ok_or(Unmapped)?;
        Ok(StanceCommand { torques_nm, output })
    }

    /// As [`ContactStabiliser`]'s: a refused input or model gives no supplement, a fallback.
    fn limits(command: &StanceCommand) -> crate::controller::Limits {
        <ContactStabiliser<NV_M5> as crate::controller::Controller<
            StabiliserInput<'_, NV_M5>,
        >>::limits(&command.output)
    }
}

/// One tick's inputs to a side model.
struct Tick<'a> {
    input: &'a StanceInput<'a>,
    torques_nm: &'a [f64],
    masses: &'a [f64],
    gravity: Vector3<f64>,
    stance: usize,
    measured: Option<[f64; 4]>,
}

/// The stabiliser's tick on one side model: its output and the (ankle, knee) plant joints.
fn predict<const N: usize>(
    side: &mut StanceSide<N>,
    t: &Tick<'_>,
    scratch: &mut [JointTorque; MAX_WALK_JOINTS],
) -> Option<(StabiliserOutput, [usize; 2])> {
    let Tick {
        input,
        torques_nm,
        masses,
        gravity,
        stance,
        measured,
    } = *t;
    let bodies = input.bodies;
    let mut q = [0.0; N];
    let mut v = [0.0; N];
    let (base, _) = side.map.state(bodies, &mut q, &mut v)?;
    let mut used = 0;
    for (j, g) in side.groups.iter().enumerate() {
        let (Some(group), Some(t)) = (g, torques_nm.get(3 * j..3 * j + 3)) else {
            continue;
        };
        *scratch.get_mut(used)? = JointTorque {
            group_first: group.first,
            group_count: group.count,
            torque_nm: [*t.first()?, *t.get(1)?, *t.get(2)?],
        };
        used += 1;
    }
    // Held still: the stance foot, its toes if loaded, the other foot and toes if loaded.
    let n = input.contact_normal_n;
    let other = 1usize.checked_sub(stance)?;
    let at = |i: usize| n.get(i).copied().unwrap_or(0.0);
    let loaded = [[at(stance), at(2 + stance)], [at(other), at(2 + other)]];
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
    for (load, part) in loads.iter_mut().zip(&side.removed) {
        let (mut m, mut mx) = (0.0, Vector3::zeros());
        for &b in &part.bodies {
            let mass = masses.get(b).copied().unwrap_or(0.0);
            m += mass;
            mx += Vector3::from(bodies.get(b)?.com_m) * mass;
        }
        if m > 0.0 {
            *load = Load {
                body: part.hang,
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
    Some((out, side.ankle_knee))
}
