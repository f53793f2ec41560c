//! Which joint of a humanoid plays which part: a scenario's `[roles]` table (each entry left
//! out is the name `models/humanoid15.urdf` uses), resolved once against the model by exact
//! names. The humanoid's controllers (the 3D walker, Dynamo's laws) and its animations take their
//! roles from here, never from substrings of joint names.

use std::path::Path;

use control_core::simbicon3d::{BipRoles, Limb, Side, SideJoints};
use robot_model::humanoid::HumanoidModel;
use serde::{Deserialize, Serialize};

/// The joints of one side, by URDF joint name, and its foot link.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SideSpec {
    /// Hip (ball joint whose parent is the pelvis).
    pub hip: String,
    /// Knee.
    pub knee: String,
    /// Ankle.
    pub ankle: String,
    /// Toe joint.
    pub toe: String,
    /// Shoulder.
    pub shoulder: String,
    /// Elbow.
    pub elbow: String,
    /// The foot link (d is measured from its centre of mass; its ground force with the toes'
    /// decides a foot strike).
    pub foot: String,
    /// The toes link.
    pub toes: String,
}

impl SideSpec {
    fn named(side: &str) -> Self {
        Self {
            hip: format!("{side}_hip"),
            knee: format!("{side}_knee"),
            ankle: format!("{side}_ankle"),
            toe: format!("{side}_toe"),
            shoulder: format!("{side}_shoulder"),
            elbow: format!("{side}_elbow"),
            foot: format!("{side}_foot"),
            toes: format!("{side}_toes"),
        }
    }
}

/// Which joint plays which part (each part left out: the humanoid15 name).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RolesSpec {
    /// The pelvis (the floating root) link.
    pub pelvis: String,
    /// The pelvis–torso joint.
    pub waist: String,
    /// The torso–head joint.
    pub neck: String,
    /// The left side.
    pub left: SideSpec,
    /// The right side.
    pub right: SideSpec,
}

impl Default for RolesSpec {
    fn default() -> Self {
        Self {
            pelvis: "pelvis".into(),
            waist: "waist".into(),
            neck: "neck".into(),
            left: SideSpec::named("left"),
            right: SideSpec::named("right"),
        }
    }
}

impl RolesSpec {
    /// The roles as joint and body indices of `model` (loaded from `urdf`, which errors name),
    /// or (field, reason) of the first role that names no joint or link of it. The feet and toes
    /// must be the bodies the plant reports the ground's force on.
    pub fn resolve(
        &self,
        model: &HumanoidModel,
        urdf: &Path,
    ) -> Result<BipRoles, (String, String)> {
        let joint = |field: String, name: &str| {
            model.joint_index(name).ok_or_else(|| {
                let reason = format!("`{name}` is no joint of {}", urdf.display());
                (field, reason)
            })
        };
        let body = |field: String, name: &str| {
            model.body_index(name).ok_or_else(|| {
                let reason = format!("`{name}` is no link of {}", urdf.display());
                (field, reason)
            })
        };
        let side = |key: &str, s: &SideSpec| -> Result<(SideJoints, usize), (String, String)> {
            let f = |n: &str| format!("roles.{key}.{n}");
            Ok((
                SideJoints {
                    hip: joint(f("hip"), &s.hip)?,
                    knee: joint(f("knee"), &s.knee)?,
                    ankle: joint(f("ankle"), &s.ankle)?,
                    toe: Some(joint(f("toe"), &s.toe)?),
                    shoulder: Some(joint(f("shoulder"), &s.shoulder)?),
                    elbow: Some(joint(f("elbow"), &s.elbow)?),
                    foot_body: body(f("foot"), &s.foot)?,
                },
                body(f("toes"), &s.toes)?,
            ))
        };
        let (left, left_toes) = side("left", &self.left)?;
        let (right, right_toes) = side("right", &self.right)?;
        let roles = BipRoles {
            root_body: body("roles.pelvis".into(), &self.pelvis)?,
            waist: joint("roles.waist".into(), &self.waist)?,
            neck: joint("roles.neck".into(), &self.neck)?,
            sides: [left, right],
        };
        // The plant reports the ground's force on the left foot, right foot, left toes and right
        // toes, in that order: the roles' feet must be those bodies.
        let g = model.ground_contact_bodies;
        if [left.foot_body, right.foot_body, left_toes, right_toes] != g {
            return Err((
                "roles".into(),
                "the feet and toes must be the bodies the plant reports ground forces for \
                 (left_foot, right_foot, left_toes, right_toes)"
                    .into(),
            ));
        }
        Ok(roles)
    }
}

pub use control_core::dynamo::humanoid::JointRole;

/// Each of `model`'s joints' role under `roles`, in joint order; (field, reason) when a joint
/// plays no part or two (a controller that drives every joint by its role needs each once).
pub fn joint_roles(
    roles: &BipRoles,
    model: &HumanoidModel,
) -> Result<Vec<JointRole>, (String, String)> {
    model
        .joint_roles(roles)
        .map_err(|reason| ("roles".into(), reason))
}

/// Each of `model`'s bodies' side under `roles`: the side of the limb joint whose child it is
/// (`None` for the rest: pelvis, torso, head). What the animations colour by.
pub fn body_sides(roles: &BipRoles, model: &HumanoidModel) -> Vec<Option<Side>> {
    let mut sides = vec![None; model.bodies.len()];
    for (side, joints) in [Side::Left, Side::Right].into_iter().zip(&roles.sides) {
        for limb in Limb::ALL {
            if let Some(slot) = joints
                .limb(limb)
                .and_then(|j| model.joints.get(j))
                .and_then(|j| sides.get_mut(j.child))
            {
                *slot = Some(side);
            }
        }
    }
    sides
}

#[cfg(test)]
mod tests {
    use super::*;

    fn humanoid() -> (HumanoidModel, std::path::PathBuf) {
        let urdf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/humanoid15.urdf");
        (
            HumanoidModel::load(&urdf).expect("the humanoid loads"),
            urdf,
        )
    }

    #[test]
    fn every_joint_of_the_humanoid_plays_one_part_by_the_default_names() {
        let (model, urdf) = humanoid();
        let roles = RolesSpec::default()
            .resolve(&model, &urdf)
            .expect("resolves");
        let parts = joint_roles(&roles, &model).expect("every joint plays one part");
        for (j, role) in model.joints.iter().zip(&parts) {
            let expected = match j.name.as_str() {
                "waist" => JointRole::Waist,
                "neck" => JointRole::Neck,
                other => {
                    let (side, limb) = other.split_once('_').expect("side_limb");
                    let side = if side == "left" {
                        Side::Left
                    } else {
                        Side::Right
                    };
                    let limb = match limb {
                        "hip" => Limb::Hip,
                        "knee" => Limb::Knee,
                        "ankle" => Limb::Ankle,
                        "toe" => Limb::Toe,
                        "shoulder" => Limb::Shoulder,
                        "elbow" => Limb::Elbow,
                        l => panic!("unexpected joint {l}"),
                    };
                    JointRole::Limb(side, limb)
                }
            };
            assert_eq!(*role, expected, "{}", j.name);
        }
        assert_eq!(parts.iter().filter(|r| r.is_ankle()).count(), 2);
        assert_eq!(parts.iter().filter(|r| r.is_support()).count(), 8);
        assert_eq!(parts.iter().filter(|r| r.is_upper_limb()).count(), 5);
        // Each limb body is on the side its name says; pelvis, torso and head on none.
        for (body, side) in model.bodies.iter().zip(body_sides(&roles, &model)) {
            let expected = if body.name.starts_with("left_") {
                Some(Side::Left)
            } else if body.name.starts_with("right_") {
                Some(Side::Right)
            } else {
                None
            };
            assert_eq!(side, expected, "{}", body.name);
        }
    }

    #[test]
    fn a_role_naming_no_joint_or_a_joint_twice_is_refused_by_field() {
        let (model, urdf) = humanoid();
        let mut spec = RolesSpec::default();
        spec.left.knee = "left_knie".into();
        let (field, reason) = spec.resolve(&model, &urdf).unwrap_err();
        assert_eq!(field, "roles.left.knee");
        assert!(reason.contains("`left_knie` is no joint"), "{reason}");

        let spec = RolesSpec {
            neck: "waist".into(),
            ..RolesSpec::default()
        };
        let roles = spec.resolve(&model, &urdf).expect("names resolve");
        let (field, reason) = joint_roles(&roles, &model).unwrap_err();
        assert_eq!(field, "roles");
        assert!(
            reason.contains("`waist` plays two parts: `waist` and `neck`"),
            "{reason}"
        );
    }
}
