//! The walker's ground-contact stabiliser built from the humanoid's description:
//! [`stance_stabiliser`] makes each stance side's (reduced) model
//! ([`control_core::contact_stabiliser::stance`]) from a [`HumanoidModel`] and the walker's
//! roles.
//!
//! Allocates while building only; the stabiliser it returns never allocates.

use control_core::balance::JointGroup;
use control_core::contact_stabiliser::StabiliserSettings;
use control_core::contact_stabiliser::stance::{
    Baseline, MAX_LIMITED, ReducedModel, RemovedPart, SUPPLEMENT_SHARE, StanceSide, StanceSideSpec,
    StanceSides, StanceStabiliser,
};
use control_core::contact_stabiliser::{MAX_LOADS, SampleAxis, Sole};
use control_core::frames::MAX_BODIES;
use control_core::simbicon3d::BipRoles;
use control_core::tree::{BaseKind, Tree, TreeSpec};

use super::{HumanoidModel, HumanoidTree, JointKind, soles};

/// The stabiliser for the humanoid `model` walking with `roles`, predicting with `reduced`
/// (one side model per stance side), its baseline `baseline`, under `gravity_m_s2`.
///
/// Refused (naming what): roles that name no joint or body, a stance leg the reduced model
/// leaves out, an ankle that is not two-axis or a knee that is not a hinge, a foot without a
/// sole, more removed parts or limited coordinates than the stabiliser holds, a tree the
/// capacity cannot take.
pub fn stance_stabiliser(
    model: &HumanoidModel,
    roles: &BipRoles,
    reduced: ReducedModel,
    baseline: Baseline,
    gravity_m_s2: [f64; 3],
    settings: StabiliserSettings,
) -> Result<StanceStabiliser, String> {
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
        ReducedModel::M0 => StanceSides::M0([build.side(0)?, build.side(1)?]),
        ReducedModel::M3 => StanceSides::M3([build.side(0)?, build.side(1)?]),
        ReducedModel::M5 => StanceSides::M5([build.side(0)?, build.side(1)?]),
    };
    let masses: Vec<f64> = model.bodies.iter().map(|b| b.mass_kg).collect();
    StanceStabiliser::new(sides, baseline, &masses, gravity_m_s2)
        .ok_or_else(|| format!("{} bodies: more than the stabiliser holds", masses.len()))
}

/// What a side model is built from.
struct Builder<'a> {
    model: &'a HumanoidModel,
    roles: &'a BipRoles,
    reduced: ReducedModel,
    legs: &'a [Vec<usize>; 2],
    waist_child: usize,
    root: usize,
    soles: &'a [super::Sole],
    settings: StabiliserSettings,
}

impl Builder<'_> {
    /// The model of stance side `stance`.
    fn side<const N: usize>(&self, stance: usize) -> Result<StanceSide<N>, String> {
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
                let bodies = model.subtree(j.child);
                removed.push(RemovedPart::new(p, &bodies).ok_or_else(|| {
                    format!(
                        "a removed part of {} bodies (at most {MAX_BODIES})",
                        bodies.len()
                    )
                })?);
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
        if limits.len() > MAX_LIMITED {
            return Err(format!(
                "{} coordinates with limits (at most {MAX_LIMITED})",
                limits.len()
            ));
        }
        let groups: Vec<Option<JointGroup>> = shape
            .joint_of
            .iter()
            .map(|g| g.and_then(|g| shape.groups.get(g)).copied())
            .collect();
        let spec = StanceSideSpec {
            map: shape.map.clone(),
            groups: &groups,
            sole,
            axes,
            ankle_knee: [side.ankle, side.knee],
            feet,
            removed: &removed,
            limits: &limits,
            settings,
        };
        StanceSide::new(tree, &spec).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::humanoid::BodyPose;
    use control_core::contact_stabiliser::StabiliserStatus;
    use control_core::contact_stabiliser::stance::StanceInput;
    use control_core::frames::BodyMotion;
    use control_core::simbicon3d::SideJoints;
    use std::path::Path;

    const URDF: &str = include_str!("../../../models/humanoid15.urdf");
    const GRAVITY: [f64; 3] = [0.0, -9.81, 0.0];

    fn model() -> HumanoidModel {
        HumanoidModel::from_urdf_str(URDF, Path::new("h.urdf")).unwrap()
    }

    fn roles(m: &HumanoidModel) -> BipRoles {
        let j = |n: &str| m.joint_index(n).unwrap();
        let side = |s: &str| SideJoints {
            hip: j(&format!("{s}_hip")),
            knee: j(&format!("{s}_knee")),
            ankle: j(&format!("{s}_ankle")),
            toe: Some(j(&format!("{s}_toe"))),
            shoulder: Some(j(&format!("{s}_shoulder"))),
            elbow: Some(j(&format!("{s}_elbow"))),
            foot_body: m.body_index(&format!("{s}_foot")).unwrap(),
        };
        BipRoles {
            root_body: m.body_index("pelvis").unwrap(),
            waist: j("waist"),
            neck: j("neck"),
            sides: [side("left"), side("right")],
        }
    }

    /// The bodies standing in the zero pose, the soles on y = 0.
    fn standing(m: &HumanoidModel) -> Vec<BodyMotion> {
        let up = BodyPose {
            com_m: [0.0; 3],
            orientation: [1.0, 0.0, 0.0, 0.0],
        };
        let lowest = m.lowest_point_m(&m.pose(up, &[]));
        m.pose(
            BodyPose {
                com_m: [0.0, -lowest, 0.0],
                ..up
            },
            &[],
        )
        .iter()
        .map(|p| BodyMotion {
            com_m: p.com_m,
            orientation: p.orientation,
            ..Default::default()
        })
        .collect()
    }

    #[test]
    fn every_reduced_model_predicts_and_its_supplement_stays_within_its_share() {
        let m = model();
        let r = roles(&m);
        let bodies = standing(&m);
        for reduced in [ReducedModel::M0, ReducedModel::M3, ReducedModel::M5] {
            for baseline in [Baseline::Predicted, Baseline::Measured] {
                let mut st = stance_stabiliser(
                    &m,
                    &r,
                    reduced,
                    baseline,
                    GRAVITY,
                    StabiliserSettings::DEFAULT,
                )
                .unwrap();
                assert_eq!((st.model(), st.baseline()), (reduced, baseline));
                // Standing on the right foot, its load towards one end of the sole.
                let input = StanceInput {
                    bodies: &bodies,
                    contact_normal_n: [0.0, 640.0, 0.0, 0.0],
                    sole_corner_n: [[0.0; 4], [300.0, 300.0, 20.0, 20.0]],
                };
                let mut torques = vec![0.0; 3 * m.joints.len()];
                let out = st.tick(&input, 1, &mut torques).expect("a mapped state");
                assert!(
                    matches!(
                        out.status,
                        StabiliserStatus::Improved | StabiliserStatus::Kept
                    ),
                    "{reduced:?} {baseline:?}: {:?}",
                    out.status
                );
                let ankle = r.sides[1].ankle;
                let effort = m.joints[ankle].effort_nm;
                for (k, s) in out.supplement_nm.iter().enumerate() {
                    assert!(s.abs() <= SUPPLEMENT_SHARE * effort + 1e-9, "axis {k}: {s}");
                }
                // Only the stance ankle and knee were given a supplement.
                let knee = r.sides[1].knee;
                for (j, t) in torques.chunks_exact(3).enumerate() {
                    if j != ankle && j != knee {
                        assert_eq!(t, [0.0; 3], "joint {j}");
                    }
                }
                // A state that cannot be mapped adds nothing.
                let mut broken = bodies.clone();
                broken[0].orientation = [f64::NAN; 4];
                let mut zero = vec![0.0; 3 * m.joints.len()];
                let refused = StanceInput {
                    bodies: &broken,
                    ..input
                };
                assert!(st.tick(&refused, 1, &mut zero).is_none());
                assert!(st.tick(&input, 2, &mut zero).is_none(), "no third side");
                assert!(zero.iter().all(|t| *t == 0.0));
            }
        }
    }

    #[test]
    fn behind_the_controller_trait_it_adds_the_same_supplement() {
        use control_core::balance::humanoid::Unmapped;
        use control_core::contact_stabiliser::stance::StanceTickInput;
        use control_core::controller::Controller;
        let m = model();
        let r = roles(&m);
        let bodies = standing(&m);
        let mut direct = stance_stabiliser(
            &m,
            &r,
            ReducedModel::M3,
            Baseline::Measured,
            GRAVITY,
            StabiliserSettings::DEFAULT,
        )
        .unwrap();
        let mut traited = direct.clone();
        let plant = StanceInput {
            bodies: &bodies,
            contact_normal_n: [0.0, 640.0, 0.0, 0.0],
            sole_corner_n: [[0.0; 4], [300.0, 300.0, 20.0, 20.0]],
        };
        let mut torques = [0.0; 48];
        torques[3 * r.sides[1].ankle + 2] = 5.0;
        let mut expected = torques;
        let out = direct.tick(&plant, 1, &mut expected).unwrap();
        let input = StanceTickInput {
            plant,
            stance: 1,
            torques_nm: torques,
        };
        let c = Controller::tick(&mut traited, &input).unwrap();
        assert_eq!((c.torques_nm, c.output.status), (expected, out.status));
        assert!(!StanceStabiliser::limits(&c).fallback);
        let none = StanceTickInput { stance: 2, ..input };
        assert_eq!(Controller::tick(&mut traited, &none).unwrap_err(), Unmapped);
    }

    #[test]
    fn roles_the_stabiliser_cannot_sample_are_refused_naming_why() {
        let m = model();
        let build = |r: &BipRoles| {
            stance_stabiliser(
                &m,
                r,
                ReducedModel::M5,
                Baseline::Measured,
                GRAVITY,
                StabiliserSettings::DEFAULT,
            )
            .unwrap_err()
        };
        let mut r = roles(&m);
        r.sides[0].ankle = r.sides[0].hip; // a ball joint
        assert!(build(&r).contains("two-axis ankle"), "{}", build(&r));
        let mut r = roles(&m);
        r.sides[1].foot_body = r.root_body;
        assert!(build(&r).contains("no sole"), "{}", build(&r));
        let mut r = roles(&m);
        r.waist = 99;
        assert!(build(&r).contains("waist"), "{}", build(&r));
        let mut r = roles(&m);
        r.sides[0].knee = m.joint_index("left_elbow").unwrap(); // not in M5's stance leg
        assert!(build(&r).contains("not in the model"), "{}", build(&r));
    }
}
