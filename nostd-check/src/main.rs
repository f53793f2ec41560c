//! A freestanding program that calls control-core's public functions: it links only if
//! control-core and everything below it are `no_std` and never allocate.
#![no_std]
#![no_main]

use core::hint::black_box;
use core::panic::PanicInfo;

use control_core::articulated::nalgebra::{Isometry3, Vector3};
use control_core::articulated::{
    ArrivalSettings, Coupling, JointLosses, JointTarget, LinkSpec, TreeArrival, serial_tree,
};
use control_core::beat::{BeatConfig, BeatServo, BeatTarget, InertiaModel};
use control_core::dynamo::{
    Arrival, BodyInertia, BodyMotion, JointConfig, JointInertia, JointKind, PoseJointSpec,
    PoseServo, RootSpring, RootSpringConfig, Target, TargetSpace, heading, subtree_inertia_about,
};
use control_core::frames::{
    BodyId, Event, FrameGuard, STATE_FRAME_LEN, StateFrame, TORQUE_FRAME_LEN, TorqueFrame,
};
use control_core::gains::{ArrivalProblem, solve_arrival_gains};
use control_core::keyframes::{JointSafety, KeyframeLaw, KeyframeServo};
use control_core::lambert_w;
use control_core::reach::{Projector, Reach, ReachConfig, ccd_ik};
use control_core::servo::{ArrivalPlan, ArrivalServo, JointServo, JointState, ServoConfig};
use control_core::simbicon::{Gains, Simbicon, SimbiconConfig, WalkerState};
use control_core::tree::{BaseKind, Inertial, JointSpec, JointType, Placement, Tree, TreeSpec};

#[panic_handler]
fn panic(_info: &PanicInfo) -> ! {
    loop {}
}

// memcpy, memset and memcmp, which `core` calls for large copies, come from the C library here,
// as they come from any bare-metal runtime elsewhere. Linking it weakens neither proof: std
// would still clash on the `panic_impl` lang item, and Rust's `alloc` still needs a
// `#[global_allocator]` whatever malloc the C library has.
#[link(name = "c")]
unsafe extern "C" {}

/// The precompiled `core` of this target is built with `panic = "unwind"` and so references the
/// personality function, which std would provide (rust-lang/rust#106864). With
/// `panic = "abort"` nothing unwinds and it is never called. Defining it weakens neither proof:
/// std would still clash on the `panic_impl` lang item, an allocation would still find no
/// global allocator.
#[unsafe(no_mangle)]
pub extern "C" fn rust_eh_personality() {}

/// The entry point (no C runtime: linked with -nostartfiles).
#[unsafe(no_mangle)]
pub extern "C" fn _start() -> ! {
    let x = black_box(-0.2f64);
    let mut acc = 0.0;
    acc += lambert_w::w0(x).unwrap_or(0.0);
    acc += lambert_w::wm1(x).unwrap_or(0.0);
    acc += f64::from(lambert_w::w0_f32(black_box(0.5f32)).unwrap_or(0.0));
    acc += f64::from(lambert_w::wm1_f32(black_box(-0.1f32)).unwrap_or(0.0));
    acc += lambert_w::w0_from_branch_distance(black_box(1e-9)).unwrap_or(0.0);
    acc += lambert_w::wm1_from_branch_distance(black_box(1e-9)).unwrap_or(0.0);
    let problem = ArrivalProblem {
        inertia_kgm2: black_box(1.0),
        position_rad: black_box(1.0),
        velocity_rad_s: 0.0,
        setpoint_rad: 0.0,
        arrival_rad: 0.05,
        time_to_go_s: 1.0,
    };
    if let Ok(g) = solve_arrival_gains(&problem) {
        acc += g.damping_nms_per_rad;
    }
    if let Ok(mut servo) = ArrivalServo::new(ServoConfig::default()) {
        let plan = ArrivalPlan::approach(1.0, 0.05, 0.0, 1.0);
        if servo.set_plan(plan, 0.0).is_ok() {
            acc += servo.tick(0.0, JointState::default(), 0.0).torque_nm;
        }
    }
    // The wire's joint state is the servo's: a decoded state feeds a servo as it is.
    let mut state = StateFrame::new(1, 1, 0.005);
    let _ = state.push_joint(JointState {
        position_rad: acc,
        velocity_rad_s: 0.0,
    });
    let _ = state.push_event(Event::PlaneCrossed {
        body: BodyId(black_box(3)),
    });
    state.plant_rejected_frames = black_box(2);
    state.plant_over_limit_frames = black_box(1);
    let mut buf = [0u8; STATE_FRAME_LEN];
    if let Ok(n) = state.encode(&mut buf) {
        let mut guard = FrameGuard::new();
        if let Ok(f) = guard.accept::<StateFrame>(buf.get(..n).unwrap_or(&[])) {
            acc += f.sim_time_s + f64::from(f.plant_rejected_frames);
        }
        let _ = guard.reject_oversize(black_box(4096));
        acc += guard.rejected().total() as f64;
    }
    // A two-link chain as a tree (`serial_tree`): one control tick of each coupling, arrival
    // gains on the composite inertia; an "On the Beat!" tick on the single-link inertia.
    let link = LinkSpec {
        origin_xyz_m: [black_box(0.5), 0.0, 0.0],
        origin_rpy_rad: [0.0, 0.0, black_box(0.1)],
        axis: [0.0, 0.0, 1.0],
        mass_kg: black_box(2.0),
        com_m: [0.25, 0.0, 0.0],
        inertia_kgm2: [0.01, 0.0, 0.0, 0.05, 0.0, 0.05],
    };
    if let Ok(chain) = serial_tree::<2>(&[link, link]) {
        let q = [black_box(0.3), black_box(-0.7)];
        let base = Isometry3::identity();
        let gravity = Vector3::new(0.0, -9.81, 0.0);
        for coupling in [Coupling::ParentFeedforward, Coupling::InverseDynamics] {
            if let Ok(arrival) = TreeArrival::new(ArrivalSettings::default(), coupling) {
                let target = JointTarget {
                    pose_rad: black_box(0.5),
                    time_to_go_s: black_box(0.4),
                };
                if let Ok(command) =
                    arrival.tick(&chain, &base, &q, &[0.0; 2], &[target; 2], &gravity)
                {
                    acc += command.torques().iter().sum::<f64>();
                }
            }
        }
        if let Ok(beat) = BeatServo::new(BeatConfig {
            inertia: InertiaModel::SingleLink,
            ..BeatConfig::default()
        }) {
            let target = BeatTarget {
                pose_rad: black_box(0.5),
                velocity_rad_s: 0.0,
                segment_s: black_box(0.4),
            };
            if let Ok(command) = beat.tick(&chain, &base, &q, &[0.0; 2], &[target; 2], &gravity) {
                acc += command.torques().iter().sum::<f64>();
            }
        }
        // Through keyframes within efforts and losses (`control_core::keyframes`), and its
        // safe state.
        let losses = [JointLosses {
            damping: black_box(0.1),
            friction: 0.0,
        }; 2];
        if let (Some(safety), Ok(arrival)) = (
            JointSafety::<2>::new(2, &[black_box(20.0); 2], &losses, 0.005, 0.9, 20.0),
            TreeArrival::new(ArrivalSettings::default(), Coupling::InverseDynamics),
        ) && let Some(mut servo) =
            KeyframeServo::new(KeyframeLaw::Arrival(arrival), safety, gravity, 0.0025)
        {
            let frames = [(black_box(0.5), [0.2, 0.4]), (1.0, [0.0, 0.0])];
            if let Ok(sent) = servo.tick(&chain, &base, &q, &[0.0; 2], &frames, black_box(0.1)) {
                acc += sent.torques_nm.iter().sum::<f64>();
            }
            acc += safety.safe(&chain, &base, &q, &[1.0; 2]).torques_nm[0];
        }
        // A hinge and a slider as a kinematic tree: every evaluation, and the arrival and beat
        // ticks on it; then the same on a floating base.
        let joints = [
            JointSpec {
                parent_body: 0,
                kind: JointType::Revolute,
                origin: Placement::IDENTITY,
                axis: link.axis,
                body: Inertial {
                    mass_kg: link.mass_kg,
                    com_m: link.com_m,
                    inertia_kgm2: link.inertia_kgm2,
                },
            },
            JointSpec {
                parent_body: 1,
                kind: JointType::Prismatic,
                origin: Placement::from_xyz_rpy([0.5, 0.0, 0.0], [0.0, 0.0, 0.0]),
                axis: [1.0, 0.0, 0.0],
                body: Inertial {
                    mass_kg: link.mass_kg,
                    com_m: link.com_m,
                    inertia_kgm2: link.inertia_kgm2,
                },
            },
        ];
        for base in [BaseKind::Fixed, BaseKind::Floating] {
            let spec = TreeSpec {
                base,
                base_body: Inertial {
                    mass_kg: black_box(3.0),
                    com_m: [0.0; 3],
                    inertia_kgm2: [0.1, 0.0, 0.0, 0.1, 0.0, 0.1],
                },
                joints: &joints,
            };
            let Ok(tree) = Tree::<8>::new(&spec) else {
                continue;
            };
            let mut q = [0.0; 8];
            q[0] = black_box(0.3);
            q[1] = black_box(0.1);
            let pose = Isometry3::identity();
            let gravity = Vector3::new(0.0, 0.0, -9.81);
            if let Ok(kin) = tree.kinematics(&pose, &q) {
                acc += kin.mass_matrix().map_or(0.0, |m| m.sum());
                acc += kin.gravity(&gravity).map_or(0.0, |g| g.sum());
                acc += kin
                    .inverse_dynamics(&[black_box(0.2); 8], &[0.1; 8], &gravity)
                    .map_or(0.0, |t| t.sum());
                acc += kin.center_of_mass().map_or(0.0, |(m, _)| m);
                acc += kin.com_jacobian().map_or(0.0, |j| j.sum());
                acc += kin
                    .frame_jacobian(2, &Placement::IDENTITY)
                    .map_or(0.0, |j| j.sum());
                acc += kin.composite().map_or(0.0, |c| c.axis_inertia().sum());
                acc += kin.own_axis_inertia(0).unwrap_or(0.0);
            }
            if let Ok(arrival) = TreeArrival::new(ArrivalSettings::default(), Coupling::default()) {
                let target = JointTarget {
                    pose_rad: black_box(0.5),
                    time_to_go_s: black_box(0.4),
                };
                if let Ok(c) = arrival.tick(&tree, &pose, &q, &[0.0; 8], &[target; 8], &gravity) {
                    acc += c.torques().iter().sum::<f64>();
                }
            }
            if let Ok(beat) = BeatServo::new(BeatConfig::default()) {
                let target = BeatTarget {
                    pose_rad: black_box(0.5),
                    velocity_rad_s: 0.0,
                    segment_s: black_box(0.4),
                };
                if let Ok(c) = beat.tick(&tree, &pose, &q, &[0.0; 8], &[target; 8], &gravity) {
                    acc += c.torques().iter().sum::<f64>();
                }
            }
        }
        // Kenwright's hand control on a branching tree (both projectors) and its CCD IK.
        acc += reach_tree_tick();
        // Kenwright's hand control of the two-link chain (both projectors; the hand on its
        // second link, body 2), and CCD IK.
        let hand = Vector3::new(black_box(0.5), 0.0, 0.0);
        let target = Vector3::new(black_box(0.6), black_box(0.4), 0.0);
        for projector in [Projector::PseudoInverse, Projector::DynamicallyConsistent] {
            let config = ReachConfig {
                projector,
                hand_point_m: hand.into(),
                stiffness_n_per_m: black_box(400.0),
                damping_ns_per_m: 40.0,
                posture_stiffness_nm_per_rad: 10.0,
                posture_damping_nms_per_rad: 2.0,
                gravity_compensation: true,
            };
            if let Ok(reach) = Reach::new(config) {
                let still = Vector3::zeros();
                if let Ok(command) = reach.tick(
                    &chain, &base, 2, &q, &[0.0; 2], &target, &still, &q, &gravity,
                ) {
                    acc += command.torques_nm.iter().sum::<f64>();
                }
            }
        }
        if let Ok(ik) = ccd_ik(&chain, &base, &q, 2, &hand, &target, black_box(20), 1e-4) {
            acc += ik.residual_m + ik.q_rad.iter().sum::<f64>();
        }
    }
    // SIMBICON's walk: one tick with the analytic gains for 200 Hz.
    if let Ok(mut walker) = Simbicon::new(SimbiconConfig {
        gains: Gains::analytic(black_box(1.0 / 200.0)),
        ..SimbiconConfig::default()
    }) {
        let state = WalkerState {
            torso_pitch_rad: black_box(0.05),
            foot_contact: [true, black_box(false)],
            ..WalkerState::default()
        };
        if let Ok(command) = walker.tick(&state) {
            acc += command.torques_nm.iter().sum::<f64>();
        }
    }
    acc += dynamo_tick();
    acc += humanoid_pose_tick();
    acc += body_map_state();
    acc += balance_tick();
    // The legged robots' PD baseline (`control_core::balance::legged::PdHold`).
    if let Some(pd) = control_core::balance::legged::PdHold::<2>::new(
        &[black_box(0.1), 0.2],
        &[1.0, -1.0],
        &[100.0; 2],
        &[2.0; 2],
        &[20.0; 2],
    ) {
        let (t, limited) = pd.tick(&[0.0, black_box(0.3)], &[1.0, 0.0]);
        acc += t.iter().sum::<f64>() + f64::from(limited) + pd.safe(&[black_box(3.0); 2]).0[1];
    }
    acc += walk3d_tick();
    acc += stabiliser_tick();
    let mut torque = TorqueFrame::new(1, 1);
    let _ = torque.push_torque(acc);
    let mut tbuf = [0u8; TORQUE_FRAME_LEN];
    if let Ok(n) = torque.encode(&mut tbuf) {
        acc += TorqueFrame::decode(tbuf.get(..n).unwrap_or(&[])).map_or(0.0, |f| f.step as f64);
    }
    #[cfg(feature = "micromath")]
    {
        acc += micromath_servo_tick();
    }
    #[cfg(feature = "fixed")]
    {
        acc += fixed_servo_tick();
    }
    black_box(acc);
    // Never returns (a freestanding entry point has nothing to return to); only linked, never run.
    loop {
        core::hint::spin_loop();
    }
}

/// The ground-contact stabiliser (`control_core::contact_stabiliser`): a foot (the floating
/// base) under a two-axis ankle and a knee, one tick with the shank leaning forward.
fn stabiliser_tick() -> f64 {
    use control_core::contact_stabiliser::{
        ContactStabiliser, SampleAxis, Sole, StabiliserInput, StabiliserSettings,
    };
    let body = |mass_kg: f64, com_m: [f64; 3]| Inertial {
        mass_kg,
        com_m,
        inertia_kgm2: [
            0.05 * mass_kg,
            0.0,
            0.0,
            0.01 * mass_kg,
            0.0,
            0.05 * mass_kg,
        ],
    };
    let joint = |parent_body, origin: [f64; 3], axis, body| JointSpec {
        parent_body,
        kind: JointType::Revolute,
        origin: Placement::from_xyz_rpy(origin, [0.0; 3]),
        axis,
        body,
    };
    let joints = [
        joint(0, [0.0, 0.05, 0.0], [0.0, 0.0, 1.0], Inertial::ZERO),
        joint(
            1,
            [0.0; 3],
            [1.0, 0.0, 0.0],
            body(10.0, [black_box(0.09), 0.25, 0.0]),
        ),
        joint(
            2,
            [0.0, 0.5, 0.0],
            [0.0, 0.0, 1.0],
            body(20.0, [0.0, 0.25, 0.0]),
        ),
    ];
    let Ok(tree) = Tree::<9>::new(&TreeSpec {
        base: BaseKind::Floating,
        base_body: body(1.0, [0.0; 3]),
        joints: &joints,
    }) else {
        return 0.0;
    };
    let axis = |axis_joint, group_first, group_count| SampleAxis {
        axis_joint,
        group_first,
        group_count,
        max_nm: 60.0,
    };
    let Ok(mut s) = ContactStabiliser::new(tree, StabiliserSettings::DEFAULT) else {
        return 0.0;
    };
    let out = s.tick(&StabiliserInput {
        base_pose: &Isometry3::translation(0.0, 0.05, 0.0),
        q: &[0.0; 9],
        v: &[0.0; 9],
        tau: &[0.0; 9],
        joint_torques: &[],
        gravity: Vector3::new(0.0, -9.81, 0.0),
        planted: &[0],
        stance_bodies: 1,
        locked: &[],
        sole: Sole {
            body: 0,
            centre_m: [0.0, -0.05, 0.0],
            forward: [1.0, 0.0, 0.0],
            left: [0.0, 0.0, -1.0],
            half_length_m: 0.1,
            half_width_m: 0.05,
        },
        axes: &[axis(0, 0, 2), axis(1, 0, 2), axis(2, 2, 1)],
        loads: &[],
        measured: Some([100.0, 100.0, 300.0, 300.0]),
    });
    out.supplement_nm.iter().sum::<f64>() + out.predicted.r_sag
}

/// The 3D walker (`control_core::simbicon3d`): Cartwheel's Bip walking controller on a
/// 15-body humanoid's joints, one tick standing, then one through stable PD, then the whole
/// walking controller (`control_core::walker3d`).
fn walk3d_tick() -> f64 {
    use control_core::articulated::nalgebra::Vector3;
    use control_core::contact_stabiliser::stance::StanceInput;
    use control_core::dynamo::JointKind;
    use control_core::frames::BodyMotion;
    use control_core::simbicon3d::{
        BipRoles, BodyJoint, Side, SideJoints, Simbicon3d, Simbicon3dConfig, Walk3dInput,
    };
    use control_core::stable_pd::{SpdJoint, StablePd};
    use control_core::walker3d::{Walker3d, Walker3dInput, Walker3dSpec};
    let masses = [
        12.9, 22.5, 5.2, 2.2, 1.7, 2.2, 1.7, 6.6, 3.2, 1.0, 0.2, 6.6, 3.2, 1.0, 0.2,
    ];
    let (ball, hy, hz) = (
        JointKind::Ball,
        JointKind::Hinge { axis: Vector3::y() },
        JointKind::Hinge { axis: Vector3::z() },
    );
    let ankle = JointKind::TwoAxis {
        axes: [Vector3::x(), Vector3::z()],
    };
    let pairs = [
        (0, 1, ball),
        (1, 2, ball),
        (1, 3, ball),
        (3, 4, hy),
        (1, 5, ball),
        (5, 6, hy),
        (0, 7, ball),
        (7, 8, hz),
        (8, 9, ankle),
        (9, 10, hz),
        (0, 11, ball),
        (11, 12, hz),
        (12, 13, ankle),
        (13, 14, hz),
    ];
    let joints = pairs.map(|(parent, child, kind)| BodyJoint {
        parent,
        child,
        kind,
        effort_nm: 400.0,
    });
    let side = |hip: usize, shoulder: usize, foot_body: usize| SideJoints {
        hip,
        knee: hip + 1,
        ankle: hip + 2,
        toe: Some(hip + 3),
        shoulder: Some(shoulder),
        elbow: Some(shoulder + 1),
        foot_body,
    };
    let roles = BipRoles {
        root_body: 0,
        waist: 0,
        neck: 1,
        sides: [side(6, 2, 9), side(10, 4, 13)],
    };
    let Ok(config) = Simbicon3dConfig::cartwheel_bip_walking(&masses, &joints, roles, Side::Left)
    else {
        return 0.0;
    };
    let Ok(mut walker) = Simbicon3d::new(config.clone()) else {
        return 0.0;
    };
    let mut bodies = [BodyMotion::default(); 15];
    for (k, b) in bodies.iter_mut().enumerate() {
        b.com_m[1] = black_box(0.07 * k as f64);
    }
    let input = Walk3dInput {
        time_s: black_box(0.1),
        bodies: &bodies,
        foot_up_force_n: [black_box(600.0), 100.0],
        desired_velocity_m_s: [0.0, black_box(0.2)],
        desired_heading_rad: 0.0,
    };
    let plain = walker
        .tick(&input)
        .map_or(0.0, |c| c.torques_nm.iter().flatten().sum::<f64>());
    // The same walker through stable PD (`control_core::stable_pd`), one tick later.
    let inertia = [[black_box(0.1); 3]; 15];
    let spd_joints = pairs.map(|(parent, child, _)| SpdJoint { parent, child });
    let Ok(mut spd) = StablePd::new(&inertia, &spd_joints, black_box(1.0 / 300.0)) else {
        return plain;
    };
    let later = Walk3dInput {
        time_s: black_box(0.1 + 1.0 / 300.0),
        ..input
    };
    let stepped = plain
        + walker
            .tick_stable_pd(&later, &mut spd)
            .map_or(0.0, |(c, _)| c.torques_nm.iter().flatten().sum::<f64>());
    // The whole walking controller (`control_core::walker3d`): the walker through stable PD on
    // a schedule of coronal speeds, one tick and its safe state.
    let (Ok(w), Ok(spd)) = (
        Simbicon3d::new(config),
        StablePd::new(&inertia, &spd_joints, black_box(1.0 / 300.0)),
    ) else {
        return stepped;
    };
    let spec = Walker3dSpec {
        coronal_speeds_m_s: &[0.0, black_box(0.2)],
        steps_per_speed: 2,
        tuner: None,
        forward_targets_m_s: &[],
    };
    let Ok(mut whole) = Walker3d::new(w, Some(spd), None, &spec) else {
        return stepped;
    };
    let plant = StanceInput {
        bodies: &bodies,
        contact_normal_n: [black_box(500.0), 100.0, 0.0, 0.0],
        sole_corner_n: [[black_box(100.0); 4]; 2],
    };
    let ticked = whole
        .tick(&Walker3dInput {
            time_s: black_box(0.1),
            plant,
        })
        .map_or(0.0, |c| c.torques_nm.iter().sum::<f64>());
    stepped + ticked + whole.safe(&bodies).torques_nm.iter().sum::<f64>()
}

/// The balance QP (`control_core::balance`, its conic solver `control_core::qp`): a floating
/// pelvis on two legs (hip, knee, a two-axis ankle), each foot on four corners, one tick standing
/// and one pushed.
fn balance_tick() -> f64 {
    use control_core::articulated::nalgebra::{Translation3, UnitQuaternion};
    use control_core::balance::{
        Balance, BalanceInput, BalanceSettings, ContactBody, JointGroup, MAX_POINTS,
    };
    const NV: usize = 14;
    let body = |mass: f64, com: [f64; 3], i: f64| Inertial {
        mass_kg: mass,
        com_m: com,
        inertia_kgm2: [i, 0.0, 0.0, i, 0.0, i],
    };
    let joint = |parent: usize, xyz: [f64; 3], axis: [f64; 3], b: Inertial| JointSpec {
        parent_body: parent,
        kind: JointType::Revolute,
        origin: Placement::from_xyz_rpy(xyz, [0.0; 3]),
        axis,
        body: b,
    };
    let (x, z) = ([1.0, 0.0, 0.0], [0.0, 0.0, 1.0]);
    let mut joints = [joint(0, [0.0; 3], z, Inertial::ZERO); 8];
    let mut groups = [JointGroup {
        first: 0,
        count: 1,
        effort: 300.0,
    }; 6];
    let mut contacts = [ContactBody {
        body: 0,
        points: [[0.0; 3]; MAX_POINTS],
        count: 4,
    }; 2];
    for (leg, side) in [(0usize, 0.1), (1, -0.1)] {
        // Joint k's child is body k + 1: hip, knee, ankle (x, massless, then z, the foot).
        let j0 = 4 * leg;
        let thigh = body(5.0, [0.0, -0.2, 0.0], 0.07);
        let shin = body(3.0, [0.0, -0.2, 0.0], 0.04);
        let foot = body(1.0, [0.05, -0.03, 0.0], 0.003);
        joints[j0] = joint(0, [0.0, -0.1, side], z, thigh);
        joints[j0 + 1] = joint(j0 + 1, [0.0, -0.4, 0.0], z, shin);
        joints[j0 + 2] = joint(j0 + 2, [0.0, -0.4, 0.0], x, Inertial::ZERO);
        joints[j0 + 3] = joint(j0 + 3, [0.0; 3], z, foot);
        for (g, (first, count, effort)) in [(j0, 1, 300.0), (j0 + 1, 1, 300.0), (j0 + 2, 2, 200.0)]
            .into_iter()
            .enumerate()
        {
            groups[3 * leg + g] = JointGroup {
                first,
                count,
                effort,
            };
        }
        contacts[leg].body = j0 + 4;
        contacts[leg].points = [
            [-0.05, -0.05, 0.05],
            [-0.05, -0.05, -0.05],
            [0.15, -0.05, 0.05],
            [0.15, -0.05, -0.05],
        ];
    }
    let spec = TreeSpec {
        base: BaseKind::Floating,
        base_body: body(20.0, [0.0; 3], 0.3),
        joints: &joints,
    };
    let Ok(tree) = Tree::<NV>::new(&spec) else {
        return 0.0;
    };
    let Ok(mut balance) =
        Balance::<NV, 40, 80>::new(tree, &contacts, &groups, BalanceSettings::DEFAULT)
    else {
        return 0.0;
    };
    let base = Isometry3::from_parts(
        Translation3::new(0.0, 0.95, 0.0),
        UnitQuaternion::identity(),
    );
    let mut v = [0.0; NV];
    let mut acc = 0.0;
    for push in [0.0, 0.3] {
        v[0] = black_box(push);
        let out = balance.tick(&BalanceInput {
            base_pose: &base,
            q: &[0.0; NV],
            v: &v,
            q_target: &[0.0; NV],
            upright_target: &UnitQuaternion::identity(),
            com_height_m: 0.85,
            planted: &[[true; MAX_POINTS]; 2],
            gravity: Vector3::new(0.0, -9.81, 0.0),
            tasks: &[],
        });
        acc += out.torques.iter().sum::<f64>();
    }
    acc += humanoid_balance_tick(balance, contacts);
    if let Ok(balance) =
        Balance::<NV, 40, 80>::new(tree, &contacts, &groups, BalanceSettings::DEFAULT)
    {
        acc += legged_balance_tick(balance, &contacts, &base);
    }
    acc
}

/// A legged robot's balance controller (`control_core::balance::legged::LeggedBalance`) around
/// `balance_tick`'s QP, with the recovery step: one tick standing.
fn legged_balance_tick<const NV: usize, const NX: usize, const NR: usize>(
    balance: control_core::balance::Balance<NV, NX, NR>,
    feet: &[control_core::balance::ContactBody],
    base: &Isometry3<f64>,
) -> f64 {
    use control_core::articulated::nalgebra::UnitQuaternion;
    use control_core::balance::legged::{LeggedBalance, LeggedInput, LeggedSpec};
    use control_core::balance::step::{StepSettings, Stepper};
    let spec = LeggedSpec {
        feet,
        pose: &[0.0; NV],
        upright: UnitQuaternion::identity(),
        com_height_m: black_box(0.85),
        gravity: Vector3::new(0.0, -9.81, 0.0),
        stepper: Stepper::new(StepSettings::DEFAULT),
        contact_hold_ticks: 1,
    };
    let Some(mut legged) = LeggedBalance::<NV, NX, NR, 2>::new(balance, spec) else {
        return 0.0;
    };
    let out = legged.tick(&LeggedInput {
        time_s: 0.0,
        base,
        q: &[0.0; NV],
        v: &[0.0; NV],
        loads_n: &[black_box(200.0), 200.0],
    });
    out.torques.iter().sum::<f64>() + legged.steps().1
}

/// The humanoid balance controller (`control_core::balance::humanoid::HumanoidBalance`) around
/// `balance_tick`'s QP: the two legs' plant joints mapped to the tree (hip and knee hinges, the
/// ankle two-axis), each foot its own toes, one tick.
fn humanoid_balance_tick<const NV: usize, const NX: usize, const NR: usize>(
    balance: control_core::balance::Balance<NV, NX, NR>,
    contacts: [control_core::balance::ContactBody; 2],
) -> f64 {
    use control_core::articulated::nalgebra::UnitQuaternion;
    use control_core::balance::humanoid::{
        BodyMap, Coordinates, HumanoidBalance, HumanoidBalanceSpec, MappedJoint,
    };
    use control_core::frames::BodyMotion as Body;
    let hinge = Coordinates::Hinge { axis: Vector3::z() };
    let mut joints = [MappedJoint {
        parent: 0,
        child: 1,
        first: 0,
        count: 1,
        coordinates: hinge,
    }; 6];
    for leg in 0..2 {
        let (b, j) = (3 * leg, 4 * leg);
        joints[3 * leg] = MappedJoint {
            parent: 0,
            child: b + 1,
            first: j,
            count: 1,
            coordinates: hinge,
        };
        joints[3 * leg + 1] = MappedJoint {
            parent: b + 1,
            child: b + 2,
            first: j + 1,
            count: 1,
            coordinates: hinge,
        };
        joints[3 * leg + 2] = MappedJoint {
            parent: b + 2,
            child: b + 3,
            first: j + 2,
            count: 2,
            coordinates: Coordinates::TwoAxis { order: [0, 1, 2] },
        };
    }
    let Some(map) = BodyMap::new(0, &joints) else {
        return 0.0;
    };
    let spec = HumanoidBalanceSpec {
        map,
        contacts: [contacts[0], contacts[1], contacts[0], contacts[1]],
        masses: &[20.0, 5.0, 3.0, 1.0, 5.0, 3.0, 1.0],
        gravity: Vector3::new(0.0, black_box(-9.81), 0.0),
        com_height_m: 0.85,
        stepper: None,
        contact_hold_ticks: 1,
    };
    let Some(mut humanoid) = HumanoidBalance::new(balance, spec) else {
        return 0.0;
    };
    let mut bodies = [Body::default(); 7];
    bodies[0].com_m = [0.0, black_box(0.95), 0.0];
    let mut torques = [0.0; 18];
    let targets = [UnitQuaternion::identity(); 6];
    let status = humanoid.tick(
        0.0,
        &bodies,
        &targets,
        &[200.0, 200.0, 0.0, 0.0],
        &mut torques,
    );
    torques.iter().sum::<f64>() + f64::from(u8::from(status.is_some()))
}

/// Dynamo's servos: a three-body character (root, two children) with a ball joint and a hinge,
/// world, parent and person-space targets, arrival gains on the composite inertia, and the root
/// spring.
fn dynamo_tick() -> f64 {
    use control_core::articulated::nalgebra::{Unit, UnitQuaternion, Vector3};
    let mut acc = 0.0;
    let tilt = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), black_box(0.2));
    let bodies = [
        BodyMotion::at_rest(tilt),
        BodyMotion {
            orientation: UnitQuaternion::identity(),
            angular_velocity_rad_s: Vector3::new(black_box(0.3), 0.0, 0.0),
        },
        BodyMotion::at_rest(tilt),
    ];
    let body = |mass_kg, com: [f64; 3]| BodyInertia {
        mass_kg,
        principal_inertia_kgm2: Vector3::new(0.1, 0.05, 0.1),
        orientation: UnitQuaternion::identity(),
        com_m: Vector3::from(com),
    };
    let composite = subtree_inertia_about(
        &Vector3::new(0.0, 1.0, 0.0),
        &[
            body(black_box(5.0), [0.0, 0.8, 0.0]),
            body(2.0, [0.0, 0.5, 0.0]),
        ],
    );
    let hinge = JointConfig {
        kind: JointKind::Hinge {
            axis: Vector3::new(0.0, 0.0, black_box(1.0)),
        },
        ..JointConfig::ball(300.0, 30.0, 200.0)
    };
    let specs = [
        PoseJointSpec {
            parent: 0,
            child: 1,
            config: JointConfig::ball(black_box(300.0), 30.0, 200.0),
        },
        PoseJointSpec {
            parent: 1,
            child: 2,
            config: hinge,
        },
    ];
    if let (Ok(servo), Ok(inertia)) = (
        PoseServo::new(3, 0, &specs, ArrivalSettings::default()),
        composite,
    ) {
        let target = UnitQuaternion::from_axis_angle(
            &Unit::new_normalize(Vector3::new(1.0, black_box(0.5), 0.0)),
            black_box(0.7),
        );
        for space in [TargetSpace::World, TargetSpace::Parent, TargetSpace::Person] {
            let targets = [
                Target {
                    space,
                    orientation: target,
                    angular_velocity_rad_s: Vector3::zeros(),
                    arrival: Some(Arrival {
                        time_to_go_s: black_box(0.4),
                        inertia: JointInertia::Tensor(inertia),
                    }),
                },
                Target::fixed(space, target),
            ];
            if let Ok(command) = servo.tick(&bodies, &targets) {
                acc += command
                    .joints
                    .iter()
                    .map(|j| j.torque_nm.sum())
                    .sum::<f64>();
            }
        }
    }
    if let Ok(h) = heading(&bodies[0]) {
        acc += h.yaw_rad + h.yaw_rate_rad_s;
    }
    if let Ok(mut spring) = RootSpring::new(RootSpringConfig::default()) {
        if let Ok(out) = spring.tick(&tilt, &Vector3::new(0.0, 0.0, black_box(1.0))) {
            acc += out.torque_nm.sum();
        }
        spring.reset();
    }
    acc
}

/// The whole humanoid's pose controller (`control_core::dynamo::humanoid`): a pelvis, a torso
/// on a waist and a forearm on an elbow, one tick under the root spring law and the safe state.
fn humanoid_pose_tick() -> f64 {
    use control_core::dynamo::humanoid::{
        BodyMass, HumanoidInput, HumanoidJoint, HumanoidPose, HumanoidSpec, JointRole, PoseLaw,
    };
    use control_core::frames::BodyMotion as Body;
    use control_core::simbicon3d::{Limb, Side};
    let mass = |mass_kg| BodyMass {
        mass_kg,
        principal_inertia_kgm2: Vector3::new(0.1, black_box(0.05), 0.1),
    };
    let bodies = [mass(10.0), mass(black_box(20.0)), mass(1.5)];
    let joints = [
        HumanoidJoint {
            parent: 0,
            child: 1,
            kind: JointKind::Ball,
            anchor_m: Vector3::new(0.0, black_box(0.1), 0.0),
            effort_nm: 200.0,
            role: JointRole::Waist,
        },
        HumanoidJoint {
            parent: 1,
            child: 2,
            kind: JointKind::Hinge { axis: Vector3::z() },
            anchor_m: Vector3::new(0.0, -0.2, black_box(-0.2)),
            effort_nm: 50.0,
            role: JointRole::Limb(Side::Left, Limb::Elbow),
        },
    ];
    let spec = HumanoidSpec::new(&bodies, &joints, black_box(0.005));
    let mut state = [Body::default(); 3];
    state[2].com_m = [0.1, black_box(1.0), -0.2];
    state[1].angular_velocity_rad_s = [black_box(0.3), 0.0, 0.0];
    let mut acc = 0.0;
    if let Ok(mut pose) = HumanoidPose::<4, 4>::new(PoseLaw::WorldSpaceRootSpring, &spec) {
        let input = HumanoidInput {
            time_s: black_box(0.1),
            bodies: &state,
        };
        let out = pose.tick(&input);
        acc += out.torques_nm.iter().map(|t| t.sum()).sum::<f64>() + out.root_torque_nm.sum();
        acc += pose.safe(&state).torques_nm[1].z + pose.measure(&input).pose_error_sq_sum;
    }
    acc
}

/// The humanoid balance's body map (`control_core::balance::humanoid::BodyMap`): a root, a
/// ball joint and a hinge, one state mapped to tree coordinates.
fn body_map_state() -> f64 {
    use control_core::articulated::nalgebra::UnitQuaternion;
    use control_core::balance::humanoid::{BodyMap, Coordinates, MappedJoint};
    use control_core::frames::BodyMotion as Body;
    let joints = [
        MappedJoint {
            parent: 0,
            child: 1,
            first: 0,
            count: 3,
            coordinates: Coordinates::Ball {
                order: [2, black_box(0), 1],
            },
        },
        MappedJoint {
            parent: 1,
            child: 2,
            first: 3,
            count: 1,
            coordinates: Coordinates::Hinge { axis: Vector3::z() },
        },
    ];
    let Some(map) = BodyMap::<4>::new(black_box(0), &joints) else {
        return 0.0;
    };
    let turn = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), black_box(0.3));
    let c = turn.quaternion();
    let mut bodies = [Body::default(); 3];
    bodies[2].orientation = [c.w, c.i, c.j, c.k];
    let (mut q, mut v) = ([0.0; 10], [0.0; 10]);
    let mut acc = 0.0;
    if let Some((base, locked)) = map.state(&bodies, &mut q, &mut v) {
        acc += base.translation.vector.sum() + locked + q.iter().sum::<f64>();
    }
    if map.pose_coordinates(1, &turn, &mut q).is_some() {
        acc += q[3];
    }
    acc
}

/// Feature `micromath`: the f32 servo (micromath's exp/ln) and its Lambert W, linked in too.
#[cfg(feature = "micromath")]
fn micromath_servo_tick() -> f64 {
    use control_core::servo_f32::ArrivalServoF32;
    let mut acc = f64::from(lambert_w::micromath_f32::wm1(black_box(-0.1f32)).unwrap_or(0.0));
    if let Ok(mut servo) = ArrivalServoF32::new(ServoConfig::default())
        && servo.set_pose_target(1.0, 0.05, 1.0).is_ok()
    {
        let state = JointState {
            position_rad: black_box(0.0),
            velocity_rad_s: black_box(0.0),
        };
        acc += servo.tick(black_box(0.0), state, 0.0).torque_nm;
    }
    acc
}

/// Feature `fixed`: the fixed-point servo (the `fixed` crate's torque law), linked in too.
#[cfg(feature = "fixed")]
fn fixed_servo_tick() -> f64 {
    use control_core::servo_fixed::{ArrivalServoFixed, DEFAULT_GAIN_DECIMATION};
    let mut acc = 0.0;
    if let Ok(mut servo) = ArrivalServoFixed::new(ServoConfig::default(), DEFAULT_GAIN_DECIMATION)
        && servo.set_pose_target(1.0, 0.05, 1.0).is_ok()
    {
        let state = JointState {
            position_rad: black_box(0.0),
            velocity_rad_s: black_box(0.0),
        };
        acc += servo.tick(black_box(0.0), state, 0.0).torque_nm;
        acc += servo.safe_torque(state);
    }
    acc
}

/// Kenwright's hand control (both projectors) and CCD IK on a kinematic tree
/// (`Reach::tick`, `ccd_ik`): a branching fixed-base tree with a prismatic joint on
/// the hand's path, then a floating base (refused). Called from `_start`.
#[unsafe(no_mangle)]
pub extern "C" fn reach_tree_tick() -> f64 {
    let body = Inertial {
        mass_kg: black_box(1.5),
        com_m: [0.15, 0.0, 0.0],
        inertia_kgm2: [0.002, 0.0, 0.0, 0.012, 0.0, 0.012],
    };
    let joint = |parent_body: usize, kind: JointType, xyz: [f64; 3], axis: [f64; 3]| JointSpec {
        parent_body,
        kind,
        origin: Placement::from_xyz_rpy(xyz, [0.0; 3]),
        axis,
        body,
    };
    // A torso (joint 0) carrying arm A (joint 1, prismatic joint 2: the hand on body 3) and
    // arm B (joint 3).
    let joints = [
        joint(0, JointType::Revolute, [0.0; 3], [0.0, 0.0, 1.0]),
        joint(1, JointType::Revolute, [0.0, 0.2, 0.3], [0.0, 1.0, 0.0]),
        joint(2, JointType::Prismatic, [0.3, 0.0, 0.0], [1.0, 0.0, 0.0]),
        joint(1, JointType::Revolute, [0.0, -0.2, 0.3], [0.0, 1.0, 0.0]),
    ];
    let hand_body = black_box(3);
    let hand = Vector3::new(black_box(0.3), 0.0, 0.0);
    let target = Vector3::new(black_box(0.5), black_box(0.3), 0.4);
    let gravity = Vector3::new(0.0, 0.0, -9.81);
    let mut acc = 0.0;
    for base in [BaseKind::Fixed, BaseKind::Floating] {
        let spec = TreeSpec {
            base,
            base_body: body,
            joints: &joints,
        };
        let Ok(tree) = Tree::<10>::new(&spec) else {
            continue;
        };
        let mut q = [0.0; 10];
        q[0] = black_box(0.3);
        q[1] = black_box(-0.4);
        q[2] = black_box(0.05);
        let pose = Isometry3::identity();
        for projector in [Projector::PseudoInverse, Projector::DynamicallyConsistent] {
            let config = ReachConfig {
                projector,
                hand_point_m: hand.into(),
                stiffness_n_per_m: black_box(400.0),
                damping_ns_per_m: 40.0,
                posture_stiffness_nm_per_rad: 10.0,
                posture_damping_nms_per_rad: 2.0,
                gravity_compensation: true,
            };
            if let Ok(reach) = Reach::new(config) {
                let still = Vector3::zeros();
                match reach.tick(
                    &tree, &pose, hand_body, &q, &[0.0; 10], &target, &still, &q, &gravity,
                ) {
                    Ok(command) => acc += command.torques_nm.iter().sum::<f64>(),
                    Err(_) => acc += 1.0,
                }
            }
        }
        match ccd_ik(
            &tree,
            &pose,
            &q,
            hand_body,
            &hand,
            &target,
            black_box(20),
            1e-4,
        ) {
            Ok(ik) => acc += ik.residual_m + ik.q_rad.iter().sum::<f64>(),
            Err(_) => acc += 1.0,
        }
    }
    acc
}
