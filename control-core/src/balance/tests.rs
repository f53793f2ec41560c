use super::*;
use crate::tree::{Inertial, JointSpec, TreeSpec};
use nalgebra::{Rotation3, Translation3, Unit};
use proptest::prelude::*;

const NV: usize = 24;
const NX: usize = 48;
const NR: usize = 96;
type Biped = Balance<NV, NX, NR>;

const G: [f64; 3] = [0.0, -9.81, 0.0];

fn body(mass: f64, com: [f64; 3], i: f64) -> Inertial {
    Inertial {
        mass_kg: mass,
        com_m: com,
        inertia_kgm2: [i, 0.0, 0.0, i, 0.0, i],
    }
}

fn revolute(parent: usize, xyz: [f64; 3], axis: [f64; 3], b: Inertial) -> JointSpec {
    JointSpec {
        parent_body: parent,
        kind: JointType::Revolute,
        origin: Placement::from_xyz_rpy(xyz, [0.0; 3]),
        axis,
        body: b,
    }
}

const X: [f64; 3] = [1.0, 0.0, 0.0];
const Y: [f64; 3] = [0.0, 1.0, 0.0];
const Z: [f64; 3] = [0.0, 0.0, 1.0];

/// A y-up biped facing +x: a 20 kg pelvis, per leg a ball hip (x, y, z Euler joints, two
/// massless frames), a knee about z, a two-axis ankle (x then z, one massless frame). Returns
/// the joints, the groups and the contact bodies (the feet's sole corners).
fn biped_spec() -> ([JointSpec; 12], [JointGroup; 6], [ContactBody; 2]) {
    let none = Inertial::ZERO;
    let thigh = body(5.0, [0.0, -0.2, 0.0], 0.07);
    let shin = body(3.0, [0.0, -0.2, 0.0], 0.04);
    let foot = body(1.0, [0.05, -0.03, 0.0], 0.003);
    let mut joints = [revolute(0, [0.0; 3], X, none); 12];
    let mut groups = [JointGroup {
        first: 0,
        count: 1,
        effort: 1.0,
    }; 6];
    let mut contacts = [ContactBody {
        body: 0,
        points: [[0.0; 3]; MAX_POINTS],
        count: 4,
    }; 2];
    for (leg, z) in [(0usize, 0.1), (1, -0.1)] {
        let j0 = 6 * leg;
        let b = |k: usize| j0 + k + 1; // body of joint j0 + k
        joints[j0] = revolute(0, [0.0, -0.1, z], X, none);
        joints[j0 + 1] = revolute(b(0), [0.0; 3], Y, none);
        joints[j0 + 2] = revolute(b(1), [0.0; 3], Z, thigh);
        joints[j0 + 3] = revolute(b(2), [0.0, -0.4, 0.0], Z, shin);
        joints[j0 + 4] = revolute(b(3), [0.0, -0.4, 0.0], X, none);
        joints[j0 + 5] = revolute(b(4), [0.0; 3], Z, foot);
        groups[3 * leg] = JointGroup {
            first: j0,
            count: 3,
            effort: 300.0,
        };
        groups[3 * leg + 1] = JointGroup {
            first: j0 + 3,
            count: 1,
            effort: 300.0,
        };
        groups[3 * leg + 2] = JointGroup {
            first: j0 + 4,
            count: 2,
            effort: 200.0,
        };
        contacts[leg].body = b(5);
        contacts[leg].points = [
            [-0.05, -0.05, 0.05],
            [-0.05, -0.05, -0.05],
            [0.15, -0.05, 0.05],
            [0.15, -0.05, -0.05],
        ];
    }
    (joints, groups, contacts)
}

fn biped(settings: BalanceSettings) -> Box<Biped> {
    biped_with_efforts(settings, |_, effort| effort)
}

/// The base pose that puts the soles on y = 0 with every joint at zero.
fn standing() -> Isometry3<f64> {
    Isometry3::from_parts(
        Translation3::new(0.0, 0.95, 0.0),
        UnitQuaternion::identity(),
    )
}

struct State {
    base: Isometry3<f64>,
    q: [f64; NV],
    v: [f64; NV],
}

/// Every point of each body touching as `planted` says.
fn whole(planted: &[bool]) -> [[bool; MAX_POINTS]; 2] {
    let mut points = [[false; MAX_POINTS]; 2];
    for (p, b) in points.iter_mut().zip(planted) {
        *p = [*b; MAX_POINTS];
    }
    points
}

fn tick(c: &mut Biped, s: &State, planted: &[bool]) -> BalanceOutput<NV> {
    tick_points(c, s, &whole(planted))
}

fn tick_points(c: &mut Biped, s: &State, points: &[[bool; MAX_POINTS]; 2]) -> BalanceOutput<NV> {
    c.tick(&BalanceInput {
        base_pose: &s.base,
        q: &s.q,
        v: &s.v,
        q_target: &[0.0; NV],
        upright_target: &UnitQuaternion::identity(),
        com_height_m: 0.85,
        planted: points,
        gravity: Vector3::from(G),
        tasks: &[],
    })
}

/// The kinematics of state `s` moved along its velocity for `dt` seconds (this test's own
/// integration of the base and the joints).
fn moved(c: &Biped, s: &State, dt: f64) -> crate::tree::TreeKinematics<NV> {
    let mut q = s.q;
    for (qk, vk) in q.iter_mut().zip(&s.v[6..]).take(c.tree().nv() - 6) {
        *qk += dt * vk;
    }
    let lin = Vector3::new(s.v[0], s.v[1], s.v[2]);
    let ang = Vector3::new(s.v[3], s.v[4], s.v[5]);
    let base = Isometry3::from_parts(
        Translation3::from(s.base.translation.vector + s.base.rotation * lin * dt),
        s.base.rotation * UnitQuaternion::from_scaled_axis(ang * dt),
    );
    c.tree().kinematics(&base, &q).unwrap()
}

/// A body's no-slip target `−J̇ q̇ − k_v J q̇` (6D: linear, angular), with J̇ q̇ from this test's
/// own central difference (a step other than the controller's).
fn no_slip_target(c: &Biped, s: &State, body: usize) -> [f64; 6] {
    let tree = c.tree();
    let identity = Placement::from_xyz_rpy([0.0; 3], [0.0; 3]);
    let v = SVector::<f64, NV>::from(s.v);
    let h = 3e-6;
    let mut jdot_v = SVector::<f64, 6>::zeros();
    for sign in [1.0, -1.0] {
        let kin = moved(c, s, sign * h);
        jdot_v += kin.frame_jacobian(body, &identity).unwrap() * v * (sign / (2.0 * h));
    }
    let kin = tree.kinematics(&s.base, &s.q).unwrap();
    let t = -jdot_v - kin.frame_jacobian(body, &identity).unwrap() * v * c.settings().contact_kv;
    [t[0], t[1], t[2], t[3], t[4], t[5]]
}

/// Checks a solved tick against the model independently: the equations of motion by RNEA
/// (base rows 0, joint rows the torques), the no-slip rows, the cones, the efforts.
fn check_solved(c: &Biped, s: &State, out: &BalanceOutput<NV>, planted: &[bool]) {
    check_solved_points(c, s, out, &whole(planted));
}

/// [`check_solved`] with the touching points given one by one: every touching point's
/// acceleration is its body's no-slip target carried to it.
fn check_solved_points(
    c: &Biped,
    s: &State,
    out: &BalanceOutput<NV>,
    planted: &[[bool; MAX_POINTS]; 2],
) {
    assert_eq!(out.status, BalanceStatus::Solved, "{:?}", out.qp);
    let tree = c.tree();
    let nv = tree.nv();
    let kin = tree.kinematics(&s.base, &s.q).unwrap();
    let mut generalized = kin
        .inverse_dynamics(&s.v, &out.accelerations, &Vector3::from(G))
        .unwrap();
    let identity = Placement::from_xyz_rpy([0.0; 3], [0.0; 3]);
    let mut p = 0;
    let mut total = Vector3::zeros();
    let a = SVector::<f64, NV>::from(out.accelerations);
    for (ci, cb) in c.contacts().iter().enumerate() {
        let pose = kin.body_pose(cb.body).unwrap();
        let jac = kin.frame_jacobian(cb.body, &identity).unwrap();
        let t = no_slip_target(c, s, cb.body);
        let body_accel = jac * a;
        for (point, _) in cb
            .points
            .iter()
            .zip(planted[ci])
            .take(cb.count)
            .filter(|(_, t)| *t)
        {
            let world = pose * nalgebra::Point3::from(*point);
            let d = world.coords - pose.translation.vector;
            // No slip: the point's J_p a equals the target carried to it.
            let want = Vector3::new(t[0], t[1], t[2]) + Vector3::new(t[3], t[4], t[5]).cross(&d);
            let got = Vector3::new(body_accel[0], body_accel[1], body_accel[2])
                + Vector3::new(body_accel[3], body_accel[4], body_accel[5]).cross(&d);
            assert!(
                (got - want).norm() < 1e-6 * (1.0 + want.norm()),
                "contact {ci}: no slip {got} vs {want}"
            );
            let f = Vector3::from(out.forces[p]);
            total += f;
            for col in 0..nv {
                let lin = Vector3::new(jac[(0, col)], jac[(1, col)], jac[(2, col)]);
                let ang = Vector3::new(jac[(3, col)], jac[(4, col)], jac[(5, col)]);
                generalized[col] -= (lin + ang.cross(&d)).dot(&f);
            }
            // The cone and the minimum normal force.
            let normal = f.y;
            let tangential = (f.x * f.x + f.z * f.z).sqrt();
            let settings = c.settings();
            assert!(normal >= settings.min_normal_n * (1.0 - 1e-6), "{normal}");
            assert!(tangential <= settings.friction * normal * (1.0 + 1e-6) + 1e-6);
            assert!((world.coords - Vector3::from(out.points[p])).norm() < 1e-12);
            p += 1;
        }
    }
    assert_eq!(p, out.point_count);
    let scale = 20.0 * 9.81;
    for i in 0..6 {
        assert!(
            generalized[i].abs() < 1e-6 * scale,
            "base row {i}: {}",
            generalized[i]
        );
    }
    for i in 6..nv {
        assert!(
            (generalized[i] - out.torques[i]).abs() < 1e-6 * scale,
            "joint row {i}: {} vs {}",
            generalized[i],
            out.torques[i]
        );
    }
    // Every group's torque vector within its effort and consistent with u = Sᵀ τ.
    for (g, group) in c.groups().iter().enumerate() {
        let tau = Vector3::from(out.group_torques[g]);
        assert!(tau.norm() <= group.effort, "group {g}: {}", tau.norm());
        for k in group.first..group.first + group.count {
            let axis = kin.joint_axis(k).unwrap();
            assert!(
                (axis.dot(&tau) - out.torques[6 + k]).abs() < 1e-9 * scale,
                "group {g} joint {k}"
            );
        }
    }
    assert!(total.y > 0.0);
}

#[test]
fn standing_still_is_solved_and_consistent() {
    let mut c = biped(BalanceSettings::DEFAULT);
    let s = State {
        base: standing(),
        q: [0.0; NV],
        v: [0.0; NV],
    };
    let out = tick(&mut c, &s, &[true, true]);
    check_solved(&c, &s, &out, &[true, true]);
    assert_eq!(out.point_count, 8);
    assert_eq!(out.failures_in_a_row, 0);
    // At rest, the feet carry about the weight (the centre of mass target is ahead of the
    // centre of mass, so a little more or less).
    let weight = (20.0 + 2.0 * 9.0) * 9.81;
    let normal: f64 = out.forces.iter().take(8).map(|f| f[1]).sum();
    assert!(
        (normal - weight).abs() < 0.2 * weight,
        "{normal} vs {weight}"
    );
    // One tick later the limits far from binding are left out (a smaller QP, started cold);
    // the tick after, the same state and the same QP warm-start.
    let second = tick(&mut c, &s, &[true, true]);
    assert_eq!(second.limits_left_out, 6);
    check_solved(&c, &s, &second, &[true, true]);
    let again = tick(&mut c, &s, &[true, true]);
    assert!(again.qp.unwrap().warm_started);
    check_solved(&c, &s, &again, &[true, true]);
}

/// The biped of [`biped_spec`] with each group's effort set by `effort(group, spec's effort)`.
fn biped_with_efforts(settings: BalanceSettings, effort: impl Fn(usize, f64) -> f64) -> Box<Biped> {
    let (joints, mut groups, contacts) = biped_spec();
    for (gi, g) in groups.iter_mut().enumerate() {
        g.effort = effort(gi, g.effort);
    }
    let tree = Tree::<NV>::new(&TreeSpec {
        base: BaseKind::Floating,
        base_body: body(20.0, [0.0; 3], 0.3),
        joints: &joints,
    })
    .unwrap();
    Box::new(Biped::new(tree, &contacts, &groups, settings).unwrap())
}

/// Largest difference of two ticks' torques, over the largest torque.
fn torque_gap(a: &BalanceOutput<NV>, b: &BalanceOutput<NV>) -> f64 {
    let largest = b.torques.iter().fold(0.0f64, |m, t| m.max(t.abs()));
    let gap = a
        .torques
        .iter()
        .zip(&b.torques)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    gap / largest
}

/// Limits left out of the QP change nothing: where the torques stay inside the efforts the
/// relaxed QP's optimum is feasible, so it is the whole QP's (the same torques as with every
/// limit in, to the solver's tolerance); where a left-out limit binds, the tick is solved again
/// with it, and again gives the whole QP's torques, within the effort.
#[test]
fn limits_left_out_change_nothing_and_come_back_when_they_bind() {
    let all_in = BalanceSettings {
        screen_fraction: 0.0,
        ..BalanceSettings::DEFAULT
    };
    // The ankles' effort (groups 2 and 5) is what standing still needs with room to spare,
    // but not what the pushed, leaning body asks for.
    let ankle = |gi: usize, effort: f64| if gi % 3 == 2 { ANKLE_EFFORT } else { effort };
    let mut full = biped_with_efforts(all_in, ankle);
    let mut screened = biped_with_efforts(BalanceSettings::DEFAULT, ankle);
    let still = State {
        base: standing(),
        q: [0.0; NV],
        v: [0.0; NV],
    };
    // The first tick has no torques to judge by: every limit in.
    let first = tick(&mut screened, &still, &[true, true]);
    assert_eq!((first.solves, first.limits_left_out), (1, 0));
    tick(&mut full, &still, &[true, true]);
    // Standing still, every group far below its effort: all six left out, one solve.
    let a = tick(&mut screened, &still, &[true, true]);
    let b = tick(&mut full, &still, &[true, true]);
    check_solved(&screened, &still, &a, &[true, true]);
    assert_eq!((a.solves, a.limits_left_out), (1, 6));
    assert_eq!(b.limits_left_out, 0);
    // The same optimum, to what the solver's tolerances (1e-8 on residuals and gap) leave of
    // the weakly weighted directions (how the force spreads over a sole's corners): 1.8e-6.
    let gap = torque_gap(&a, &b);
    assert!(gap < 1e-5, "{gap}");
    // Pushed and leaning: the ankles' limit, left out, binds: solved again with it in.
    let pushed = leaning_state(false);
    let a = tick(&mut screened, &pushed, &[true, true]);
    let b = tick(&mut full, &pushed, &[true, true]);
    check_solved(&screened, &pushed, &a, &[true, true]);
    assert_eq!(a.solves, 2, "{:?}", a.group_torques);
    assert_eq!(a.limits_left_out, 4);
    for gi in [2, 5] {
        let norm = Vector3::from(b.group_torques[gi]).norm();
        assert!(norm > 0.999 * ANKLE_EFFORT, "group {gi}: {norm}");
        let norm = Vector3::from(a.group_torques[gi]).norm();
        assert!(norm <= ANKLE_EFFORT, "group {gi}: {norm}");
    }
    let gap = torque_gap(&a, &b);
    assert!(gap < 1e-5, "{gap}");
}

/// See [`limits_left_out_change_nothing_and_come_back_when_they_bind`].
const ANKLE_EFFORT: f64 = 20.0;

#[test]
fn a_pushed_leaning_body_is_solved_and_consistent() {
    let mut c = biped(BalanceSettings::DEFAULT);
    let s = leaning_state(false);
    let out = tick(&mut c, &s, &[true, true]);
    check_solved(&c, &s, &out, &[true, true]);
    let one = tick(&mut c, &s, &[true, false]);
    check_solved(&c, &s, &one, &[true, false]);
    assert_eq!(one.point_count, 4);
    assert!(
        !one.qp.unwrap().warm_started,
        "the contact set changed: a cold start"
    );
}

/// The body leaning forward at the ankles' z joints, the knees a little bent, the base moving
/// forward as after a push; `turning`: the hips turning too (the feet's corners then
/// accelerate differently).
fn leaning_state(turning: bool) -> State {
    let mut q = [0.0; NV];
    q[3] = -0.2;
    q[9] = -0.2;
    q[2] = 0.1;
    q[8] = 0.1;
    q[5] = 0.1;
    q[11] = 0.1;
    let mut v = [0.0; NV];
    v[0] = 0.3;
    v[5] = -0.2;
    if turning {
        v[2] = 0.4;
        v[11] = -0.5;
    }
    State {
        base: Isometry3::from_parts(
            Translation3::new(0.02, 0.94, 0.0),
            UnitQuaternion::from_axis_angle(&Vector3::z_axis(), -0.05),
        ),
        q,
        v,
    }
}

/// [`leaning_state`] with the hips turning.
fn leaning() -> State {
    leaning_state(true)
}

#[test]
fn a_flat_foot_is_held_by_its_six_rows_at_every_corner() {
    // Four corners spanning the sole: the foot's own six no-slip rows stand for the corners'
    // twelve (of rank six), none left out, and every corner's no-slip row holds
    // (`check_solved`).
    let mut c = biped(BalanceSettings::DEFAULT);
    for s in [
        State {
            base: standing(),
            q: [0.0; NV],
            v: [0.0; NV],
        },
        leaning(),
    ] {
        let out = tick(&mut c, &s, &[true, true]);
        check_solved(&c, &s, &out, &[true, true]);
        assert_eq!(out.dependent_rows, 0);
        assert_eq!(out.slip_inconsistency, 0.0);
    }
}

#[test]
fn a_foot_on_its_front_corners_is_free_to_roll_about_them() {
    // The right foot on its two front corners (on one line: their own rows, not the foot's):
    // six rows of rank five (turning about the line through them is free), so one left out,
    // its right-hand side the kept rows' to rounding; the left foot flat, by its six rows.
    let mut c = biped(BalanceSettings::DEFAULT);
    let s = leaning();
    let planted = [[true; MAX_POINTS], [false, false, true, true]];
    let out = tick_points(&mut c, &s, &planted);
    check_solved_points(&c, &s, &out, &planted);
    assert_eq!(out.point_count, 6);
    assert_eq!(out.dependent_rows, 1);
    assert!(out.slip_inconsistency < 1e-9, "{}", out.slip_inconsistency);
    // The rolling foot's angular acceleration about the corner line is not held: it differs
    // from the flat foot's no-slip target there.
    let kin = c.tree().kinematics(&s.base, &s.q).unwrap();
    let identity = Placement::from_xyz_rpy([0.0; 3], [0.0; 3]);
    let right = c.contacts()[1].body;
    let alpha =
        kin.frame_jacobian(right, &identity).unwrap() * SVector::<f64, NV>::from(out.accelerations);
    let line = (kin.body_pose(right).unwrap().rotation * Vector3::z()).normalize();
    let t = no_slip_target(&c, &s, right);
    let free = Vector3::new(alpha[3], alpha[4], alpha[5]).dot(&line);
    let held = Vector3::new(t[3], t[4], t[5]).dot(&line);
    assert!((free - held).abs() > 1e-3, "{free} vs {held}");
}

#[test]
fn the_support_centroid_is_the_hulls_not_the_points_mean() {
    let (t1, t2) = (Vector3::x(), Vector3::z());
    let at = |a: f64, b: f64| [a, 0.3, b];
    // A 0.2 × 0.1 m sole and, in front, two toe corners on its front edge: the hull is the
    // sole (centroid 0.1), the points' mean 0.133 towards the toes.
    let foot = [
        at(0.0, 0.0),
        at(0.0, 0.1),
        at(0.2, 0.0),
        at(0.2, 0.1),
        at(0.2, 0.02),
        at(0.2, 0.08),
    ];
    let c = support_centroid(&foot, &t1, &t2).unwrap();
    assert!((c - Vector3::new(0.1, 0.0, 0.05)).norm() < 1e-12, "{c}");
    // A triangle: the mean of its corners.
    let tri = [at(0.0, 0.0), at(0.3, 0.0), at(0.0, 0.3), at(0.05, 0.05)];
    let c = support_centroid(&tri, &t1, &t2).unwrap();
    assert!((c - Vector3::new(0.1, 0.0, 0.1)).norm() < 1e-12, "{c}");
    // Any order of the points gives the same centroid.
    let mut shuffled = foot;
    shuffled.reverse();
    shuffled.swap(1, 4);
    let c = support_centroid(&shuffled, &t1, &t2).unwrap();
    assert!((c - Vector3::new(0.1, 0.0, 0.05)).norm() < 1e-12, "{c}");
    // No area: a line or a point has none; nothing, none.
    assert_eq!(
        support_centroid(&[at(0.0, 0.0), at(0.1, 0.0), at(0.2, 0.0)], &t1, &t2),
        None
    );
    assert_eq!(support_centroid(&[at(0.1, 0.1); 4], &t1, &t2), None);
    assert_eq!(support_centroid(&[], &t1, &t2), None);
}

proptest! {
    #[test]
    fn the_support_centroid_lies_inside_the_points_box(
        pts in proptest::collection::vec((-1.0f64..1.0, -1.0f64..1.0), 0..40)
    ) {
        let points: std::vec::Vec<[f64; 3]> = pts.iter().map(|&(a, b)| [a, 0.0, b]).collect();
        if let Some(c) = support_centroid(&points, &Vector3::x(), &Vector3::z()) {
            let used = points.len().min(MAX_ALL_POINTS);
            let (lo_a, hi_a) = points[..used].iter().fold((f64::MAX, f64::MIN), |(l, h), p| (l.min(p[0]), h.max(p[0])));
            let (lo_b, hi_b) = points[..used].iter().fold((f64::MAX, f64::MIN), |(l, h), p| (l.min(p[2]), h.max(p[2])));
            prop_assert!(c.x >= lo_a - 1e-12 && c.x <= hi_a + 1e-12);
            prop_assert!(c.z >= lo_b - 1e-12 && c.z <= hi_b + 1e-12);
            prop_assert!(c.y.abs() < 1e-15);
        }
    }
}

#[test]
fn a_point_task_drives_a_swing_foot_at_its_spring() {
    // The right foot in the air, a task on its toe corner 5 cm ahead of it (moving, with its
    // velocity and acceleration fed forward): the solved
    // acceleration of that point is the task's spring (the other objectives barely feel a
    // 1 kg foot), and without the task it is not.
    let settings = BalanceSettings {
        task_weight: 100.0,
        ..BalanceSettings::DEFAULT
    };
    let mut c = biped(settings);
    let s = leaning();
    let foot = c.contacts()[1].body;
    let point = [0.15, -0.05, 0.0];
    let kin = c.tree().kinematics(&s.base, &s.q).unwrap();
    let (jp, x) = point_jacobian(&kin, foot, point).unwrap();
    let target = x + Vector3::new(0.05, 0.0, 0.0);
    let task = PointTask {
        body: foot,
        point,
        target: target.into(),
        target_velocity: [0.1, 0.0, 0.0],
        target_acceleration: [0.0, 0.5, 0.0],
    };
    let planted = [[true; MAX_POINTS], [false; MAX_POINTS]];
    let solve = |c: &mut Biped, tasks: &[PointTask]| {
        c.tick(&BalanceInput {
            base_pose: &s.base,
            q: &s.q,
            v: &s.v,
            q_target: &[0.0; NV],
            upright_target: &UnitQuaternion::identity(),
            com_height_m: 0.85,
            planted: &planted,
            gravity: Vector3::from(G),
            tasks,
        })
    };
    let out = solve(&mut c, &[task]);
    check_solved_points(&c, &s, &out, &planted);
    assert!((Vector3::from(out.task_points[0]) - x).norm() < 1e-12);
    // J̇_p q̇ by this test's own central difference.
    let v = SVector::<f64, NV>::from(s.v);
    let h = 3e-6;
    let mut jdot_v = Vector3::zeros();
    for sign in [1.0, -1.0] {
        let kin = moved(&c, &s, sign * h);
        let (jp, _) = point_jacobian(&kin, foot, point).unwrap();
        jdot_v += jp * v * (sign / (2.0 * h));
    }
    let accel = |out: &BalanceOutput<NV>| jp * SVector::<f64, NV>::from(out.accelerations) + jdot_v;
    let spring = Vector3::new(0.0, 0.5, 0.0)
        + (target - x) * settings.task_kp
        + (Vector3::new(0.1, 0.0, 0.0) - jp * v) * settings.task_kd;
    let got = accel(&out);
    assert!(
        (got - spring).norm() < 0.05 * spring.norm(),
        "{got} vs {spring}"
    );
    let mut free = biped(settings);
    let without = accel(&solve(&mut free, &[]));
    assert!((without - spring).norm() > 0.5 * spring.norm(), "{without}");
    // Refused: too many tasks, a body past the tree, a non-finite target.
    let bad = [
        [task; MAX_TASKS + 1].to_vec(),
        std::vec![PointTask { body: 99, ..task }],
        std::vec![PointTask {
            target: [f64::NAN, 0.0, 0.0],
            ..task
        }],
    ];
    for tasks in &bad {
        assert_eq!(
            solve(&mut c, tasks).status,
            BalanceStatus::Input(BalanceInputField::Tasks)
        );
    }
}

#[test]
fn an_infeasible_problem_falls_back_to_the_last_torques_decayed() {
    let settings = BalanceSettings::DEFAULT;
    let mut c = biped(settings);
    let s = State {
        base: standing(),
        q: [0.0; NV],
        v: [0.0; NV],
    };
    let good = tick(&mut c, &s, &[true, true]);
    assert_eq!(good.status, BalanceStatus::Solved);
    // A minimum normal force no effort can push into the ground.
    let mut c2 = biped(BalanceSettings {
        min_normal_n: 5e4,
        ..settings
    });
    let first = tick(&mut c2, &s, &[true, true]);
    assert!(
        matches!(
            first.status,
            BalanceStatus::NotSolved(Status::PrimalInfeasible)
        ),
        "{:?}",
        first.status
    );
    assert!(
        first.torques.iter().all(|t| *t == 0.0),
        "nothing solved yet: zero"
    );
    // The same controller after a good tick: the good torques times the decay, then again.
    let mut c3 = biped(settings);
    let good = tick(&mut c3, &s, &[true, true]);
    let bad_input = State {
        v: {
            let mut v = [0.0; NV];
            v[7] = f64::NAN;
            v
        },
        ..s
    };
    let f1 = tick(&mut c3, &bad_input, &[true, true]);
    assert_eq!(f1.status, BalanceStatus::Input(BalanceInputField::Velocity));
    let f2 = tick(&mut c3, &bad_input, &[true, true]);
    assert_eq!(f2.failures_in_a_row, 2);
    for i in 0..NV {
        assert_eq!(f1.torques[i], good.torques[i] * settings.fallback_decay);
        assert_eq!(f2.torques[i], f1.torques[i] * settings.fallback_decay);
    }
    for g in 0..6 {
        for e in 0..3 {
            assert_eq!(
                f1.group_torques[g][e],
                good.group_torques[g][e] * settings.fallback_decay
            );
        }
    }
    let back = tick(&mut c3, &s, &[true, true]);
    assert_eq!(back.status, BalanceStatus::Solved);
    assert_eq!(back.failures_in_a_row, 0);
}

#[test]
fn bad_specs_are_refused_by_name() {
    let (joints, groups, contacts) = biped_spec();
    let tree = || {
        Tree::<NV>::new(&TreeSpec {
            base: BaseKind::Floating,
            base_body: body(20.0, [0.0; 3], 0.3),
            joints: &joints,
        })
        .unwrap()
    };
    let s = BalanceSettings::DEFAULT;
    let build = |c: &[ContactBody], g: &[JointGroup], s| Biped::new(tree(), c, g, s).err();
    assert_eq!(
        build(&contacts, &groups[..5], s),
        Some(BalanceError::BadGroup { index: 5 })
    );
    let mut g = groups;
    g[1].effort = f64::NAN;
    assert_eq!(
        build(&contacts, &g, s),
        Some(BalanceError::BadGroup { index: 1 })
    );
    let mut g = groups;
    g[0].count = 2;
    assert_eq!(
        build(&contacts, &g, s),
        Some(BalanceError::BadGroup { index: 1 })
    );
    let mut c = contacts;
    c[1].body = 99;
    assert_eq!(
        build(&c, &groups, s),
        Some(BalanceError::BadContact { index: 1 })
    );
    let mut c = contacts;
    c[0].count = 0;
    assert_eq!(
        build(&c, &groups, s),
        Some(BalanceError::BadContact { index: 0 })
    );
    assert_eq!(
        build(&contacts, &groups, BalanceSettings { friction: 0.0, ..s }),
        Some(BalanceError::BadSettings("friction"))
    );
    assert_eq!(
        Balance::<NV, 40, NR>::new(tree(), &contacts, &groups, s).err(),
        Some(BalanceError::Capacity("QP variables (NX)"))
    );
    assert_eq!(
        Balance::<NV, NX, 60>::new(tree(), &contacts, &groups, s).err(),
        Some(BalanceError::Capacity("QP rows (NR)"))
    );
    // A fixed base.
    let fixed = Tree::<NV>::new(&TreeSpec {
        base: BaseKind::Fixed,
        base_body: body(20.0, [0.0; 3], 0.3),
        joints: &joints,
    })
    .unwrap();
    assert_eq!(
        Biped::new(fixed, &contacts, &groups, s).err(),
        Some(BalanceError::FixedBase)
    );
}

const ORDERS: [[usize; 3]; 6] = [
    [0, 1, 2],
    [0, 2, 1],
    [1, 0, 2],
    [1, 2, 0],
    [2, 0, 1],
    [2, 1, 0],
];

fn axis(n: usize) -> Unit<Vector3<f64>> {
    [Vector3::x_axis(), Vector3::y_axis(), Vector3::z_axis()][n]
}

fn compose(angles: [f64; 3], order: [usize; 3]) -> Rotation3<f64> {
    Rotation3::from_axis_angle(&axis(order[0]), angles[0])
        * Rotation3::from_axis_angle(&axis(order[1]), angles[1])
        * Rotation3::from_axis_angle(&axis(order[2]), angles[2])
}

proptest! {
    #[test]
    fn euler_angles_invert_their_composition(
        a in -3.1f64..3.1, b in -1.5f64..1.5, g in -3.1f64..3.1, o in 0usize..6,
    ) {
        let order = ORDERS[o];
        let r = compose([a, b, g], order);
        let back = euler_angles(r.matrix(), order).unwrap();
        prop_assert!((back[0] - a).abs() < 1e-9 && (back[1] - b).abs() < 1e-9 && (back[2] - g).abs() < 1e-9,
            "{:?} vs {:?}", back, [a, b, g]);
    }

    #[test]
    fn euler_rates_give_the_angular_velocity(
        a in -3.0f64..3.0, b in -1.4f64..1.4, g in -3.0f64..3.0, o in 0usize..6,
        w in prop::array::uniform3(-5.0f64..5.0),
    ) {
        let order = ORDERS[o];
        let angles = [a, b, g];
        let omega = Vector3::from(w);
        let rates = euler_rates(angles, order, &omega).unwrap();
        // R(t + h) R(t)ᵀ ≈ exp(h [ω]×): the angular velocity (parent axes) of the rates.
        let h = 1e-5;
        let ahead = compose([a + h * rates[0], b + h * rates[1], g + h * rates[2]], order);
        let behind = compose([a - h * rates[0], b - h * rates[1], g - h * rates[2]], order);
        let turn = UnitQuaternion::from_rotation_matrix(&(ahead * behind.inverse())).scaled_axis()
            / (2.0 * h);
        prop_assert!((turn - omega).norm() < 1e-6 * (1.0 + omega.norm()), "{turn} vs {omega}");
    }

    /// Whatever the numbers in the state, a tick returns finite torques within the efforts, in at
    /// most three solves (the tick before stands still, so every torque limit is left out of the
    /// first).
    #[test]
    fn no_input_gives_a_non_finite_or_oversized_torque(
        bits in prop::collection::vec(any::<u64>(), 3 * NV + 8),
        planted in prop::array::uniform2(any::<bool>()),
        sane in any::<bool>(),
    ) {
        let mut c = biped(BalanceSettings::DEFAULT);
        let value = |i: usize| {
            let x = f64::from_bits(bits[i]);
            if sane { (x.to_bits() % 2001) as f64 / 1000.0 - 1.0 } else { x }
        };
        let mut s = State { base: standing(), q: [0.0; NV], v: [0.0; NV] };
        for k in 0..NV {
            s.q[k] = value(k);
            s.v[k] = value(NV + k);
        }
        s.base = Isometry3::from_parts(
            Translation3::new(value(3 * NV), 0.95 + value(3 * NV + 1), value(3 * NV + 2)),
            UnitQuaternion::from_scaled_axis(Vector3::new(value(3 * NV + 3), value(3 * NV + 4), value(3 * NV + 5))),
        );
        let still = State { base: standing(), q: [0.0; NV], v: [0.0; NV] };
        tick(&mut c, &still, &[true, true]);
        let calm = tick(&mut c, &still, &[true, true]);
        prop_assert_eq!(calm.limits_left_out, 6);
        let out = tick(&mut c, &s, &planted);
        prop_assert!(out.solves <= 3, "{} solves", out.solves);
        prop_assert!(out.torques.iter().all(|t| t.is_finite()));
        for (g, group) in c.groups().iter().enumerate() {
            let tau = Vector3::from(out.group_torques[g]);
            prop_assert!(tau.iter().all(|t| t.is_finite()));
            prop_assert!(tau.norm() <= group.effort);
        }
    }
}

#[test]
fn a_bodys_own_rows_stand_for_its_points_only_when_they_span_a_plane() {
    let v = |x: f64, y: f64, z: f64| Vector3::new(x, y, z);
    let corners = [
        v(0.1, -0.05, 0.06),
        v(0.1, -0.05, -0.06),
        v(-0.1, -0.05, 0.06),
        v(-0.1, -0.05, -0.06),
    ];
    assert!(super::spans_plane(corners.iter().copied()));
    assert!(super::spans_plane(corners.iter().copied().take(3)));
    // Two corners, three on one line, one point, none: the points' own rows.
    assert!(!super::spans_plane(corners.iter().copied().take(2)));
    let line = [v(0.0, 0.0, 0.0), v(0.1, 0.0, 0.0), v(0.2, 0.0, 0.0)];
    assert!(!super::spans_plane(line.iter().copied()));
    assert!(!super::spans_plane(corners.iter().copied().take(1)));
    assert!(!super::spans_plane(core::iter::empty()));
    // Nearly on one line (1e-5 m off a 0.2 m segment): below PLANE_AREA, the points' rows.
    let thin = [v(0.0, 0.0, 0.0), v(0.2, 0.0, 0.0), v(0.1, 1e-5, 0.0)];
    assert!(!super::spans_plane(thin.iter().copied()));
}

/// The no-slip rows' products are nalgebra's, bit for bit, at every size a tree's velocity can
/// have from 2 to 40 (the special sums of 2, 3 and 4 entries, whole blocks of eight and the
/// rest), over entries of every magnitude and sign.
#[test]
fn slip_products_are_nalgebras_bit_for_bit() {
    fn check<const N: usize>() {
        for seed in 0..50u64 {
            let entry = |i: usize, salt: u64| {
                let t = (i as f64 + 1.0) * (seed as f64 * 0.7 + salt as f64 * 1.3 + 0.1);
                libm::sin(t) * libm::pow(10.0, (libm::cos(3.0 * t) * 8.0).round())
            };
            let a = nalgebra::SVector::<f64, N>::from_fn(|i, _| entry(i, 1));
            let b = nalgebra::SVector::<f64, N>::from_fn(|i, _| entry(i, 2));
            let want = a.dot(&b);
            let got = super::dot_in_nalgebra_order(a.as_slice(), b.as_slice());
            assert_eq!(got.to_bits(), want.to_bits(), "N = {N}, seed {seed}");
        }
    }
    macro_rules! sizes {
        ($($n:literal)*) => { $(check::<$n>();)* };
    }
    sizes!(2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40);
}

/// [`legged::LeggedBalance`] on the test biped: standing, it plants the loaded feet (held a
/// tick after their last load), solves, and refuses more feet than its capacity.
#[test]
fn a_legged_balance_plants_the_loaded_feet_and_holds_them_a_tick() {
    use legged::{LeggedBalance, LeggedInput, LeggedSpec};
    use step::{StepSettings, Stepper};
    let (_, _, contacts) = biped_spec();
    let spec = |stepper| LeggedSpec {
        feet: &contacts,
        pose: &[0.0; NV],
        upright: UnitQuaternion::identity(),
        com_height_m: 0.85,
        gravity: Vector3::from(G),
        stepper,
        contact_hold_ticks: 1,
    };
    assert!(
        LeggedBalance::<NV, NX, NR, 1>::new(*biped(BalanceSettings::DEFAULT), spec(None)).is_none()
    );
    let mut c = Box::new(
        LeggedBalance::<NV, NX, NR, 2>::new(
            *biped(BalanceSettings::DEFAULT),
            spec(Stepper::new(StepSettings::DEFAULT)),
        )
        .expect("two feet fit"),
    );
    let (base, q, v) = (standing(), [0.0; NV], [0.0; NV]);
    let mut tick = |loads_n: &[f64]| {
        c.tick(&LeggedInput {
            time_s: 0.0,
            base: &base,
            q: &q,
            v: &v,
            loads_n,
        })
    };
    let both = tick(&[200.0, 200.0]);
    assert_eq!((both.status, both.point_count), (BalanceStatus::Solved, 8));
    assert!(both.torques.iter().all(|t| t.is_finite()));
    // The right foot's load gone: held one tick, then let go.
    assert_eq!(tick(&[200.0, 0.0]).point_count, 8);
    assert_eq!(tick(&[200.0, 0.0]).point_count, 4);
    // Loads missing for a foot: that foot is not planted (nothing read past them).
    assert_eq!(tick(&[200.0]).point_count, 4);
    assert!(!c.swinging());
    assert_eq!(c.steps(), (0, 0.0));
    assert_eq!(c.balance().tree().nv(), 18); // 6 base velocities and 12 joints
}

/// [`legged::PdHold`]: its static torque at the pose, its PD about it, its safe state's damping,
/// every torque within its effort (a non-finite one sent as 0, counted); bad gains refused.
#[test]
fn pd_hold_holds_its_pose_within_the_efforts() {
    use legged::{PdHold, limit_to_efforts};
    let pd = PdHold::<4>::new(
        &[0.1, -0.2],
        &[3.0, -1.0],
        &[100.0, 50.0],
        &[2.0, 1.0],
        &[20.0; 2],
    )
    .unwrap();
    assert_eq!(pd.joints(), 2);
    let (t, cut) = pd.tick(&[0.1, -0.2, 0.0, 0.0], &[0.0; 4]);
    assert_eq!((t, cut), ([3.0, -1.0, 0.0, 0.0], 0));
    let (t, cut) = pd.tick(&[0.0, -0.2, 9.0, 9.0], &[1.0, 0.5, 9.0, 9.0]);
    assert_eq!(t[0], 3.0 + 100.0 * 0.1 - 2.0);
    assert_eq!((t[1], t[2], cut), (-1.5, 0.0, 0));
    let (t, cut) = pd.tick(&[-1.0, f64::NAN, 0.0, 0.0], &[0.0; 4]);
    assert_eq!(cut, 2);
    assert!(
        (t[0] - 20.0).abs() < 1e-6 && t[0] < 20.0 && t[1] == 0.0,
        "{t:?}"
    );
    let (t, cut) = pd.safe(&[1.0, -1e9, 0.0, 0.0]);
    assert_eq!((t[0], cut), (-2.0, 1));
    assert!(t[1] > 0.0 && t[1] < 20.0);
    let bad = |kp: f64| PdHold::<4>::new(&[0.0], &[0.0], &[kp], &[0.0], &[1.0]).is_none();
    assert!(bad(-1.0) && bad(f64::NAN) && !bad(1.0));
    assert!(PdHold::<1>::new(&[0.0; 2], &[0.0; 2], &[0.0; 2], &[0.0; 2], &[1.0; 2]).is_none());
    assert!(PdHold::<4>::new(&[0.0; 2], &[0.0], &[0.0; 2], &[0.0; 2], &[1.0; 2]).is_none());
    let mut x = [f64::INFINITY, 0.5, 7.0];
    assert_eq!(limit_to_efforts(&mut x, &[1.0, 1.0]), 1);
    assert_eq!(x, [0.0, 0.5, 7.0]);
}

/// [`legged::PdHold`] behind [`crate::controller::Controller`]: the same torques, its cuts
/// counted as limits.
#[test]
fn pd_hold_is_a_controller() {
    use crate::controller::Controller;
    use legged::{PdHold, PdHoldInput};
    let mut pd = PdHold::<2>::new(&[0.0; 2], &[0.0; 2], &[100.0; 2], &[1.0; 2], &[5.0; 2]).unwrap();
    let (q, qd) = ([1.0, 0.01], [0.0; 2]);
    let c = Controller::tick(&mut pd, &PdHoldInput { q: &q, qd: &qd }).unwrap();
    assert_eq!((c.torques_nm, c.limited), pd.tick(&q, &qd));
    assert_eq!(PdHold::limits(&c).torque_limited, 1);
}
