//! The keyframes of a `pose_tour`: seeded random poses inside every joint's limits, one per beat,
//! each joint's move from one keyframe to the next bounded.
//!
//! A pose tour needs nothing but a robot: for joint j with limits [lo, hi] the poses are drawn
//! uniformly from [lo + m·(hi − lo), hi − m·(hi − lo)] (m the scenario's `limit_margin`; a
//! continuous joint, which has no limits, from [−π, π]) intersected with
//! [q_prev − max_move, q_prev + max_move] (`max_move_rad` for revolute joints, `max_move_m` for
//! prismatic ones), q_prev the joint's previous keyframe (its start pose for the first). The
//! random numbers are SplitMix64 ([`SplitMix64`]) from the scenario's `seed`, drawn joint by joint, keyframe by
//! keyframe: the same seed and robot give the same tour on every machine.
//!
//! The start pose is 0 where 0 lies inside the margin range, the middle of the range otherwise
//! (a robot whose zero pose is outside its own limits, as some URDFs are).
//!
//! Never panics: every number it returns is finite and inside its joint's range.

use control_core::tree::JointType;
use robot_model::Joint;
use serde::Deserialize;

use super::super::scenario::SplitMix64;

/// How a tour is drawn: a `pose_tour` scenario's `[tour]` (checked by the scenario's reader).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TourSpec {
    /// The seed of the random poses.
    pub seed: u64,
    /// Number of keyframes, 1 to `MAX_KEYFRAMES`.
    pub keyframes: usize,
    /// Time between keyframes (and before the first), s.
    pub beat_s: f64,
    /// Fraction of each joint's range kept clear at both ends, in [0, 0.45].
    pub limit_margin: f64,
    /// Largest move of a revolute joint from one keyframe to the next, rad, in (0, 2π].
    pub max_move_rad: f64,
    /// Largest move of a prismatic joint from one keyframe to the next, m, in (0, 10].
    pub max_move_m: f64,
}

/// The range joint `j`'s keyframes are drawn from: its limits less the margin, [−π, π] when it
/// has none.
pub fn pose_range(joint: &Joint, margin: f64) -> (f64, f64) {
    match joint.limits {
        Some((lo, hi)) => {
            let m = margin * (hi - lo);
            (lo + m, hi - m)
        }
        None => (-std::f64::consts::PI, std::f64::consts::PI),
    }
}

/// The start pose: 0 where 0 lies in the joint's range, the middle of the range otherwise.
pub fn start_pose(joints: &[Joint], margin: f64) -> Vec<f64> {
    joints
        .iter()
        .map(|j| {
            let (lo, hi) = pose_range(j, margin);
            if (lo..=hi).contains(&0.0) {
                0.0
            } else {
                0.5 * (lo + hi)
            }
        })
        .collect()
}

/// The tour: (instant, one pose per joint) for every keyframe, keyframe i at (i + 1)·beat.
pub fn keyframes(spec: &TourSpec, joints: &[Joint], start: &[f64]) -> Vec<(f64, Vec<f64>)> {
    let mut rng = SplitMix64::new(spec.seed);
    let mut previous = start.to_vec();
    let mut out = Vec::with_capacity(spec.keyframes);
    for i in 0..spec.keyframes {
        let mut pose = Vec::with_capacity(joints.len());
        for (joint, prev) in joints.iter().zip(previous.iter()) {
            let (lo, hi) = pose_range(joint, spec.limit_margin);
            let step = match joint.kind {
                JointType::Revolute => spec.max_move_rad,
                JointType::Prismatic => spec.max_move_m,
            };
            let (a, b) = (lo.max(prev - step), hi.min(prev + step));
            // One draw per joint and keyframe, used or not: the sequence does not depend on the
            // start pose.
            let draw = rng.uniform(a, b);
            let q = if a <= b {
                draw
            } else if *prev < lo {
                // The previous pose is below the range (only a start pose can be): move towards it.
                (prev + step).min(hi)
            } else {
                (prev - step).max(lo)
            };
            pose.push(q);
        }
        out.push(((i + 1) as f64 * spec.beat_s, pose.clone()));
        previous = pose;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use control_core::tree::Placement;

    fn joint(kind: JointType, limits: Option<(f64, f64)>) -> Joint {
        Joint {
            name: "j".into(),
            kind,
            continuous: limits.is_none(),
            parent_body: 0,
            origin: Placement::IDENTITY,
            axis: [0.0, 0.0, 1.0],
            limits,
            effort: Some(10.0),
            velocity: None,
            damping: 0.0,
            friction: 0.0,
            mimic: None,
        }
    }

    #[test]
    fn poses_stay_in_range_and_moves_are_bounded_and_the_seed_decides() {
        let joints = [
            joint(JointType::Revolute, Some((-2.0, 2.0))),
            joint(JointType::Revolute, None),
            joint(JointType::Prismatic, Some((0.0, 0.04))),
            joint(JointType::Revolute, Some((0.5, 1.5))),
        ];
        let spec = TourSpec {
            seed: 7,
            keyframes: 200,
            beat_s: 0.5,
            limit_margin: 0.1,
            max_move_rad: 0.6,
            max_move_m: 0.01,
        };
        let start = start_pose(&joints, spec.limit_margin);
        for (s, e) in start.iter().zip([0.0, 0.0, 0.02, 1.0]) {
            assert!((s - e).abs() < 1e-15, "{start:?}");
        }
        let tour = keyframes(&spec, &joints, &start);
        assert_eq!(tour.len(), 200);
        let mut prev = start.clone();
        for (i, (t, pose)) in tour.iter().enumerate() {
            assert_eq!(*t, (i + 1) as f64 * 0.5);
            for (j, (q, p)) in pose.iter().zip(&prev).enumerate() {
                let (lo, hi) = pose_range(&joints[j], 0.1);
                assert!((lo..=hi).contains(q), "keyframe {i} joint {j}: {q}");
                let step = if j == 2 { 0.01 } else { 0.6 };
                assert!((q - p).abs() <= step + 1e-12, "keyframe {i} joint {j}");
            }
            prev = pose.clone();
        }
        assert_eq!(tour, keyframes(&spec, &joints, &start));
        let other = keyframes(&TourSpec { seed: 8, ..spec }, &joints, &start);
        assert_ne!(tour, other);
        // The draws cover the range, not only a corner of it.
        let spread = tour
            .iter()
            .map(|(_, p)| p[1])
            .fold((f64::MAX, f64::MIN), |(a, b), q| (a.min(q), b.max(q)));
        assert!(spread.0 < -2.0 && spread.1 > 2.0, "{spread:?}");
    }

    #[test]
    fn a_start_outside_the_range_walks_into_it() {
        let joints = [joint(JointType::Revolute, Some((-1.0, 1.0)))];
        let spec = TourSpec {
            seed: 1,
            keyframes: 3,
            beat_s: 1.0,
            limit_margin: 0.0,
            max_move_rad: 0.5,
            max_move_m: 0.01,
        };
        // From 2.0, 0.5 at a time: 1.5 (still outside), then 1.0 (the range's edge), then inside.
        let tour = keyframes(&spec, &joints, &[2.0]);
        assert_eq!(tour[0].1, vec![1.5]);
        assert_eq!(tour[1].1, vec![1.0]);
        assert!((0.5..=1.0).contains(&tour[2].1[0]));
    }
}
