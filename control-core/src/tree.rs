//! A fixed-capacity kinematic tree with a fixed or a floating base: the dynamics a controller of
//! any robot needs every tick (forward kinematics, the Jacobian of any frame, CRBA, recursive
//! Newton–Euler, gravity, the centre of mass and its Jacobian, composite inertias), no_std, no
//! allocation, capacity in the type.
//!
//! A [`Tree`] is any robot a URDF describes once its fixed joints are merged: branches,
//! revolute and prismatic joints about any axis, and a base that is welded or free (a legged
//! robot, a humanoid). Its results are Pinocchio's (4.1) to rounding, conventions included: the
//! floating base's velocity and force in the base frame, Jacobians in LOCAL_WORLD_ALIGNED, the
//! generalized gravity as the holding force.
//!
//! Must never allocate, block or panic, whatever the input: [`Tree::new`] validates every number
//! of the [`TreeSpec`] ([`TreeError`] names the joint); every evaluation checks its inputs and
//! its outputs ([`TreeEvalError`]: a NaN or infinite input is refused and named, and a result
//! that is not a finite f64 — finite parameters and inputs whose products overflow — is
//! [`TreeEvalError::OutOfRange`]), so no NaN or infinity ever leaves this module. Storage is
//! fixed-size arrays (`N` frames; [`TreeKinematics`] holds no N×N matrix), every index is
//! checked (`get`, iterators), and nothing loops longer than O(N · depth).
//!
//! ```
//! use control_core::articulated::nalgebra::{Isometry3, Vector3};
//! use control_core::tree::{BaseKind, Inertial, JointSpec, JointType, Placement, Tree, TreeSpec};
//! // A 10 kg trunk floating free, two 1 kg legs hinged about y at its hips, each with a
//! // prismatic knee sliding along its length (−z).
//! let trunk = Inertial { mass_kg: 10.0, com_m: [0.0; 3], inertia_kgm2: [0.2, 0.0, 0.0, 0.2, 0.0, 0.1] };
//! let leg = Inertial { mass_kg: 1.0, com_m: [0.0, 0.0, -0.2], inertia_kgm2: [0.01, 0.0, 0.0, 0.01, 0.0, 0.001] };
//! let hip = |y: f64| JointSpec {
//!     parent_body: 0,
//!     kind: JointType::Revolute,
//!     origin: Placement::from_xyz_rpy([0.0, y, -0.3], [0.0; 3]),
//!     axis: [0.0, 1.0, 0.0],
//!     body: leg,
//! };
//! let knee = |parent_body: usize| JointSpec {
//!     parent_body,
//!     kind: JointType::Prismatic,
//!     origin: Placement::from_xyz_rpy([0.0, 0.0, -0.4], [0.0; 3]),
//!     axis: [0.0, 0.0, -1.0],
//!     body: leg,
//! };
//! let joints = [hip(0.1), knee(1), hip(-0.1), knee(3)];
//! let tree = Tree::<10>::new(&TreeSpec { base: BaseKind::Floating, base_body: trunk, joints: &joints })?;
//! assert_eq!((tree.nv(), tree.velocity_index(0)), (10, Some(6)));
//! let q = [0.3, 0.05, -0.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]; // capacity 10: q[4..] not read
//! let kin = tree.kinematics(&Isometry3::translation(0.0, 0.0, 1.0), &q)?;
//! let m = kin.mass_matrix()?;
//! assert_eq!(m[(0, 0)], 14.0); // the base block's mass: everything
//! // At rest, RNEA is the generalized gravity: the trunk's 6 entries hold the whole weight.
//! let g = Vector3::new(0.0, 0.0, -9.81);
//! let tau = kin.inverse_dynamics(&[0.0; 10], &[0.0; 10], &g)?;
//! assert!((tau - kin.gravity(&g)?).amax() < 1e-12 && (tau[2] - 14.0 * 9.81).abs() < 1e-12);
//! let (mass, com) = kin.center_of_mass()?;
//! assert_eq!(mass, 14.0);
//! # let _ = com;
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
//!
//! # Costs (measured)
//! x86-64 baseline build (SSE2, no FMA) on a shared 2-core machine under other jobs, so timed
//! as the minimum over 300 batches of 100 calls, the batches of this code and of the previous
//! version (and Pinocchio's C++ bench, `robot-model/tools/pinocchio_bench.sh`, compiled with
//! `-march=native`) alternated in one session; `cargo bench -p control-core --bench tree` and
//! `robot-model/tools/side_by_side.sh` give criterion medians, which under load vary by
//! ±30 %. Panda: example-robot-data's `panda.urdf` (7 revolute joints and 2 prismatic fingers,
//! fixed base, nv = 9, `Tree<9>`); Talos: `talos_full` (44 joints, floating base, nv = 50,
//! `Tree<50>`); the 50-joint tree of the bench (five limbs of ten, floating base, nv = 56).
//! "into": one kept [`TreeKinematics`] filled by [`Tree::kinematics_into`] (and a kept matrix
//! for [`TreeKinematics::mass_matrix_into`]), which saves copying the frames out of
//! [`Tree::kinematics`].
//!
//! | | Panda | Talos | 50 joints |
//! |---|---|---|---|
//! | [`Tree::kinematics`] (one `sincos` and ~160 flops per body) | 0.35 µs (into: 0.29 µs) | 1.6 µs (into: 1.3 µs) | 2.2 µs |
//! | kinematics + [`TreeKinematics::mass_matrix_into`] | 0.58 µs | 3.3 µs | 3.6 µs (both into) |
//! | kinematics + [`TreeKinematics::inverse_dynamics`] | 0.62 µs | 2.9 µs | 3.7 µs |
//! | kinematics + [`TreeKinematics::gravity`] | | | 2.6 µs |
//!
//! Pinocchio 4.1's C++ `crba` and `rnea` (each with its own forward pass) took 0.54 µs and
//! 1.18 µs for the Panda, 3.5 µs and 6.1 µs for Talos, in the same session. What makes the
//! time: the world inertia of every body (Pinocchio's 34-multiplication rotation) and its
//! frame (for a joint about a coordinate axis whose origin rotation is the identity or a turn
//! about one coordinate axis, as most URDF joints are, two column mixes instead of a 3×3
//! product); and copying a [`TreeKinematics`] (N frames of 216 bytes) out of
//! [`Tree::kinematics`], about a tenth of the Panda's CRBA, which [`Tree::kinematics_into`]
//! avoids.
//!
//! # Conventions (those of URDF, and of Pinocchio for the floating base)
//! - Body 0 is the base. Body k + 1 is the child of joint k. Joint k hangs from body
//!   [`JointSpec::parent_body`], which is ≤ k: parents come before children (the order a
//!   depth-first or breadth-first walk from the base gives).
//! - Joint k's frame (= its child body's frame) sits at [`JointSpec::origin`] in the parent
//!   body's frame at q = 0, and moves by q_k about (revolute) or along (prismatic) the unit
//!   [`JointSpec::axis`] given in the joint frame.
//! - A joint's child body has a mass > 0 and a positive definite inertia, or is a **massless
//!   frame**, exactly [`Inertial::ZERO`] (mass, centre and inertia all 0), as RBDL and Pinocchio
//!   allow: a ball joint is then three revolute joints at one point with two massless bodies
//!   between them. Every joint must still move some mass: the subtree a joint carries (its
//!   child body and all below it) must weigh > 0, or the mass matrix would be singular whatever
//!   the configuration ([`TreeError::NonPositiveMass`] names the joint). Massless frames can
//!   still make joints' motions dependent at some configurations (two joints about one line
//!   with only a massless body between them; a ball of three revolute joints whose axes become
//!   coplanar, gimbal lock): the mass matrix is then only positive semidefinite there.
//! - A **fixed** base is welded to the world at the pose given with the configuration (the
//!   identity for a robot bolted at the world origin). A **floating** base has 6 degrees of
//!   freedom, as Pinocchio's free-flyer joint: its pose is the base frame's position and
//!   orientation in the world; its velocity is (v, ω), the linear velocity of the base frame's
//!   origin and the angular velocity, both expressed in the **base** frame; the generalized force
//!   on it is (f, τ), a force and a moment about the base origin, in the base frame.
//! - Generalized velocities, accelerations and forces are laid out as Pinocchio lays them out:
//!   for a floating base, indices 0..6 are the base's (linear then angular) and joint k is at
//!   6 + k; for a fixed base joint k is at k. [`Tree::nv`] is the count; it is at most `N`.
//! - Joint positions are indexed by joint (`q[k]`), whatever the base.
//! - Gravity is a world vector (URDF descriptions are z-up: (0, 0, −9.81)).
//! - A frame on a body is a [`Placement`] in the body's frame (a URDF fixed joint merged away,
//!   a tool point). Its Jacobian is in Pinocchio's LOCAL_WORLD_ALIGNED convention: the linear
//!   velocity of the frame's origin and the angular velocity, both in world axes.
//! - SI units throughout: m, kg, kg·m², rad; generalized forces in N·m (revolute), N
//!   (prismatic), and N then N·m for a floating base.
//!
//! ## The same model in Pinocchio
//! For a **fixed** base, body b is Pinocchio's joint b: body 0 is the universe, which carries
//! the base's inertia, and the root joints' placements are `base_pose · origin`. For a
//! **floating** base, body b is Pinocchio's joint b + 1: joint 1 is a `JointModelFreeFlyer` at
//! the identity carrying the base body, q = (translation, quaternion x y z w). Two differences
//! to keep in mind when comparing:
//! - Pinocchio's `crba` assumes that every subtree's velocities are contiguous, i.e. joints in
//!   depth-first order (its URDF parser always builds that); given joints in another
//!   parents-first order (breadth-first, say) it returns a wrong mass matrix without a warning.
//!   This module takes any parents-first order.
//! - Pinocchio's `data.com[i]` after `centerOfMass(…, computeSubtreeComs=True)` is in joint i's
//!   frame for i ≥ 1 (its world centre is `data.oMi[i].act(data.com[i])`); [`TreeComposite`]
//!   gives world centres.
//!
//! # The quantities
//! Below, positions are relative to the base origin p_b, in world axes (so that a base far from
//! the world origin costs no precision). For joint k: s_k its unit axis and d_k its position
//! (world); S_k its unit motion as a twist at the base origin, (d_k × s_k, s_k) for a revolute
//! joint and (s_k, 0) for a prismatic one. For a body: m, its centre c and its inertia about
//! it I_c (world axes); for the subtree of a body (the body and all it carries): M, C and D.
//! - **Forward kinematics** ([`Tree::kinematics`]): R = R_parent · R_o · Rot(u, q) — a column
//!   mix of R_o when u is ± a coordinate axis, Rodrigues' cos q R_o + sin q R_o\[u\]× +
//!   (1 − cos q) R_o uuᵀ otherwise; when R_o is the identity or a turn about one coordinate
//!   axis and u is ± a coordinate axis, (R_parent · R_o) · Rot(u, q) instead, two column mixes —
//!   and d = d_parent + R_parent (t_o + R_o u q) (the last term for a prismatic joint); every
//!   body's world centre d + R c and inertia R I_c Rᵀ (Pinocchio's `Symmetric3::rotate`) are
//!   formed here, once.
//! - **Frame Jacobian** ([`TreeKinematics::frame_jacobian`]), frame origin p: column of a
//!   revolute ancestor (s × (p − d), s), of a prismatic one (s, 0), of the floating base
//!   (R_b e_i, 0) and (R_b e_i × (p − p_b), R_b e_i).
//! - **Mass matrix** (CRBA, [`TreeKinematics::mass_matrix`]): every body's spatial inertia at
//!   the base origin in Featherstone's form (m, h = m c, I_O = I_c + m(‖c‖²𝟙 − ccᵀ)), summed leaf
//!   to root (additions only: no division on the chain from leaf to root); for each joint k,
//!   F_k = I_k S_k, the momentum (M v − h × ω, I_O ω + h × v) of its subtree moving with the
//!   joint at unit speed, and M_jk = S_j · F_k for k and every ancestor j of k (when the joints
//!   are in depth-first order, as URDF parsers give them, every subtree is a run of joints
//!   k..e and M is filled row by row, M_kj = S_k · F_j for j in k..e, with no walk up the
//!   ancestors; otherwise each column walks up from its joint); a floating base's rows are
//!   R_bᵀ F_k, and its own block is the whole tree's spatial inertia in the base frame,
//!   \[\[M𝟙, −\[h_b\]×\], \[\[h_b\]×, I_O,b\]\].
//! - **Generalized gravity** ([`TreeKinematics::gravity`]), the holding force: with h_k = Σ m c
//!   over joint k's subtree, s_k · (g × (h_k − M_k d_k)) for a revolute joint, −M_k s_k · g for
//!   a prismatic one, and (R_bᵀ(−M g), R_bᵀ(g × h)) for a floating base (the whole tree).
//! - **Inverse dynamics** (recursive Newton–Euler, [`TreeKinematics::inverse_dynamics`]), with
//!   spatial vectors in world axes at the base origin (Featherstone's algorithm in a fixed
//!   frame: no transform between bodies, parents' forces are plain sums); Pinocchio runs it in
//!   body frames, with the same result to rounding. The base moves with v_0 = 0 and
//!   a_0 = (−g, 0) (fixed), or v_0 = R_b v_base and a_0 = R_b a_base + (−g, 0) (floating: a
//!   spatial acceleration turns like a twist); then, root to leaf,
//!
//!   ```text
//!   v_k = v_λ + S_k q̇_k
//!   a_k = a_λ + S_k q̈_k + v_k × S_k q̇_k
//!   f_k = I_k a_k + v_k ×* I_k v_k        (I·(v, ω) = (m v − h × ω, I_O ω + h × v))
//!   ```
//!
//!   and leaf to root τ_k = S_k · f_k, f_λ += f_k; a floating base's six are R_bᵀ f_0.
//! - **Centre of mass** and its Jacobian ([`TreeKinematics::center_of_mass`],
//!   [`TreeKinematics::com_jacobian`]): Σ m c / Σ m over the moving bodies (a fixed base's own
//!   mass left out, as Pinocchio leaves it out); column k of the Jacobian
//!   s_k × (h_k − M_k d_k) / M (revolute) or (M_k / M) s_k (prismatic).
//! - **Composite inertias** ([`TreeKinematics::composite`]): every subtree's M, C and D merged
//!   leaf to root as Pinocchio's `Inertia::operator+=` merges them (M ← M + m,
//!   C ← C + (m/M′)(c − C), D ← D + I + μ(‖δ‖²𝟙 − δδᵀ), δ = c − C, μ = Mm/M′), which keeps D
//!   exact for a small subtree far from the base (no 0/0 with massless frames: a massless
//!   accumulator, a fixed base or a massless frame, simply becomes its first child subtree,
//!   whose mass is > 0 by the subtree rule); and each coordinate's inertia about its own
//!   axis, s·D s + M‖(C − d) × s‖² for a revolute joint, M for a prismatic one, the floating
//!   base block's diagonal for the base: the diagonal of the mass matrix.
//!
//! # What is checked, and how precisely
//! The unit tests (`cargo test -p control-core --release tree`), the largest deviation seen
//! over every case (1000 random cases per property), relative to the largest entry of the
//! result compared:
//! - **Pinocchio**: a six-joint tree with every joint kind (revolute about a coordinate axis, a
//!   negative one and an arbitrary one; prismatic along a coordinate and an arbitrary axis),
//!   three branches and non-trivial origins and inertias, on a fixed base welded at a
//!   non-identity pose and on a floating base, against numbers printed by Pinocchio 4.1
//!   (`tools/tree_reference.py`): CRBA, RNEA with v, a ≠ 0 and a gravity off every axis,
//!   generalized gravity, a frame's pose and LOCAL_WORLD_ALIGNED Jacobian, the centre of mass
//!   and its Jacobian, a subtree's mass, world centre and inertia, the axis inertias:
//!   **within 6e−16** (asserted: 1e−12).
//! - **The serial chain** ([`crate::articulated::serial_tree`], random links): its link frames
//!   are URDF's products of origins and joint rotations formed independently (1e−12); its point
//!   and angular Jacobians are central differences of its poses; M is Σ J_kᵀ m_k J_k + J_ω,kᵀ I_k
//!   J_ω,k and positive definite, gravity the gradient of the potential, and the velocity terms
//!   of RNEA the Lagrangian c = Ṁq̇ − ½ ∂(q̇ᵀMq̇)/∂q (the tests of `articulated`; central
//!   differences, so these hold to 1e−6 relative, where the identities below hold to 1e−12).
//! - **Identities on random branching trees** (both bases, both joint kinds, random parents,
//!   axes, origins — general, the identity, turns about one axis — and base poses): M = Σ_b J_bᵀ m_b J_b + J_ω,bᵀ I_b J_ω,b from the frame Jacobians
//!   (7e−15), M exactly symmetric, M's diagonal = the axis inertias (7e−15); RNEA(q, 0, e_i, 0)
//!   = M e_i (3e−14) and RNEA(q, 0, 0, g) = the generalized gravity (4e−15); ½ vᵀMv = the
//!   bodies' kinetic energies from their frame Jacobians (4e−15); a floating base's M and
//!   gravity-free RNEA do not depend on the base pose (3e−15); every subtree's mass, centre and
//!   inertia are the sums over its bodies (2e−15); central differences (h = 1e−6) of the centre
//!   of mass against its Jacobian (9e−10 m), of the potential energy −M g·C against the
//!   generalized gravity (1.4e−8 relative), and of M along v against the velocity terms
//!   (vᵀ c(q, v) = ½ vᵀṀv, 4e−9 relative).
//! - **The fast paths give the same numbers, bit for bit**: M filled row by row over the
//!   subtrees of a depth-first tree and by walking up the ancestors; the joint ticks' one-pass
//!   axis inertias and gravity torques and [`TreeKinematics::composite`]'s and
//!   [`TreeKinematics::gravity`]'s; the subtree ranges and the depth-first test against a
//!   brute-force count.
//! - **Massless frames**: a massless leaf or massless subtree (its root named), and a zero
//!   mass with an inertia or a centre, are refused. Trees (both bases) with a ball of three
//!   revolute joints about x, y, z at one point (two massless frames between them) carrying a
//!   limb, and a massless body on a hinge carrying two limbs, random bodies and states, held
//!   to every identity above at its tolerance: M against the Jacobian products and the axis
//!   inertias (3e−15), RNEA(q, 0, e_i, 0) = M e_i and RNEA at rest = the gravity (3e−14), the
//!   kinetic energy (2e−15), base-pose independence (3e−15), the subtrees as sums (4e−15), the
//!   central differences (7e−10 m, 3e−9 and 6e−10 relative), the fast paths bit for bit; the
//!   subtrees of the ball's massless frames are the ball body's, bit for bit. Two revolute
//!   joints about one line with a massless frame between them: a 2×2 mass matrix of four
//!   entries equal to the single joint's inertia, its holding torque and RNEA in both slots
//!   (2e−15).
//! - **Validation and errors**: every [`TreeError`] and every [`EvalInput`] named; overflowing
//!   models and inputs are [`TreeEvalError::OutOfRange`]; `Tree<64>` holds a floating base
//!   and 58 joints on a test thread's stack.
//! - **No panic, nothing non-finite**: a property test over arbitrary f64 bits (NaN, ±∞, huge,
//!   subnormal) in every spec field and input, and massless frames among the joints, builds
//!   trees and calls every evaluation; none panics and every result returned is finite.
//!
//! Positions of more than 1e307 m are [`TreeEvalError::OutOfRange`]. For a tree whose centres,
//! masses and inertias are all within 1e300 (every real robot), [`Tree::kinematics`] needs to
//! check only the positions: no rotated centre or inertia can then overflow; other trees get
//! every value checked.
//!

use core::fmt;

use nalgebra::{
    Isometry3, Matrix3, Quaternion, Rotation3, SMatrix, SVector, Translation3, UnitQuaternion,
    Vector3,
};

/// What a joint does: turn about its axis or slide along it. (URDF's `continuous` is a revolute
/// joint without limits; limits are not part of the dynamics.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JointType {
    /// Turns by q rad about the axis.
    Revolute,
    /// Slides by q m along the axis.
    Prismatic,
}

/// A rigid transform given as URDF gives it after fixed joints are merged: a translation and a
/// rotation matrix (child frame in parent frame).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placement {
    /// Translation, m.
    pub xyz_m: [f64; 3],
    /// Rotation matrix, row-major: `rotation[r][c]`. Must be orthonormal with determinant +1
    /// (to 1e-9).
    pub rotation: [[f64; 3]; 3],
}

impl Placement {
    /// The identity.
    pub const IDENTITY: Self = Self {
        xyz_m: [0.0; 3],
        rotation: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
    };

    /// From URDF's `<origin xyz rpy>`: fixed-axis roll, pitch, yaw,
    /// R = R_z(yaw)·R_y(pitch)·R_x(roll).
    pub fn from_xyz_rpy(xyz_m: [f64; 3], rpy_rad: [f64; 3]) -> Self {
        let r = Rotation3::from_euler_angles(rpy_rad[0], rpy_rad[1], rpy_rad[2]);
        let m: Matrix3<f64> = r.into_inner();
        Self {
            xyz_m,
            rotation: [
                [m[(0, 0)], m[(0, 1)], m[(0, 2)]],
                [m[(1, 0)], m[(1, 1)], m[(1, 2)]],
                [m[(2, 0)], m[(2, 1)], m[(2, 2)]],
            ],
        }
    }
}

/// The mass properties of one body, in the body's frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Inertial {
    /// Mass, kg: > 0 for a floating base; for a joint's child body > 0, or exactly 0 for a
    /// massless frame (then the centre and the inertia must be 0 too: [`Inertial::ZERO`], and
    /// the joint's subtree must carry mass below it); a fixed base's may be anything finite
    /// (it counts in nothing).
    pub mass_kg: f64,
    /// Centre of mass in the body frame, m.
    pub com_m: [f64; 3],
    /// Inertia tensor about the centre of mass, in the body frame's axes, kg·m², as URDF orders
    /// it: ixx, ixy, ixz, iyy, iyz, izz. Positive definite for a moving body of mass > 0; all 0
    /// for a massless frame.
    pub inertia_kgm2: [f64; 6],
}

impl Inertial {
    /// No mass at all: a fixed base that carries nothing, or a massless frame (a joint's child
    /// body that only links joints, such as the two intermediate bodies of a ball joint made of
    /// three revolute joints).
    pub const ZERO: Self = Self {
        mass_kg: 0.0,
        com_m: [0.0; 3],
        inertia_kgm2: [0.0; 6],
    };
}

/// One joint of a tree and the body it carries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JointSpec {
    /// The body the joint hangs from: 0 for the base, k + 1 for joint k's child. Must be at most
    /// this joint's own index (parents first).
    pub parent_body: usize,
    /// Revolute or prismatic.
    pub kind: JointType,
    /// The joint frame in the parent body's frame at q = 0.
    pub origin: Placement,
    /// The joint axis in the joint frame; any non-zero length, normalised.
    pub axis: [f64; 3],
    /// The child body's mass properties, in the joint (= child body) frame: a mass > 0 and a
    /// positive definite inertia, or exactly [`Inertial::ZERO`] (a massless frame), provided
    /// that the subtree it heads (this body and everything hanging from it) has mass > 0.
    pub body: Inertial,
}

/// How the base is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaseKind {
    /// Welded to the world.
    Fixed,
    /// Free in space: 6 degrees of freedom.
    Floating,
}

/// A whole tree: the base and the joints, parents first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeSpec<'a> {
    /// Fixed or floating.
    pub base: BaseKind,
    /// The base body's mass properties (moves nothing for a fixed base, but still counts in
    /// nothing: a fixed base's mass is not part of the centre of mass).
    pub base_body: Inertial,
    /// The joints, parents first.
    pub joints: &'a [JointSpec],
}

/// Why a tree could not be built. `joint` counts from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TreeError {
    /// More velocity degrees of freedom (joints, plus 6 for a floating base) than the capacity.
    CapacityExceeded {
        /// The degrees of freedom asked for.
        dofs: usize,
        /// The capacity `N`.
        capacity: usize,
    },
    /// A joint's parent body is not before it.
    ParentAfterChild {
        /// The joint.
        joint: usize,
        /// Its parent body.
        parent_body: usize,
    },
    /// A number is NaN or infinite (`joint` is `None` for the base body).
    NonFinite {
        /// The joint whose spec holds it, or `None` for the base.
        joint: Option<usize>,
        /// Which of its numbers: the first not finite, in the order of [`SpecField`].
        field: SpecField,
    },
    /// A rotation is not orthonormal with determinant +1.
    NotARotation {
        /// The joint.
        joint: usize,
    },
    /// A moving body's mass is ≤ 0 (`None`: the floating base), or a joint moves no mass.
    ///
    /// For a joint (`Some(k)`): joint k's child body has a negative mass, or a zero mass with
    /// a centre or an inertia that is not 0 (a massless frame is exactly [`Inertial::ZERO`]:
    /// this is a mass left out); or the child is a massless frame and nothing below it has mass
    /// either (a massless leaf, or a chain of massless bodies ending in one), so that joint k
    /// would move no mass and the mass matrix would be singular. This subtree rule is checked
    /// once every joint is valid on its own, and names the lowest such joint (the root of the
    /// massless subtree). The floating base (`None`) must have a mass > 0.
    NonPositiveMass {
        /// The joint whose child it is, or `None` for the base.
        joint: Option<usize>,
    },
    /// A moving body of mass > 0 has an inertia that is not positive definite (`None`: the
    /// floating base). A zero-mass body with an inertia is [`TreeError::NonPositiveMass`].
    InertiaNotPositiveDefinite {
        /// The joint whose child it is, or `None` for the base.
        joint: Option<usize>,
    },
    /// A joint axis is the zero vector.
    ZeroAxis {
        /// The joint.
        joint: usize,
    },
}

/// Which numbers of a joint's spec ([`JointSpec`]) or of the base body ([`Inertial`]) a
/// [`TreeError::NonFinite`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpecField {
    /// The joint's origin: its translation or rotation ([`JointSpec::origin`]).
    Origin,
    /// The joint's axis ([`JointSpec::axis`]).
    Axis,
    /// The body's mass ([`Inertial::mass_kg`]).
    Mass,
    /// The body's centre of mass ([`Inertial::com_m`]).
    Centre,
    /// The body's inertia ([`Inertial::inertia_kgm2`]).
    Inertia,
}

impl fmt::Display for SpecField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Origin => "the origin",
            Self::Axis => "the axis",
            Self::Mass => "the body's mass",
            Self::Centre => "the body's centre of mass",
            Self::Inertia => "the body's inertia",
        })
    }
}

impl fmt::Display for TreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::CapacityExceeded { dofs, capacity } => {
                write!(f, "tree: {dofs} degrees of freedom, capacity {capacity}")
            }
            Self::ParentAfterChild { joint, parent_body } => write!(
                f,
                "tree: joint {joint} hangs from body {parent_body}, which is not before it"
            ),
            Self::NonFinite {
                joint: Some(j),
                field,
            } => {
                write!(f, "tree: joint {j}: {field} is not finite")
            }
            Self::NonFinite { joint: None, field } => {
                write!(f, "tree: base: {field} is not finite")
            }
            Self::NotARotation { joint } => {
                write!(f, "tree: joint {joint}: origin rotation is not a rotation")
            }
            Self::NonPositiveMass { joint: Some(j) } => {
                write!(
                    f,
                    "tree: joint {j}: child mass must be > 0, or exactly massless (mass, centre \
                     and inertia all 0) with mass below it"
                )
            }
            Self::NonPositiveMass { joint: None } => {
                write!(f, "tree: floating base mass must be > 0")
            }
            Self::InertiaNotPositiveDefinite { joint: Some(j) } => {
                write!(f, "tree: joint {j}: child inertia is not positive definite")
            }
            Self::InertiaNotPositiveDefinite { joint: None } => {
                write!(f, "tree: base inertia is not positive definite")
            }
            Self::ZeroAxis { joint } => write!(f, "tree: joint {joint}: axis is zero"),
        }
    }
}

impl core::error::Error for TreeError {}

/// The magnitude below which a tree's centres, masses and inertias are "moderate" (see
/// [`Tree`]'s `moderate`): rotated by matrices of entries at most 1.001, sums of three or nine
/// such products stay below 1e302, and with positions below [`POSITION_BOUND`] nothing
/// overflows.
const MODERATE: f64 = 1e300;

/// The largest position (m, relative to the base origin) a moderate tree's kinematics accepts
/// without checking each centre of mass: |d| + |R c| < 1e307 + 1e301, far from overflow.
const POSITION_BOUND: f64 = 1e307;

/// How far a rotation may be from orthonormal: every entry of RᵀR − 𝟙 within this, and
/// det R > 0.
pub const ROTATION_TOLERANCE: f64 = 1e-9;

impl Placement {
    /// The rotation as a matrix.
    fn rotation_matrix(&self) -> Matrix3<f64> {
        let r = &self.rotation;
        Matrix3::new(
            r[0][0], r[0][1], r[0][2], r[1][0], r[1][1], r[1][2], r[2][0], r[2][1], r[2][2],
        )
    }

    /// Whether every number is finite.
    fn is_finite(&self) -> bool {
        all_finite(&self.xyz_m)
            & self
                .rotation
                .iter()
                .fold(true, |ok, row| ok & all_finite(row))
    }

    /// Whether the (finite) rotation is orthonormal with determinant +1, to
    /// [`ROTATION_TOLERANCE`].
    fn is_rotation(&self) -> bool {
        let r = self.rotation_matrix();
        let error = r.transpose() * r - Matrix3::identity();
        error.iter().all(|e| e.abs() <= ROTATION_TOLERANCE) && r.determinant() > 0.0
    }
}

impl Inertial {
    /// The first of its numbers that is not finite, if any.
    fn non_finite(&self) -> Option<SpecField> {
        if !self.mass_kg.is_finite() {
            Some(SpecField::Mass)
        } else if !all_finite(&self.com_m) {
            Some(SpecField::Centre)
        } else if !all_finite(&self.inertia_kgm2) {
            Some(SpecField::Inertia)
        } else {
            None
        }
    }

    fn inertia_matrix(&self) -> Matrix3<f64> {
        let [ixx, ixy, ixz, iyy, iyz, izz] = self.inertia_kgm2;
        Matrix3::new(ixx, ixy, ixz, ixy, iyy, iyz, ixz, iyz, izz)
    }
}

/// Whether every value is finite: x − x is 0 for a finite x and NaN otherwise, and a sum with
/// a NaN is NaN. Without branches, so that it vectorises.
#[inline(always)]
fn all_finite(values: &[f64]) -> bool {
    values.iter().fold(0.0, |acc, &v| acc + residue(v)) == 0.0
}

/// x − x: 0 for a finite x, NaN for NaN and ±∞ (a sum of these is 0 exactly when all are
/// finite).
#[inline(always)]
#[allow(clippy::eq_op)] // the point: x − x is not 0 for a non-finite x
fn residue(x: f64) -> f64 {
    x - x
}

/// The larger of `a` and `b` (`b` if either is NaN): one `maxsd`, where `f64::max` also
/// handles NaN.
#[inline(always)]
fn larger(a: f64, b: f64) -> f64 {
    if a > b { a } else { b }
}

/// The largest |component| of `v` (NaN components ignored).
#[inline(always)]
fn amax3(v: &Vector3<f64>) -> f64 {
    larger(larger(v.x.abs(), v.y.abs()), v.z.abs())
}

/// The 1-norm of a spatial vector (NaN or ∞ if a component is not finite).
#[inline(always)]
fn norm1(linear: &Vector3<f64>, angular: &Vector3<f64>) -> f64 {
    (linear.x.abs() + linear.y.abs() + linear.z.abs())
        + (angular.x.abs() + angular.y.abs() + angular.z.abs())
}

/// `v / |v|` for a finite non-zero `v`, formed without overflow or underflow (scaled by its
/// largest component first).
fn unit_axis(v: [f64; 3]) -> Option<Vector3<f64>> {
    let scale = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if !(scale > 0.0 && scale.is_finite()) {
        return None;
    }
    let scaled = Vector3::from(v) / scale;
    // 1 ≤ norm ≤ √3 for the scaled vector.
    Some(scaled / libm::sqrt(scaled.norm_squared()))
}

/// Sylvester's criterion on the tensor scaled to a largest entry of 1 (so that no minor
/// overflows or, for a well-conditioned tensor, underflows).
fn positive_definite(i: &[f64; 6]) -> bool {
    let scale = i.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if !(scale > 0.0 && scale.is_finite()) {
        return false;
    }
    let [xx, xy, xz, yy, yz, zz] = i.map(|v| v / scale);
    let minor2 = xx * yy - xy * xy;
    let det = xx * (yy * zz - yz * yz) - xy * (xy * zz - yz * xz) + xz * (xy * yz - yy * xz);
    xx > 0.0 && minor2 > 0.0 && det > 0.0
}

/// A symmetric 3×3 matrix (an inertia tensor) by its upper triangle: xx, xy, xz, yy, yz, zz.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sym3([f64; 6]);

impl Sym3 {
    const ZERO: Self = Self([0.0; 6]);

    /// [`Sym3::rotated_prepared`] of a tensor given as a matrix.
    #[cfg(test)]
    fn rotated(local: &Matrix3<f64>, rotation: &Matrix3<f64>) -> Self {
        Self::rotated_prepared(&Rotatable::of(local), rotation)
    }

    /// R I Rᵀ: the tensor `local` (in a frame turned by `rotation`) in the outer axes, for an
    /// orthonormal R, by Pinocchio's `Symmetric3::rotate` (34 multiplications instead of 45):
    /// with L = [[xx − zz, xy], [xy, yy − zz], [2xz, 2yz]] (formed once per joint, see
    /// [`Rotatable`]) the result's lower rows come from Y = R₁₂ L (rows 1 and 2 of R), its
    /// trace is the tensor's, and the rest is zz 𝟙 plus a skew part. Agrees with the plain
    /// product to rounding (tested).
    #[inline(always)]
    fn rotated_prepared(local: &Rotatable, rotation: &Matrix3<f64>) -> Self {
        let r = |i: usize, j: usize| rotation[(i, j)];
        let Rotatable { l, xz, yz, zz } = *local;
        let y = |i: usize, j: usize| {
            r(i + 1, 0) * l[0][j] + r(i + 1, 1) * l[1][j] + r(i + 1, 2) * l[2][j]
        };
        let (y00, y01, y10, y11) = (y(0, 0), y(0, 1), y(1, 0), y(1, 1));
        let s_xy = y00 * r(0, 0) + y01 * r(0, 1);
        let s_yy = y00 * r(1, 0) + y01 * r(1, 1);
        let s_xz = y10 * r(0, 0) + y11 * r(0, 1);
        let s_yz = y10 * r(1, 0) + y11 * r(1, 1);
        let s_zz = y10 * r(2, 0) + y11 * r(2, 1);
        let skew = Vector3::new(
            -r(0, 0) * yz + r(0, 1) * xz,
            -r(1, 0) * yz + r(1, 1) * xz,
            -r(2, 0) * yz + r(2, 1) * xz,
        );
        let s_xx = l[0][0] + l[1][1] - s_yy - s_zz;
        Self([
            s_xx + zz,
            s_xy + skew.z,
            s_xz - skew.y,
            s_yy + zz,
            s_yz + skew.x,
            s_zz + zz,
        ])
    }

    #[inline(always)]
    fn mul(&self, v: &Vector3<f64>) -> Vector3<f64> {
        let [xx, xy, xz, yy, yz, zz] = self.0;
        Vector3::new(
            xx * v.x + xy * v.y + xz * v.z,
            xy * v.x + yy * v.y + yz * v.z,
            xz * v.x + yz * v.y + zz * v.z,
        )
    }

    /// self + other + w(‖δ‖²𝟙 − δδᵀ): the parallel-axis shift of a mass w at δ.
    #[inline(always)]
    fn add_shifted(&mut self, other: &Self, delta: &Vector3<f64>, w: f64) {
        let (x, y, z) = (delta.x, delta.y, delta.z);
        let [xx, xy, xz, yy, yz, zz] = &mut self.0;
        let [oxx, oxy, oxz, oyy, oyz, ozz] = other.0;
        *xx += oxx + w * (y * y + z * z);
        *xy += oxy - w * (x * y);
        *xz += oxz - w * (x * z);
        *yy += oyy + w * (x * x + z * z);
        *yz += oyz - w * (y * z);
        *zz += ozz + w * (x * x + y * y);
    }

    /// self + w(‖δ‖²𝟙 − δδᵀ).
    #[inline(always)]
    fn shifted(&self, delta: &Vector3<f64>, w: f64) -> Self {
        let mut out = *self;
        out.add_shifted(&Self::ZERO, delta, w);
        out
    }

    fn matrix(&self) -> Matrix3<f64> {
        let [xx, xy, xz, yy, yz, zz] = self.0;
        Matrix3::new(xx, xy, xz, xy, yy, yz, xz, yz, zz)
    }
}

/// A symmetric tensor as [`Sym3::rotated_prepared`] takes it: L = [[xx − zz, xy], [xy, yy − zz],
/// [2xz, 2yz]], and xz, yz, zz (formed once per joint, not per evaluation).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Rotatable {
    l: [[f64; 2]; 3],
    xz: f64,
    yz: f64,
    zz: f64,
}

impl Rotatable {
    const ZERO: Self = Self {
        l: [[0.0; 2]; 3],
        xz: 0.0,
        yz: 0.0,
        zz: 0.0,
    };

    #[inline(always)]
    fn of(local: &Matrix3<f64>) -> Self {
        let (xx, xy, xz) = (local[(0, 0)], local[(0, 1)], local[(0, 2)]);
        let (yy, yz, zz) = (local[(1, 1)], local[(1, 2)], local[(2, 2)]);
        Self {
            l: [[xx - zz, xy], [xy, yy - zz], [2.0 * xz, 2.0 * yz]],
            xz,
            yz,
            zz,
        }
    }
}

/// a·b for 3×3 matrices, written out (nalgebra's generic product leaves shuffles in).
#[inline(always)]
fn mul33(a: &Matrix3<f64>, b: &Matrix3<f64>) -> Matrix3<f64> {
    let column = |j: usize| {
        let (x, y, z) = (b[(0, j)], b[(1, j)], b[(2, j)]);
        Vector3::new(
            a[(0, 0)] * x + a[(0, 1)] * y + a[(0, 2)] * z,
            a[(1, 0)] * x + a[(1, 1)] * y + a[(1, 2)] * z,
            a[(2, 0)] * x + a[(2, 1)] * y + a[(2, 2)] * z,
        )
    };
    Matrix3::from_columns(&[column(0), column(1), column(2)])
}

/// a·v for a 3×3 matrix, written out.
#[inline(always)]
fn mul3(a: &Matrix3<f64>, v: &Vector3<f64>) -> Vector3<f64> {
    let (x, y, z) = (v.x, v.y, v.z);
    Vector3::new(
        a[(0, 0)] * x + a[(0, 1)] * y + a[(0, 2)] * z,
        a[(1, 0)] * x + a[(1, 1)] * y + a[(1, 2)] * z,
        a[(2, 0)] * x + a[(2, 1)] * y + a[(2, 2)] * z,
    )
}

/// ‖δ‖²𝟙 − δδᵀ: the inertia of a unit mass at δ about the origin.
#[inline]
fn shift(delta: &Vector3<f64>) -> Matrix3<f64> {
    Matrix3::from_diagonal_element(delta.norm_squared()) - delta * delta.transpose()
}

/// A body, or a subtree of bodies, in world axes: mass, centre of mass (relative to the base
/// origin) and inertia about the centre of mass.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Mass {
    mass: f64,
    com: Vector3<f64>,
    inertia: Sym3,
}

impl Mass {
    const ZERO: Self = Self {
        mass: 0.0,
        com: Vector3::new(0.0, 0.0, 0.0),
        inertia: Sym3::ZERO,
    };

    /// A body with local centre `com` and local inertia `inertia`, its frame at `position`
    /// turned by `rotation`.
    #[inline(always)]
    fn placed(
        mass: f64,
        com: &Vector3<f64>,
        inertia: &Rotatable,
        rotation: &Matrix3<f64>,
        position: &Vector3<f64>,
    ) -> Self {
        Self {
            mass,
            com: position + mul3(rotation, com),
            inertia: Sym3::rotated_prepared(inertia, rotation),
        }
    }

    /// Adds `other` (Pinocchio's `Inertia::operator+=`): M ← M + m, c ← c + (m/M′)(c_o − c),
    /// D ← D + D_o + μ(‖δ‖²𝟙 − δδᵀ) with δ = c_o − c and μ = Mm/M′ the reduced mass. Exact
    /// where either side is massless (see [`merge`]): no 0/0.
    #[inline(always)]
    fn merge(&mut self, other: &Self) {
        merge(&mut self.mass, &mut self.com, &mut self.inertia, other);
    }

    /// The spatial momentum of the body moving with the twist (v, ω) (v the velocity of the
    /// point at the base origin): p = m(v + ω × c), and about the base origin
    /// L = I_c ω + c × p. Linear in (v, ω): also the force I·a of a spatial acceleration.
    #[inline(always)]
    fn momentum(&self, v: &Vector3<f64>, w: &Vector3<f64>) -> (Vector3<f64>, Vector3<f64>) {
        let p = (v + w.cross(&self.com)) * self.mass;
        (p, self.inertia.mul(w) + self.com.cross(&p))
    }

    /// The spatial force I a + v ×* I v that moves the body with the twist (v, ω) and the
    /// spatial acceleration (a, α): force, then moment about the base origin.
    #[inline(always)]
    fn wrench(&self, m: &Motion) -> (Vector3<f64>, Vector3<f64>) {
        let (pa, la) = self.momentum(&m.a, &m.alpha);
        let (p, l) = self.momentum(&m.v, &m.w);
        (pa + m.w.cross(&p), la + m.w.cross(&l) + m.v.cross(&p))
    }

    #[inline(always)]
    fn is_finite(&self) -> bool {
        self.mass.is_finite() & all_finite(self.com.as_slice()) & all_finite(&self.inertia.0)
    }

    /// The sum of x − x over the mass, the centre moved by `origin` and the inertia: 0 when
    /// [`Mass::is_finite`] would hold of the moved body, NaN otherwise.
    #[inline(always)]
    fn residue(&self, origin: &Vector3<f64>) -> f64 {
        let com = self.com + origin;
        let [xx, xy, xz, yy, yz, zz] = self.inertia.0;
        (residue(self.mass) + residue(com.x) + residue(com.y) + residue(com.z))
            + ((residue(xx) + residue(xy)) + (residue(xz) + residue(yy)))
            + (residue(yz) + residue(zz))
    }
}

/// [`Mass::merge`] on a mass, centre and inertia held apart.
///
/// M′ = M + m is never 0 in the division: a massless `other` (mass 0, and so, validated,
/// centre and inertia 0 too: a massless frame) adds nothing and is skipped, and a massless
/// accumulator (a fixed base's `Mass::ZERO`, or a massless frame whose first child subtree
/// is merged into it) has no inertia of its own either and becomes `other`, exactly. In a
/// valid tree every merged `other` is a subtree, whose mass is > 0 (`Tree::new`'s subtree
/// rule); the first test is for a subtree of zero mass all the same.
#[inline(always)]
fn merge(mass: &mut f64, com: &mut Vector3<f64>, inertia: &mut Sym3, other: &Mass) {
    if other.mass == 0.0 {
        return;
    }
    if *mass == 0.0 {
        (*mass, *com, *inertia) = (other.mass, other.com, other.inertia);
        return;
    }
    let total = *mass + other.mass;
    let weight = other.mass / total;
    let delta = other.com - *com;
    *com += delta * weight;
    inertia.add_shifted(&other.inertia, &delta, *mass * weight);
    *mass = total;
}

/// A spatial inertia at the base origin, world axes (Featherstone's form): mass m, first
/// moment h = m c and rotational inertia about the base origin I_O = I_c + m(‖c‖²𝟙 − ccᵀ).
/// Subtrees of these are plain sums: no division on the leaf-to-root chain.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Spatial {
    /// m, h (3), then I_O's upper triangle xx, xy, xz, yy, yz, zz: one array, so that sums of
    /// these are element by element.
    values: [f64; 10],
}

impl Spatial {
    const ZERO: Self = Self { values: [0.0; 10] };

    #[inline(always)]
    fn of(body: &Mass) -> Self {
        let h = body.com * body.mass;
        let [xx, xy, xz, yy, yz, zz] = body.inertia.shifted(&body.com, body.mass).0;
        Self {
            values: [body.mass, h.x, h.y, h.z, xx, xy, xz, yy, yz, zz],
        }
    }

    #[inline(always)]
    fn add(&mut self, other: &Self) {
        for (a, b) in self.values.iter_mut().zip(other.values) {
            *a += b;
        }
    }

    #[inline(always)]
    fn mass(&self) -> f64 {
        self.values[0]
    }

    #[inline(always)]
    fn first_moment(&self) -> Vector3<f64> {
        let [_, x, y, z, ..] = self.values;
        Vector3::new(x, y, z)
    }

    #[inline(always)]
    fn inertia(&self) -> Sym3 {
        let [.., xx, xy, xz, yy, yz, zz] = self.values;
        Sym3([xx, xy, xz, yy, yz, zz])
    }

    /// The spatial momentum of the twist (v, ω) at the base origin: (m v − h × ω,
    /// I_O ω + h × v).
    #[inline(always)]
    fn momentum(&self, v: &Vector3<f64>, w: &Vector3<f64>) -> (Vector3<f64>, Vector3<f64>) {
        let h = self.first_moment();
        (
            v * self.mass() - h.cross(w),
            self.inertia().mul(w) + h.cross(v),
        )
    }
}

/// A mass (kg) and its first moment Σ m c (kg·m, relative to the base origin, world axes).
type FirstMoment = (f64, Vector3<f64>);

/// A body's motion, world axes, at the base origin: twist (v, ω) and spatial acceleration
/// (a, α).
#[derive(Debug, Clone, Copy)]
struct Motion {
    v: Vector3<f64>,
    w: Vector3<f64>,
    a: Vector3<f64>,
    alpha: Vector3<f64>,
}

impl Motion {
    const ZERO: Self = Self {
        v: Vector3::new(0.0, 0.0, 0.0),
        w: Vector3::new(0.0, 0.0, 0.0),
        a: Vector3::new(0.0, 0.0, 0.0),
        alpha: Vector3::new(0.0, 0.0, 0.0),
    };
}

/// A joint's unit motion as a twist at the base origin, (d × s, s) for a revolute joint and
/// (s, 0) for a prismatic one, and the body it hangs from.
#[derive(Debug, Clone, Copy)]
struct UnitMotion {
    linear: Vector3<f64>,
    angular: Vector3<f64>,
    parent: usize,
}

impl UnitMotion {
    const ZERO: Self = Self {
        linear: Vector3::new(0.0, 0.0, 0.0),
        angular: Vector3::new(0.0, 0.0, 0.0),
        parent: 0,
    };
}

/// A joint axis that is ± a coordinate axis turns its frame with 12 multiplications instead of
/// 27.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Aligned {
    X,
    Y,
    Z,
    No,
}

/// A validated joint, with what forward kinematics needs precomputed.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Joint {
    parent: usize,
    /// One past the last joint of this joint's subtree: the subtree is the joints
    /// `k..subtree_end` when the tree is in depth-first order ([`Tree`]'s `depth_first`).
    subtree_end: u32,
    kind: JointType,
    /// ± a coordinate axis (the sign in `sign`), or not.
    aligned: Aligned,
    sign: f64,
    /// R_o's structure (the identity, a turn about one coordinate axis, or general).
    origin: OriginTurn,
    /// R_o, and R_o[u]× and R_o u uᵀ: the joint frame at angle q is
    /// cos q·R_o + sin q·R_o[u]× + (1 − cos q)·R_o u uᵀ (Rodrigues).
    origin_rotation: Matrix3<f64>,
    origin_rotation_k: Matrix3<f64>,
    origin_rotation_uu: Matrix3<f64>,
    origin_translation: Vector3<f64>,
    /// The unit axis u, joint frame.
    axis: Vector3<f64>,
    /// R_o u: the axis in the parent frame, along which a prismatic joint slides.
    axis_in_parent: Vector3<f64>,
    mass: f64,
    /// Centre of mass and inertia about it, body frame (the inertia as rotated).
    com: Vector3<f64>,
    inertia: Rotatable,
}

impl Joint {
    const PLACEHOLDER: Self = Self {
        parent: 0,
        subtree_end: 0,
        kind: JointType::Revolute,
        aligned: Aligned::No,
        sign: 1.0,
        origin: OriginTurn::General,
        origin_rotation: Matrix3::new(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
        origin_rotation_k: Matrix3::new(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
        origin_rotation_uu: Matrix3::new(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
        origin_translation: Vector3::new(0.0, 0.0, 0.0),
        axis: Vector3::new(0.0, 0.0, 0.0),
        axis_in_parent: Vector3::new(0.0, 0.0, 0.0),
        mass: 0.0,
        com: Vector3::new(0.0, 0.0, 0.0),
        inertia: Rotatable::ZERO,
    };

    fn new(spec: &JointSpec, joint: usize) -> Result<Self, TreeError> {
        if spec.parent_body > joint {
            return Err(TreeError::ParentAfterChild {
                joint,
                parent_body: spec.parent_body,
            });
        }
        let field = if !spec.origin.is_finite() {
            Some(SpecField::Origin)
        } else if !all_finite(&spec.axis) {
            Some(SpecField::Axis)
        } else {
            spec.body.non_finite()
        };
        if let Some(field) = field {
            return Err(TreeError::NonFinite {
                joint: Some(joint),
                field,
            });
        }
        if !spec.origin.is_rotation() {
            return Err(TreeError::NotARotation { joint });
        }
        let axis = unit_axis(spec.axis).ok_or(TreeError::ZeroAxis { joint })?;
        // A massless frame is exactly `Inertial::ZERO` (−0.0 compares equal to 0.0). Any other
        // body needs a mass > 0 (a zero mass with a centre or an inertia is a mass left out)
        // and a positive definite inertia. Whether a massless frame carries mass below it is
        // `Tree::new`'s check.
        if spec.body != Inertial::ZERO {
            if spec.body.mass_kg <= 0.0 {
                return Err(TreeError::NonPositiveMass { joint: Some(joint) });
            }
            if !positive_definite(&spec.body.inertia_kgm2) {
                return Err(TreeError::InertiaNotPositiveDefinite { joint: Some(joint) });
            }
        }
        let [x, y, z] = spec.axis;
        let (aligned, sign) = match (x != 0.0, y != 0.0, z != 0.0) {
            (true, false, false) => (Aligned::X, x.signum()),
            (false, true, false) => (Aligned::Y, y.signum()),
            (false, false, true) => (Aligned::Z, z.signum()),
            _ => (Aligned::No, 1.0),
        };
        let origin_rotation = spec.origin.rotation_matrix();
        Ok(Self {
            parent: spec.parent_body,
            subtree_end: 0,
            kind: spec.kind,
            aligned,
            sign,
            origin: OriginTurn::of(&origin_rotation),
            origin_rotation,
            origin_rotation_k: origin_rotation * axis.cross_matrix(),
            origin_rotation_uu: origin_rotation * axis * axis.transpose(),
            origin_translation: Vector3::from(spec.origin.xyz_m),
            axis,
            axis_in_parent: origin_rotation * axis,
            mass: spec.body.mass_kg,
            com: Vector3::from(spec.body.com_m),
            inertia: Rotatable::of(&spec.body.inertia_matrix()),
        })
    }

    /// The joint frame's rotation in the world, parent · R_o · Rot(u, q), from its parent
    /// body's (`parent`), and its translation in the parent body's frame, at position `q` (rad
    /// or m). When R_o is the identity or a turn about one coordinate axis (most URDF joints:
    /// `rpy` with one angle at most) and the joint axis is a coordinate axis, parent · R_o is
    /// formed first, its columns mixed (the products with R_o's zeros and ones skipped), and
    /// then turned by q, the same way: 24 multiplications instead of 39.
    #[inline(always)]
    fn turned(&self, parent: &Matrix3<f64>, q: f64) -> (Matrix3<f64>, Vector3<f64>) {
        match self.kind {
            JointType::Prismatic => (
                self.times_origin(parent),
                self.origin_translation + self.axis_in_parent * q,
            ),
            JointType::Revolute => {
                let (sin, cos) = libm::sincos(q);
                let s = sin * self.sign;
                let rotation = match (self.aligned, self.origin) {
                    (Aligned::No, _) => mul33(
                        parent,
                        &(self.origin_rotation * cos
                            + self.origin_rotation_k * sin
                            + self.origin_rotation_uu * (1.0 - cos)),
                    ),
                    (aligned, OriginTurn::General) => {
                        mul33(parent, &turn(&self.origin_rotation, aligned, cos, s))
                    }
                    (aligned, _) => turn(&self.times_origin(parent), aligned, cos, s),
                };
                (rotation, self.origin_translation)
            }
        }
    }

    /// parent · R_o, the products with R_o's exact zeros and ones skipped when it turns about
    /// one coordinate axis (the same numbers as the full product).
    #[inline(always)]
    fn times_origin(&self, parent: &Matrix3<f64>) -> Matrix3<f64> {
        let r = &self.origin_rotation;
        let p = |j: usize| parent.column(j).into_owned();
        match self.origin {
            OriginTurn::Identity => *parent,
            // [[1, 0, 0], [0, a, b], [0, c, d]].
            OriginTurn::X => Matrix3::from_columns(&[
                p(0),
                p(1) * r[(1, 1)] + p(2) * r[(2, 1)],
                p(1) * r[(1, 2)] + p(2) * r[(2, 2)],
            ]),
            // [[a, 0, b], [0, 1, 0], [c, 0, d]].
            OriginTurn::Y => Matrix3::from_columns(&[
                p(0) * r[(0, 0)] + p(2) * r[(2, 0)],
                p(1),
                p(0) * r[(0, 2)] + p(2) * r[(2, 2)],
            ]),
            // [[a, b, 0], [c, d, 0], [0, 0, 1]].
            OriginTurn::Z => Matrix3::from_columns(&[
                p(0) * r[(0, 0)] + p(1) * r[(1, 0)],
                p(0) * r[(0, 1)] + p(1) * r[(1, 1)],
                p(2),
            ]),
            OriginTurn::General => mul33(parent, r),
        }
    }
}

/// What the origin rotation R_o of a joint is: the identity, a turn about one coordinate axis
/// (its row and column of that axis exactly the unit vector), or anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OriginTurn {
    Identity,
    X,
    Y,
    Z,
    General,
}

impl OriginTurn {
    fn of(r: &Matrix3<f64>) -> Self {
        let unit = |i: usize| {
            (0..3).all(|j| {
                let e = if i == j { 1.0 } else { 0.0 };
                r[(i, j)] == e && r[(j, i)] == e
            })
        };
        match (unit(0), unit(1), unit(2)) {
            (true, true, true) => Self::Identity,
            (true, _, _) => Self::X,
            (_, true, _) => Self::Y,
            (_, _, true) => Self::Z,
            _ => Self::General,
        }
    }
}

/// r · R_x(q), r · R_y(q) or r · R_z(q) (`s` = ±sin q, the sign of the axis): two columns
/// mixed, one kept.
#[inline(always)]
fn turn(r: &Matrix3<f64>, aligned: Aligned, cos: f64, s: f64) -> Matrix3<f64> {
    match aligned {
        Aligned::X => {
            let (c1, c2) = (r.column(1), r.column(2));
            Matrix3::from_columns(&[
                r.column(0).into_owned(),
                c1 * cos + c2 * s,
                c2 * cos - c1 * s,
            ])
        }
        Aligned::Y => {
            let (c0, c2) = (r.column(0), r.column(2));
            Matrix3::from_columns(&[
                c0 * cos - c2 * s,
                r.column(1).into_owned(),
                c0 * s + c2 * cos,
            ])
        }
        Aligned::Z | Aligned::No => {
            let (c0, c1) = (r.column(0), r.column(1));
            Matrix3::from_columns(&[
                c0 * cos + c1 * s,
                c1 * cos - c0 * s,
                r.column(2).into_owned(),
            ])
        }
    }
}

/// A kinematic tree of at most `N` velocity degrees of freedom (capacity in the type, no
/// allocation; see the module docs for the conventions). Built by [`Tree::new`], which
/// validates every number of the [`TreeSpec`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tree<const N: usize> {
    base: BaseKind,
    /// Every centre of mass and inertia entry at most [`MODERATE`] in magnitude: then no
    /// world centre relative to a finite-enough position, and no rotated inertia, can overflow,
    /// and [`Tree::kinematics`] checks positions only.
    moderate: bool,
    /// Every joint's subtree is contiguous, `k..subtree_end` (a depth-first order, as URDF
    /// parsers and Pinocchio build them): the mass matrix is then filled row by row with no
    /// walk up the ancestors.
    depth_first: bool,
    base_mass: f64,
    base_com: Vector3<f64>,
    base_inertia: Matrix3<f64>,
    joints: [Joint; N],
    len: usize,
}

impl<const N: usize> Tree<N> {
    /// The tree of `spec`, every number validated: at most `N` velocity degrees of freedom
    /// (joints, plus 6 for a floating base); every joint's parent body before it; every number
    /// finite; every origin rotation orthonormal with determinant +1 to [`ROTATION_TOLERANCE`];
    /// every joint axis non-zero (it is normalised); every moving body's mass > 0 and inertia
    /// positive definite (Sylvester's criterion), the floating base's included, except that a
    /// joint's child body may be a massless frame, exactly [`Inertial::ZERO`]; and every
    /// joint's subtree (its child body and all below it) of mass > 0, so that no joint moves
    /// nothing (else [`TreeError::NonPositiveMass`] names the lowest such joint). A fixed
    /// base's mass properties only need to be finite: they move nothing and count in nothing.
    pub fn new(spec: &TreeSpec<'_>) -> Result<Self, TreeError> {
        let dofs = spec.joints.len().saturating_add(offset(spec.base));
        if dofs > N {
            return Err(TreeError::CapacityExceeded { dofs, capacity: N });
        }
        if let Some(field) = spec.base_body.non_finite() {
            return Err(TreeError::NonFinite { joint: None, field });
        }
        if spec.base == BaseKind::Floating {
            if spec.base_body.mass_kg <= 0.0 {
                return Err(TreeError::NonPositiveMass { joint: None });
            }
            if !positive_definite(&spec.base_body.inertia_kgm2) {
                return Err(TreeError::InertiaNotPositiveDefinite { joint: None });
            }
        }
        let mut joints = [Joint::PLACEHOLDER; N];
        for (index, (slot, joint)) in joints.iter_mut().zip(spec.joints).enumerate() {
            *slot = Joint::new(joint, index)?;
        }
        if let Some(joint) = massless_subtree(&joints, spec.joints.len()) {
            return Err(TreeError::NonPositiveMass { joint: Some(joint) });
        }
        let depth_first = subtree_ranges(&mut joints, spec.joints.len());
        let moderate = |b: &Inertial| {
            b.mass_kg.abs() <= MODERATE
                && b.com_m
                    .iter()
                    .chain(&b.inertia_kgm2)
                    .all(|v| v.abs() <= MODERATE)
        };
        Ok(Self {
            base: spec.base,
            moderate: moderate(&spec.base_body) && spec.joints.iter().all(|j| moderate(&j.body)),
            depth_first,
            base_mass: spec.base_body.mass_kg,
            base_com: Vector3::from(spec.base_body.com_m),
            base_inertia: spec.base_body.inertia_matrix(),
            joints,
            len: spec.joints.len(),
        })
    }

    fn joints(&self) -> &[Joint] {
        self.joints.get(..self.len).unwrap_or(&[])
    }

    /// The number of velocity degrees of freedom: the joints, plus 6 for a floating base (≤ `N`).
    pub fn nv(&self) -> usize {
        self.len + offset(self.base)
    }

    /// The number of joints (the bodies are one more: the base and one per joint).
    pub fn joint_count(&self) -> usize {
        self.len
    }

    /// Fixed or floating.
    pub fn base(&self) -> BaseKind {
        self.base
    }

    /// The body joint `joint` hangs from (0 for the base), or `None` past the last joint.
    pub fn parent_body(&self, joint: usize) -> Option<usize> {
        self.joints().get(joint).map(|j| j.parent)
    }

    /// Joint `joint`'s index in generalized velocities, accelerations and forces (`joint`, or
    /// 6 + `joint` for a floating base), or `None` past the last joint.
    pub fn velocity_index(&self, joint: usize) -> Option<usize> {
        (joint < self.len).then(|| joint + offset(self.base))
    }

    /// Revolute or prismatic, or `None` past the last joint.
    pub fn joint_kind(&self, joint: usize) -> Option<JointType> {
        self.joints().get(joint).map(|j| j.kind)
    }

    /// The unit axis of joint `joint` in its joint frame (as given, normalised).
    pub fn joint_axis(&self, joint: usize) -> Option<Vector3<f64>> {
        self.joints().get(joint).map(|j| j.axis)
    }

    /// The world frames of every body, with their world centres of mass and inertias, at the
    /// base pose `base_pose` (the pose a fixed base is welded at, or a floating base's
    /// configuration: the base frame in the world) and the joint positions `q` (rad or m, by
    /// joint; entries past [`Tree::joint_count`] are not read).
    ///
    /// A quaternion that is not of unit length (only `UnitQuaternion::new_unchecked` makes one)
    /// is normalised; one of length zero is refused as [`EvalInput::BasePose`]. Positions and
    /// inertias that overflow f64 are [`TreeEvalError::OutOfRange`].
    ///
    /// Cost: one `sincos` per revolute joint and about 180 flops per body.
    pub fn kinematics(
        &self,
        base_pose: &Isometry3<f64>,
        q: &[f64; N],
    ) -> Result<TreeKinematics<N>, TreeEvalError> {
        let mut kin = TreeKinematics::empty();
        self.fill_kinematics(&mut kin, base_pose, q)?;
        Ok(kin)
    }

    /// [`Tree::kinematics`] into `kin`, which it overwrites: for a control loop that keeps one
    /// [`TreeKinematics`] (from [`TreeKinematics::default`] or an earlier call) and so copies
    /// none per tick. On an error `kin` is left empty (a fixed base at the identity, no
    /// joints).
    pub fn kinematics_into(
        &self,
        kin: &mut TreeKinematics<N>,
        base_pose: &Isometry3<f64>,
        q: &[f64; N],
    ) -> Result<(), TreeEvalError> {
        let result = self.fill_kinematics(kin, base_pose, q);
        if result.is_err() {
            kin.base = BaseKind::Fixed;
            kin.base_rotation = Matrix3::identity();
            kin.base_translation = Vector3::zeros();
            kin.base_body = Mass::ZERO;
            kin.len = 0;
        }
        result
    }

    #[inline(always)]
    fn fill_kinematics(
        &self,
        kin: &mut TreeKinematics<N>,
        base_pose: &Isometry3<f64>,
        q: &[f64; N],
    ) -> Result<(), TreeEvalError> {
        let base_translation = base_pose.translation.vector;
        let quaternion = base_pose.rotation.quaternion().coords;
        let base_input = TreeEvalError::NonFinite {
            what: EvalInput::BasePose,
        };
        if !(all_finite(base_translation.as_slice()) & all_finite(quaternion.as_slice())) {
            return Err(base_input);
        }
        let norm_squared = quaternion.norm_squared();
        let unit = if norm_squared > 1e-100 && norm_squared < 1e100 {
            quaternion * (1.0 / libm::sqrt(norm_squared))
        } else {
            // Far from unit length: scaled first, so that nothing overflows or underflows.
            let scale = quaternion.amax();
            if scale <= 0.0 {
                return Err(base_input);
            }
            let scaled = quaternion / scale;
            scaled / libm::sqrt(scaled.norm_squared())
        };
        let unit = UnitQuaternion::new_unchecked(Quaternion::from(unit));
        let base_rotation = unit.to_rotation_matrix().into_inner();
        kin.base = self.base;
        kin.base_rotation = base_rotation;
        kin.base_translation = base_translation;
        kin.base_body = match self.base {
            BaseKind::Fixed => Mass::ZERO,
            BaseKind::Floating => Mass::placed(
                self.base_mass,
                &self.base_com,
                &Rotatable::of(&self.base_inertia),
                &base_rotation,
                &Vector3::zeros(),
            ),
        };
        kin.len = self.len;
        kin.depth_first = self.depth_first;
        self.fill_frames(q, kin)
    }

    /// The frames of [`Tree::kinematics`] into `kin` (whose base is set).
    #[inline(always)]
    fn fill_frames(&self, q: &[f64; N], kin: &mut TreeKinematics<N>) -> Result<(), TreeEvalError> {
        let base_rotation = kin.base_rotation;
        let base_translation = kin.base_translation;
        let mut finite = kin.base_body.is_finite();
        // The largest |position| component: with the base translation it bounds every world
        // position (a moderate tree's centres are within 1e302 of their frames).
        let mut reach = 0.0f64;
        for joint in 0..self.len {
            let (Some(spec), Some(&qk)) = (self.joints.get(joint), q.get(joint)) else {
                return Err(TreeEvalError::OutOfRange);
            };
            if !qk.is_finite() {
                return Err(TreeEvalError::NonFinite {
                    what: EvalInput::Position { joint },
                });
            }
            let (parent_rotation, parent_position) = match spec.parent.checked_sub(1) {
                None => (base_rotation, Vector3::zeros()),
                Some(p) => kin
                    .frames
                    .get(p)
                    .map(|f| (f.rotation, f.position))
                    .ok_or(TreeEvalError::OutOfRange)?,
            };
            let (rotation, local_translation) = spec.turned(&parent_rotation, qk);
            let position = parent_position + mul3(&parent_rotation, &local_translation);
            let axis = match spec.aligned {
                Aligned::X => rotation.column(0) * spec.sign,
                Aligned::Y => rotation.column(1) * spec.sign,
                Aligned::Z => rotation.column(2) * spec.sign,
                Aligned::No => rotation * spec.axis,
            };
            let body = Mass::placed(spec.mass, &spec.com, &spec.inertia, &rotation, &position);
            // |x| < bound is false for NaN and ±∞ (and a NaN is then no matter for `reach`).
            finite &= (position.x.abs() < POSITION_BOUND)
                & (position.y.abs() < POSITION_BOUND)
                & (position.z.abs() < POSITION_BOUND);
            reach = larger(reach, amax3(&position));
            if !self.moderate {
                finite &= all_finite((base_translation + position).as_slice()) & body.is_finite();
            }
            let frame = kin.frames.get_mut(joint).ok_or(TreeEvalError::OutOfRange)?;
            *frame = Frame {
                rotation,
                position,
                axis,
                body,
                parent: spec.parent,
                subtree_end: spec.subtree_end,
                kind: spec.kind,
            };
        }
        let base_reach = base_translation.amax();
        finite &= (base_reach + reach + 1e303).is_finite();
        if finite {
            Ok(())
        } else {
            Err(TreeEvalError::OutOfRange)
        }
    }
}

/// The lowest joint whose subtree (its child body and all below it) has no mass, if any: every
/// mass is ≥ 0 (validated), so a subtree's sum is 0 exactly when all its bodies are massless
/// frames. Children come after their parents: one pass from the last joint back, each
/// subtree's mass added into its parent's, completes every subtree before it is read.
fn massless_subtree<const N: usize>(joints: &[Joint; N], len: usize) -> Option<usize> {
    let mut masses = [0.0f64; N];
    for (m, joint) in masses.iter_mut().zip(joints).take(len) {
        *m = joint.mass;
    }
    for k in (0..len.min(N)).rev() {
        let (Some(joint), Some(&m)) = (joints.get(k), masses.get(k)) else {
            continue;
        };
        if let Some(parent) = joint.parent.checked_sub(1).and_then(|p| masses.get_mut(p)) {
            *parent += m;
        }
    }
    // 0 or −0 (no NaN: the masses are finite and ≥ 0, and a sum that overflows is +∞, which
    // carries mass).
    masses.iter().take(len).position(|&m| m <= 0.0)
}

/// Sets every joint's `subtree_end` (one past the largest joint index in its subtree) and
/// tells whether every subtree is contiguous, `k..subtree_end` (a depth-first order): a
/// subtree of `size` joints whose largest index is `k + size − 1` holds exactly those (its
/// joints are distinct and ≥ k).
fn subtree_ranges<const N: usize>(joints: &mut [Joint; N], len: usize) -> bool {
    if u32::try_from(len).is_err() {
        return false;
    }
    let mut size = [1usize; N];
    let mut last = [0usize; N];
    for (k, l) in last.iter_mut().enumerate() {
        *l = k;
    }
    for k in (0..len).rev() {
        let (Some(joint), Some(&s), Some(&l)) = (joints.get(k), size.get(k), last.get(k)) else {
            continue;
        };
        if let Some(p) = joint.parent.checked_sub(1) {
            if let Some(ps) = size.get_mut(p) {
                *ps += s;
            }
            if let Some(pl) = last.get_mut(p) {
                *pl = (*pl).max(l);
            }
        }
    }
    let mut depth_first = true;
    for (k, (joint, (&s, &l))) in joints
        .iter_mut()
        .zip(size.iter().zip(&last))
        .enumerate()
        .take(len)
    {
        depth_first &= l + 1 == k + s;
        joint.subtree_end = u32::try_from(l + 1).unwrap_or(0);
    }
    depth_first
}

#[inline]
fn offset(base: BaseKind) -> usize {
    match base {
        BaseKind::Fixed => 0,
        BaseKind::Floating => 6,
    }
}

/// An input of an evaluation of a [`Tree`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EvalInput {
    /// The base pose given to [`Tree::kinematics`].
    BasePose,
    /// A joint position q_k.
    Position {
        /// The joint.
        joint: usize,
    },
    /// A generalized velocity (index in the velocity layout).
    Velocity {
        /// The index.
        index: usize,
    },
    /// A generalized acceleration (index in the velocity layout).
    Acceleration {
        /// The index.
        index: usize,
    },
    /// The gravity vector.
    Gravity,
    /// A frame's placement on its body.
    Placement,
}

/// Why an evaluation of a [`Tree`] returned no result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TreeEvalError {
    /// An input is NaN or infinite (or a base quaternion of length zero).
    NonFinite {
        /// Which.
        what: EvalInput,
    },
    /// A body index past the tree.
    NoSuchBody {
        /// The index asked for.
        body: usize,
        /// The tree's number of bodies (joints + 1).
        bodies: usize,
    },
    /// A frame placement's rotation is not orthonormal with determinant +1 (to
    /// [`ROTATION_TOLERANCE`]).
    PlacementNotARotation,
    /// A result is not a finite f64: the tree's dimensions, masses and the inputs are too far
    /// apart for f64 (for example positions of 1e200 m).
    OutOfRange,
}

impl fmt::Display for EvalInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BasePose => write!(f, "the base pose"),
            Self::Position { joint } => write!(f, "joint {joint}'s position"),
            Self::Velocity { index } => write!(f, "velocity {index}"),
            Self::Acceleration { index } => write!(f, "acceleration {index}"),
            Self::Gravity => write!(f, "gravity"),
            Self::Placement => write!(f, "the frame placement"),
        }
    }
}

impl fmt::Display for TreeEvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NonFinite { what } => write!(f, "tree: {what} is not finite"),
            Self::NoSuchBody { body, bodies } => {
                write!(f, "tree: no body {body} (the tree has {bodies})")
            }
            Self::PlacementNotARotation => {
                write!(f, "tree: the frame placement's rotation is not a rotation")
            }
            Self::OutOfRange => write!(f, "tree: a result exceeds the f64 range"),
        }
    }
}

impl core::error::Error for TreeEvalError {}

/// One body's frame at one configuration (world axes, positions relative to the base origin),
/// and its mass there.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Frame {
    rotation: Matrix3<f64>,
    /// The frame's origin: the joint's position d.
    position: Vector3<f64>,
    /// The unit joint axis s.
    axis: Vector3<f64>,
    body: Mass,
    parent: usize,
    /// The joint's `subtree_end`.
    subtree_end: u32,
    kind: JointType,
}

impl Frame {
    /// All zeros (so that an array of them is a memset).
    const ZERO: Self = Self {
        rotation: Matrix3::new(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
        position: Vector3::new(0.0, 0.0, 0.0),
        axis: Vector3::new(0.0, 0.0, 0.0),
        body: Mass::ZERO,
        parent: 0,
        subtree_end: 0,
        kind: JointType::Revolute,
    };

    /// The linear part of the joint's unit motion as a twist at the base origin: d × s for a
    /// revolute joint (whose angular part is s), s for a prismatic one (angular part 0).
    #[inline(always)]
    fn linear(&self) -> Vector3<f64> {
        match self.kind {
            JointType::Revolute => self.position.cross(&self.axis),
            JointType::Prismatic => self.axis,
        }
    }

    /// The joint's unit motion as a twist at the base origin: (d × s, s) for a revolute joint,
    /// (s, 0) for a prismatic one.
    #[inline(always)]
    fn motion(&self) -> (Vector3<f64>, Vector3<f64>) {
        match self.kind {
            JointType::Revolute => (self.linear(), self.axis),
            JointType::Prismatic => (self.axis, Vector3::zeros()),
        }
    }

    /// S · (f, n) for the unit motion (`linear`, s): the joint's share of a spatial force at
    /// the base origin.
    #[inline(always)]
    fn project(&self, linear: &Vector3<f64>, force: &Vector3<f64>, moment: &Vector3<f64>) -> f64 {
        match self.kind {
            JointType::Revolute => linear.dot(force) + self.axis.dot(moment),
            JointType::Prismatic => linear.dot(force),
        }
    }
}

/// Writes `value` at (r, c) and (c, r) of the column-major n×n matrix `entries` (nothing
/// outside it).
#[inline(always)]
fn put_symmetric(entries: &mut [f64], n: usize, r: usize, c: usize, value: f64) {
    if r < n && c < n {
        if let Some(e) = entries.get_mut(c * n + r) {
            *e = value;
        }
        if let Some(e) = entries.get_mut(r * n + c) {
            *e = value;
        }
    }
}

/// The world frames of a tree's bodies at one configuration ([`Tree::kinematics`]), with their
/// world masses. Every value in it is finite. The default is empty: a fixed base at the
/// identity and no joints (a buffer for [`Tree::kinematics_into`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeKinematics<const N: usize> {
    base: BaseKind,
    base_rotation: Matrix3<f64>,
    /// The base origin in the world; every other position is relative to it.
    base_translation: Vector3<f64>,
    /// A floating base's own mass, world axes (zero for a fixed base: it counts in nothing).
    base_body: Mass,
    /// Body k + 1 (joint k's child) at index k; the first `len` are the tree's.
    frames: [Frame; N],
    len: usize,
    /// The tree's joints are in depth-first order ([`Tree`]'s `depth_first`).
    depth_first: bool,
}

impl<const N: usize> Default for TreeKinematics<N> {
    fn default() -> Self {
        Self::empty()
    }
}

impl<const N: usize> TreeKinematics<N> {
    /// No joints, a fixed base at the identity: built where it is used, its frames zeroed (a
    /// memset; a constant would be copied).
    #[inline(always)]
    fn empty() -> Self {
        Self {
            base: BaseKind::Fixed,
            base_rotation: Matrix3::identity(),
            base_translation: Vector3::zeros(),
            base_body: Mass::ZERO,
            frames: [Frame::ZERO; N],
            len: 0,
            depth_first: true,
        }
    }

    /// The tree's frames.
    #[inline(always)]
    fn frames(&self) -> &[Frame] {
        self.frames.get(..self.len).unwrap_or(&[])
    }

    /// The number of velocity degrees of freedom ([`Tree::nv`]).
    pub fn nv(&self) -> usize {
        self.len + offset(self.base)
    }

    /// The number of joints.
    pub fn joint_count(&self) -> usize {
        self.len
    }

    /// The number of bodies: joints + 1.
    pub fn body_count(&self) -> usize {
        self.len + 1
    }

    /// Fixed or floating.
    pub fn base(&self) -> BaseKind {
        self.base
    }

    fn offset(&self) -> usize {
        offset(self.base)
    }

    fn floating(&self) -> bool {
        self.base == BaseKind::Floating
    }

    fn no_such_body(&self, body: usize) -> TreeEvalError {
        TreeEvalError::NoSuchBody {
            body,
            bodies: self.body_count(),
        }
    }

    /// Body `body`'s world rotation and its origin relative to the base origin (world axes).
    fn body_frame(&self, body: usize) -> Result<(Matrix3<f64>, Vector3<f64>), TreeEvalError> {
        match body.checked_sub(1) {
            None => Ok((self.base_rotation, Vector3::zeros())),
            Some(k) => self
                .frames()
                .get(k)
                .map(|f| (f.rotation, f.position))
                .ok_or(self.no_such_body(body)),
        }
    }

    /// The world pose of body `body`'s frame (body 0: the base; body k + 1: joint k's frame),
    /// or `None` past the last body.
    pub fn body_pose(&self, body: usize) -> Option<Isometry3<f64>> {
        let (rotation, position) = self.body_frame(body).ok()?;
        Some(isometry(&rotation, &(self.base_translation + position)))
    }

    /// The world position of joint `joint` (its frame's origin d_k), m.
    pub fn joint_position(&self, joint: usize) -> Option<Vector3<f64>> {
        self.frames()
            .get(joint)
            .map(|f| self.base_translation + f.position)
    }

    /// The world unit axis of joint `joint`, s_k.
    pub fn joint_axis(&self, joint: usize) -> Option<Vector3<f64>> {
        self.frames().get(joint).map(|f| f.axis)
    }

    /// The inertia of joint `joint`'s own body alone (no descendants) about the joint's axis:
    /// for a revolute joint s·I s + m‖(c − d) × s‖² (kg·m²; the body's centre-of-mass inertia
    /// I, mass m, centre c, joint position d, unit axis s, all world), for a prismatic one m
    /// (kg). The composite [`TreeComposite::axis_inertia`] of a leaf joint. A joint past the
    /// tree is [`TreeEvalError::NoSuchBody`] (its body, `joint` + 1); a result that is not a
    /// finite positive f64 is [`TreeEvalError::OutOfRange`], and so is a massless frame's (0:
    /// it has no inertia of its own to scale anything by; its subtree's is
    /// [`TreeComposite::axis_inertia`]).
    pub fn own_axis_inertia(&self, joint: usize) -> Result<f64, TreeEvalError> {
        let f = self
            .frames()
            .get(joint)
            .ok_or(self.no_such_body(joint.saturating_add(1)))?;
        let inertia = match f.kind {
            JointType::Revolute => {
                let arm = (f.body.com - f.position).cross(&f.axis);
                f.axis.dot(&f.body.inertia.mul(&f.axis)) + f.body.mass * arm.norm_squared()
            }
            JointType::Prismatic => f.body.mass,
        };
        if inertia.is_finite() && inertia > 0.0 {
            Ok(inertia)
        } else {
            Err(TreeEvalError::OutOfRange)
        }
    }

    /// Checks a frame placement; its rotation matrix and translation.
    fn placement(placement: &Placement) -> Result<(Matrix3<f64>, Vector3<f64>), TreeEvalError> {
        if !placement.is_finite() {
            return Err(TreeEvalError::NonFinite {
                what: EvalInput::Placement,
            });
        }
        if !placement.is_rotation() {
            return Err(TreeEvalError::PlacementNotARotation);
        }
        Ok((placement.rotation_matrix(), Vector3::from(placement.xyz_m)))
    }

    /// The world pose of the frame at `placement` on body `body` (the frame in the body's
    /// frame): the body's pose times the placement.
    pub fn frame_pose(
        &self,
        body: usize,
        placement: &Placement,
    ) -> Result<Isometry3<f64>, TreeEvalError> {
        let (local_rotation, local_translation) = Self::placement(placement)?;
        let (rotation, position) = self.body_frame(body)?;
        let origin = self.base_translation + position + rotation * local_translation;
        if !all_finite(origin.as_slice()) {
            return Err(TreeEvalError::OutOfRange);
        }
        Ok(isometry(&(rotation * local_rotation), &origin))
    }

    /// The 6×N Jacobian of the frame at `placement` on body `body`, in Pinocchio's
    /// LOCAL_WORLD_ALIGNED convention: rows 0..3 give the linear velocity of the frame's origin
    /// p (m/s), rows 3..6 the body's angular velocity (rad/s), both in world axes, from the
    /// generalized velocity (columns in the velocity layout; columns of joints that do not
    /// carry the body, and columns ≥ [`TreeKinematics::nv`], are zero). Column of a revolute
    /// ancestor joint: (s × (p − d), s); of a prismatic one: (s, 0); of a floating base, with
    /// R_b its rotation and p_b its origin: (R_b e_i, 0) for the linear velocity i = 0, 1, 2 and
    /// (R_b e_i × (p − p_b), R_b e_i) for the angular velocity.
    pub fn frame_jacobian(
        &self,
        body: usize,
        placement: &Placement,
    ) -> Result<SMatrix<f64, 6, N>, TreeEvalError> {
        let (_, local_translation) = Self::placement(placement)?;
        let (rotation, position) = self.body_frame(body)?;
        let p = position + rotation * local_translation;
        let mut jacobian = SMatrix::<f64, 6, N>::zeros();
        let offset = self.offset();
        let mut b = body;
        while let Some(k) = b.checked_sub(1) {
            let f = self.frames().get(k).ok_or(TreeEvalError::OutOfRange)?;
            let (linear, angular) = match f.kind {
                JointType::Revolute => (f.axis.cross(&(p - f.position)), f.axis),
                JointType::Prismatic => (f.axis, Vector3::zeros()),
            };
            set_column(&mut jacobian, offset + k, six(&linear, &angular));
            b = f.parent;
        }
        if self.floating() {
            for (i, axis) in self.base_rotation.column_iter().enumerate() {
                let axis = axis.into_owned();
                set_column(&mut jacobian, i, six(&axis, &Vector3::zeros()));
                set_column(&mut jacobian, 3 + i, six(&axis.cross(&p), &axis));
            }
        }
        finite_or_out_of_range(jacobian)
    }

    /// The joint-space mass matrix M (N×N: the nv×nv block top-left, symmetric positive
    /// definite — semidefinite only where massless frames make joints' motions dependent, see
    /// the module docs — zero elsewhere; kg, kg·m or kg·m² by the units of the two
    /// coordinates), by the composite-rigid-body algorithm (see the module docs), Pinocchio's
    /// `crba` (for a floating base the base block in the base frame).
    ///
    /// Cost: about 60 flops per body for the composite inertias, then 11 flops per pair of a
    /// joint and one of its ancestors.
    pub fn mass_matrix(&self) -> Result<SMatrix<f64, N, N>, TreeEvalError> {
        let mut m = SMatrix::<f64, N, N>::zeros();
        self.crba(&mut m)?;
        Ok(m)
    }

    /// [`TreeKinematics::mass_matrix`] into `m`, writing only its top-left nv×nv block (zeroed
    /// first; the rest is left as it is: zero it once and reuse it, and no N×N fill is paid per
    /// call). On an error, `m` holds partial results.
    pub fn mass_matrix_into(&self, m: &mut SMatrix<f64, N, N>) -> Result<(), TreeEvalError> {
        let nv = self.nv();
        let entries = m.as_mut_slice();
        if nv == N {
            // One run: the whole matrix.
            entries.fill(0.0);
        } else {
            for column in entries.chunks_exact_mut(N).take(nv) {
                for e in column.iter_mut().take(nv) {
                    *e = 0.0;
                }
            }
        }
        self.crba(m)
    }

    /// CRBA into `m`, whose top-left nv×nv block is zero: writes every entry of it that is not
    /// structurally zero.
    fn crba(&self, m: &mut SMatrix<f64, N, N>) -> Result<(), TreeEvalError> {
        let offset = self.offset();
        let floating = self.floating();
        let frames = self.frames();
        // Every body's spatial inertia, to which its children's are added leaf to root.
        let mut subtrees = [Spatial::ZERO; N];
        for (sub, f) in subtrees.iter_mut().zip(frames) {
            *sub = Spatial::of(&f.body);
        }
        let mut total = Spatial::of(&self.base_body);
        let base_transpose = self.base_rotation.transpose();
        let entries = m.as_mut_slice();
        // Every entry is S_j · F_k (or R_bᵀ F_k, R_b's entries ≤ 1), at most ‖S_j‖₁ ‖F_k‖₁ in
        // magnitude, and so are its products and partial sums: with `motions` ≥ 1 + Σ ‖S_j‖₁
        // and `forces` = Σ ‖F_k‖₁ (not finite if any F_k is not), a finite product of the two
        // spares checking each entry. `check` sums x − x over the base block.
        let mut check = 0.0;
        let mut forces = 0.0;
        let mut motions = 1.0;
        // The base's rows of column `column`, R_bᵀ F_k (floating base).
        let base_rows = |entries: &mut [f64], column: usize, f: &Vector3<f64>, n: &Vector3<f64>| {
            let f = base_transpose * f;
            let n = base_transpose * n;
            for (i, value) in [f.x, f.y, f.z, n.x, n.y, n.z].into_iter().enumerate() {
                if let Some(e) = entries.get_mut(column * N + i) {
                    *e = value;
                }
                if let Some(e) = entries.get_mut(i * N + column) {
                    *e = value;
                }
            }
        };
        if self.depth_first {
            // Leaf to root: when joint k is reached its subtree, the joints k..subtree_end, is
            // complete, and so is F_j of each of them: row k of M, M_kj = S_k · F_j (no walk up
            // the ancestors); then k's inertia added to its parent's.
            let mut computed = [(Vector3::zeros(), Vector3::zeros()); N];
            for k in (0..self.len).rev() {
                let (Some(f), Some(&sub)) = (frames.get(k), subtrees.get(k)) else {
                    continue;
                };
                let (linear, angular) = f.motion();
                // F_k = I_k S_k: the momentum of subtree k moving with joint k at unit speed.
                let (force, moment) = sub.momentum(&linear, &angular);
                forces += norm1(&force, &moment);
                motions += norm1(&linear, &angular);
                if let Some(slot) = computed.get_mut(k) {
                    *slot = (force, moment);
                }
                // offset + j < nv ≤ N: inside the matrix.
                let row = offset + k;
                let end = usize::try_from(f.subtree_end).unwrap_or(0);
                for (j, (force, moment)) in (row..).zip(computed.get(k..end).unwrap_or(&[])) {
                    let value = linear.dot(force) + angular.dot(moment);
                    if let Some(e) = entries.get_mut(j * N + row) {
                        *e = value;
                    }
                    if let Some(e) = entries.get_mut(row * N + j) {
                        *e = value;
                    }
                }
                if floating {
                    base_rows(entries, row, &force, &moment);
                }
                let parent = match f.parent.checked_sub(1) {
                    None => Some(&mut total),
                    Some(p) => subtrees.get_mut(p),
                };
                if let Some(parent) = parent {
                    parent.add(&sub);
                }
            }
        } else {
            // Any parents-first order: column k of M, M_jk = S_j · F_k for k and every
            // ancestor j of k (walked up from k).
            let mut units = [UnitMotion::ZERO; N];
            for (motion, f) in units.iter_mut().zip(frames) {
                let (linear, angular) = f.motion();
                motions += norm1(&linear, &angular);
                *motion = UnitMotion {
                    linear,
                    angular,
                    parent: f.parent,
                };
            }
            for k in (0..self.len).rev() {
                let (Some(&sub), Some(own)) = (subtrees.get(k), units.get(k)) else {
                    continue;
                };
                let (force, moment) = sub.momentum(&own.linear, &own.angular);
                forces += norm1(&force, &moment);
                let column = offset + k;
                let mut row = column;
                let mut motion = own;
                loop {
                    let value = motion.linear.dot(&force) + motion.angular.dot(&moment);
                    if let Some(e) = entries.get_mut(column * N + row) {
                        *e = value;
                    }
                    if let Some(e) = entries.get_mut(row * N + column) {
                        *e = value;
                    }
                    let Some(p) = motion.parent.checked_sub(1) else {
                        break;
                    };
                    let Some(m) = units.get(p) else {
                        break;
                    };
                    motion = m;
                    row = offset + p;
                }
                if floating {
                    base_rows(entries, column, &force, &moment);
                }
                let parent = match own.parent.checked_sub(1) {
                    None => Some(&mut total),
                    Some(p) => subtrees.get_mut(p),
                };
                if let Some(parent) = parent {
                    parent.add(&sub);
                }
            }
        }
        if floating {
            // The whole tree's spatial inertia in the base frame: [[M𝟙, −[h]×], [[h]×, I_O]],
            // h = M c.
            let mass = total.mass();
            let rotational = base_transpose * total.inertia().matrix() * self.base_rotation;
            let coupling = (base_transpose * total.first_moment()).cross_matrix();
            for c in 0..3 {
                for r in 0..3 {
                    let (coupling, rotational) = (coupling[(r, c)], rotational[(r, c)]);
                    check += residue(mass) + residue(coupling) + residue(rotational);
                    put_symmetric(entries, N, r, c, if r == c { mass } else { 0.0 });
                    // Lower-left M[c]×, upper-right its transpose −M[c]×; the rotational
                    // block from its upper triangle, so that M is exactly symmetric.
                    put_symmetric(entries, N, 3 + r, c, coupling);
                    if r <= c {
                        put_symmetric(entries, N, 3 + r, 3 + c, rotational);
                    }
                }
            }
        }
        let finite = if check == 0.0 && motions * forces < f64::MAX {
            true
        } else {
            // Astronomical values: every entry checked.
            let nv = self.nv();
            check == 0.0
                && entries
                    .chunks_exact(N)
                    .take(nv)
                    .all(|column| column.iter().take(nv).all(|e| e.is_finite()))
        };
        if finite {
            Ok(())
        } else {
            Err(TreeEvalError::OutOfRange)
        }
    }

    /// Every body's subtree mass and first moment Σ m c (relative to the base origin), leaf to
    /// root: body k + 1's at k; and the whole tree's (a fixed base's own mass left out).
    #[inline(always)]
    fn first_moments(&self) -> ([FirstMoment; N], FirstMoment) {
        let mut subtrees = [(0.0, Vector3::zeros()); N];
        for (sub, f) in subtrees.iter_mut().zip(self.frames()) {
            *sub = (f.body.mass, f.body.com * f.body.mass);
        }
        let mut total = (
            self.base_body.mass,
            self.base_body.com * self.base_body.mass,
        );
        for k in (0..self.len).rev() {
            let (Some(f), Some(&(mass, moment))) = (self.frames().get(k), subtrees.get(k)) else {
                continue;
            };
            let parent = match f.parent.checked_sub(1) {
                None => Some(&mut total),
                Some(p) => subtrees.get_mut(p),
            };
            if let Some(parent) = parent {
                parent.0 += mass;
                parent.1 += moment;
            }
        }
        (subtrees, total)
    }

    /// The generalized gravity: the generalized force that holds the tree still against
    /// `gravity` (a world vector, m/s²), Pinocchio's `computeGeneralizedGravity` (N·m for a
    /// revolute joint, N for a prismatic one; for a floating base, the force (N) and moment
    /// about the base origin (N·m) in the base frame). From the subtrees: joint k holds the
    /// weight −M_k g at c_k, so a revolute joint needs s·((c − d) × (−M g)), a prismatic one
    /// s·(−M g). Entries ≥ nv are 0.
    ///
    /// Cost: about 60 flops per body.
    pub fn gravity(&self, gravity: &Vector3<f64>) -> Result<SVector<f64, N>, TreeEvalError> {
        if !all_finite(gravity.as_slice()) {
            return Err(TreeEvalError::NonFinite {
                what: EvalInput::Gravity,
            });
        }
        let (subtrees, total) = self.first_moments();
        let offset = self.offset();
        let mut tau = SVector::<f64, N>::zeros();
        for (k, (f, &(mass, moment))) in self.frames().iter().zip(subtrees.iter()).enumerate() {
            // (c − d) × (−M g) = −(Σ m c − M d) × g.
            let value = match f.kind {
                JointType::Revolute => f.axis.dot(&gravity.cross(&(moment - f.position * mass))),
                JointType::Prismatic => -mass * f.axis.dot(gravity),
            };
            if let Some(e) = tau.get_mut(offset + k) {
                *e = value;
            }
        }
        if self.floating() {
            let base_transpose = self.base_rotation.transpose();
            let force = base_transpose * (gravity * -total.0);
            let moment = base_transpose * gravity.cross(&total.1);
            set_column(&mut tau, 0, six(&force, &moment));
        }
        finite_or_out_of_range(tau)
    }

    /// Inverse dynamics by the recursive Newton–Euler algorithm (spatial vectors in world axes
    /// at the base origin), Pinocchio's `rnea(q, v, a)` with `model.gravity` = `gravity` (a
    /// world vector, m/s²): the generalized force τ = M(q) a + C(q, v) v + g(q) that gives the
    /// generalized accelerations `a` at the generalized velocities `v` (both in the velocity
    /// layout: rad/s and rad/s², or m/s and m/s²; for a floating base the base's twist and
    /// spatial acceleration in the base frame, linear first). For a floating base, entries
    /// 0..6 are the spatial force on the base, force (N) then moment about its origin (N·m),
    /// in the base frame. With v = a = 0 it is [`TreeKinematics::gravity`]. Entries ≥ nv are
    /// not read, and are 0 in the result.
    ///
    /// Cost: about 200 flops per body.
    pub fn inverse_dynamics(
        &self,
        v: &[f64; N],
        a: &[f64; N],
        gravity: &Vector3<f64>,
    ) -> Result<SVector<f64, N>, TreeEvalError> {
        if !all_finite(gravity.as_slice()) {
            return Err(TreeEvalError::NonFinite {
                what: EvalInput::Gravity,
            });
        }
        let nv = self.nv();
        for (index, (vi, ai)) in v.iter().zip(a.iter()).take(nv).enumerate() {
            if !vi.is_finite() {
                return Err(TreeEvalError::NonFinite {
                    what: EvalInput::Velocity { index },
                });
            }
            if !ai.is_finite() {
                return Err(TreeEvalError::NonFinite {
                    what: EvalInput::Acceleration { index },
                });
            }
        }
        let read = |x: &[f64; N], i: usize| x.get(i).copied().unwrap_or(0.0);
        let read3 =
            |x: &[f64; N], i: usize| Vector3::new(read(x, i), read(x, i + 1), read(x, i + 2));
        // The base accelerates at −g, which puts gravity into every body.
        let r = &self.base_rotation;
        let base_motion = match self.base {
            BaseKind::Fixed => Motion {
                v: Vector3::zeros(),
                w: Vector3::zeros(),
                a: -gravity,
                alpha: Vector3::zeros(),
            },
            BaseKind::Floating => Motion {
                v: r * read3(v, 0),
                w: r * read3(v, 3),
                a: r * read3(a, 0) - gravity,
                alpha: r * read3(a, 3),
            },
        };
        let offset = self.offset();
        // Forward pass, root to leaf: v_i = v_λ + S q̇, a_i = a_λ + S q̈ + v_i × S q̇, and the
        // force f_i = I a_i + v_i ×* I v_i.
        let mut motions = [Motion::ZERO; N];
        let mut wrenches = [(Vector3::zeros(), Vector3::zeros()); N];
        for k in 0..self.len {
            let Some(f) = self.frames().get(k) else {
                break;
            };
            let parent = match f.parent.checked_sub(1) {
                None => base_motion,
                Some(p) => motions.get(p).copied().unwrap_or(base_motion),
            };
            let (s_linear, s_angular) = f.motion();
            let qd = read(v, offset + k);
            let qdd = read(a, offset + k);
            let (sv, sw) = (s_linear * qd, s_angular * qd);
            let vel = parent.v + sv;
            let w = parent.w + sw;
            let m = Motion {
                v: vel,
                w,
                a: parent.a + s_linear * qdd + w.cross(&sv) + vel.cross(&sw),
                alpha: parent.alpha + s_angular * qdd + w.cross(&sw),
            };
            if let (Some(slot), Some(wrench)) = (motions.get_mut(k), wrenches.get_mut(k)) {
                *slot = m;
                *wrench = f.body.wrench(&m);
            }
        }
        // Backward pass, leaf to root: τ_k = S_k · f_k, and f_λ += f_k.
        let mut base_wrench = self.base_body.wrench(&base_motion);
        let mut tau = SVector::<f64, N>::zeros();
        for k in (0..self.len).rev() {
            let (Some(f), Some(&(force, moment))) = (self.frames().get(k), wrenches.get(k)) else {
                continue;
            };
            if let Some(e) = tau.get_mut(offset + k) {
                *e = f.project(&f.linear(), &force, &moment);
            }
            let parent = match f.parent.checked_sub(1) {
                None => Some(&mut base_wrench),
                Some(p) => wrenches.get_mut(p),
            };
            if let Some(parent) = parent {
                parent.0 += force;
                parent.1 += moment;
            }
        }
        if self.floating() {
            let base_transpose = r.transpose();
            let (force, moment) = base_wrench;
            set_column(
                &mut tau,
                0,
                six(&(base_transpose * force), &(base_transpose * moment)),
            );
        }
        finite_or_out_of_range(tau)
    }

    /// The total mass (kg) and the world centre of mass (m) of the moving bodies, Pinocchio's
    /// `centerOfMass`: a floating base counts, a fixed base does not (Pinocchio puts it into
    /// the universe, which it leaves out). A fixed base with no joints has mass 0; its centre
    /// of mass is then given as the base origin.
    pub fn center_of_mass(&self) -> Result<(f64, Vector3<f64>), TreeEvalError> {
        let mut mass = self.base_body.mass;
        let mut moment = self.base_body.com * mass;
        for f in self.frames() {
            mass += f.body.mass;
            moment += f.body.com * f.body.mass;
        }
        let com = if mass > 0.0 {
            moment / mass
        } else {
            Vector3::zeros()
        };
        let com = self.base_translation + com;
        if mass.is_finite() & all_finite(com.as_slice()) {
            Ok((mass, com))
        } else {
            Err(TreeEvalError::OutOfRange)
        }
    }

    /// The 3×N Jacobian of the world centre of mass (m/s per unit of generalized velocity),
    /// Pinocchio's `jacobianCenterOfMass`: Σ m_b J_b / Σ m_b over the moving bodies, J_b the
    /// linear rows of the Jacobian of body b's centre. Column of joint k: (M_k/M) s × (c_k − d)
    /// (revolute) or (M_k/M) s (prismatic), M_k, c_k its subtree's mass and centre; of a
    /// floating base: R_b e_i (linear) and R_b e_i × (c − p_b) (angular). Zero where the mass
    /// is zero (a fixed base without joints).
    pub fn com_jacobian(&self) -> Result<SMatrix<f64, 3, N>, TreeEvalError> {
        let (subtrees, (mass, moment)) = self.first_moments();
        let mut jacobian = SMatrix::<f64, 3, N>::zeros();
        if mass.is_nan() || mass <= 0.0 {
            return Ok(jacobian);
        }
        let offset = self.offset();
        for (k, (f, &(sub_mass, sub_moment))) in
            self.frames().iter().zip(subtrees.iter()).enumerate()
        {
            // (M_k/M) s × (c_k − d) = s × (Σ m c − M_k d) / M.
            let column = match f.kind {
                JointType::Revolute => f.axis.cross(&(sub_moment - f.position * sub_mass)) / mass,
                JointType::Prismatic => f.axis * (sub_mass / mass),
            };
            set_column(&mut jacobian, offset + k, column.iter().copied());
        }
        if self.floating() {
            let com = moment / mass;
            for (i, axis) in self.base_rotation.column_iter().enumerate() {
                let axis = axis.into_owned();
                let angular = axis.cross(&com);
                set_column(&mut jacobian, i, axis.iter().copied());
                set_column(&mut jacobian, 3 + i, angular.iter().copied());
            }
        }
        finite_or_out_of_range(jacobian)
    }

    /// What a joint-space controller's tick needs of the composite inertias and of gravity, in
    /// one leaf-to-root pass with no [`TreeComposite`] built: `inertia` gets
    /// [`TreeComposite::axis_inertia`] and `holding` [`TreeKinematics::gravity`] (the same
    /// values, bit for bit; entries ≥ nv are 0), with the errors of
    /// [`TreeKinematics::composite`] and [`TreeKinematics::gravity`]. On an error both hold
    /// partial results.
    pub(crate) fn axis_inertia_and_gravity(
        &self,
        gravity: &Vector3<f64>,
        inertia: &mut [f64; N],
        holding: &mut [f64; N],
    ) -> Result<(), TreeEvalError> {
        if !all_finite(gravity.as_slice()) {
            return Err(TreeEvalError::NonFinite {
                what: EvalInput::Gravity,
            });
        }
        let frames = self.frames();
        // Every subtree as `composite` and `first_moments` merge them, leaf to root: body
        // k + 1's is complete when k is reached (its descendants come after it). Field by field
        // (each is read back as it was written); the first moments' masses are the subtrees'
        // (the same sums in the same order).
        let mut masses = [0.0; N];
        let mut coms = [Vector3::zeros(); N];
        let mut inertias = [Sym3::ZERO; N];
        let mut moments = [Vector3::zeros(); N];
        for ((((m, c), i), h), f) in masses
            .iter_mut()
            .zip(coms.iter_mut())
            .zip(inertias.iter_mut())
            .zip(moments.iter_mut())
            .zip(frames)
        {
            *m = f.body.mass;
            *c = f.body.com;
            *i = f.body.inertia;
            *h = f.body.com * f.body.mass;
        }
        let mut base = self.base_body;
        let mut base_moment = self.base_body.com * self.base_body.mass;
        inertia.fill(0.0);
        holding.fill(0.0);
        let offset = self.offset();
        let origin = self.base_translation;
        // x − x summed over every value: 0 if all are finite, NaN otherwise (what
        // `composite` and `gravity` check: each axis inertia and torque, and each subtree's
        // mass, world centre and inertia).
        let mut check = 0.0;
        for k in (0..self.len).rev() {
            let (Some(f), Some(&mass), Some(&com), Some(sub_inertia), Some(&moment)) = (
                frames.get(k),
                masses.get(k),
                coms.get(k),
                inertias.get(k),
                moments.get(k),
            ) else {
                continue;
            };
            let sub_inertia = *sub_inertia;
            let (axis_inertia, torque) = match f.kind {
                JointType::Revolute => {
                    let arm = (com - f.position).cross(&f.axis);
                    (
                        f.axis.dot(&sub_inertia.mul(&f.axis)) + mass * arm.norm_squared(),
                        f.axis.dot(&gravity.cross(&(moment - f.position * mass))),
                    )
                }
                JointType::Prismatic => (mass, -mass * f.axis.dot(gravity)),
            };
            if let (Some(i), Some(h)) = (inertia.get_mut(offset + k), holding.get_mut(offset + k)) {
                *i = axis_inertia;
                *h = torque;
            }
            let sub = Mass {
                mass,
                com,
                inertia: sub_inertia,
            };
            check += residue(axis_inertia) + residue(torque) + sub.residue(&origin);
            match f.parent.checked_sub(1) {
                None => {
                    base.merge(&sub);
                    base_moment += moment;
                }
                Some(p) => {
                    if let (Some(m), Some(c), Some(i), Some(h)) = (
                        masses.get_mut(p),
                        coms.get_mut(p),
                        inertias.get_mut(p),
                        moments.get_mut(p),
                    ) {
                        merge(m, c, i, &sub);
                        *h += moment;
                    }
                }
            }
        }
        check += base.residue(&origin);
        if self.floating() {
            let base_transpose = self.base_rotation.transpose();
            let com = base_transpose * base.com;
            let rotational = base_transpose * base.inertia.matrix() * self.base_rotation
                + shift(&com) * base.mass;
            let diagonal = rotational.diagonal();
            let force = base_transpose * (gravity * -base.mass);
            let moment = base_transpose * gravity.cross(&base_moment);
            let axes = [
                base.mass, base.mass, base.mass, diagonal.x, diagonal.y, diagonal.z,
            ];
            let torques = [force.x, force.y, force.z, moment.x, moment.y, moment.z];
            for ((i, h), (&a, &t)) in inertia
                .iter_mut()
                .zip(holding.iter_mut())
                .zip(axes.iter().zip(&torques))
            {
                *i = a;
                *h = t;
                check += residue(a) + residue(t);
            }
        }
        if check == 0.0 {
            Ok(())
        } else {
            Err(TreeEvalError::OutOfRange)
        }
    }

    /// Every body's subtree (the body and all it carries): mass, world centre of mass and
    /// inertia about it, and every coordinate's composite inertia about its own axis (see
    /// [`TreeComposite`]).
    ///
    /// Cost: about 80 flops per body.
    pub fn composite(&self) -> Result<TreeComposite<N>, TreeEvalError> {
        // Built where it is returned from: the subtrees merged in place.
        let mut composite = TreeComposite {
            base: self.base_body,
            subtrees: [Mass::ZERO; N],
            len: self.len,
            axis_inertia: SVector::<f64, N>::zeros(),
        };
        let frames = self.frames();
        for (sub, f) in composite.subtrees.iter_mut().zip(frames) {
            *sub = f.body;
        }
        let offset = self.offset();
        // Leaf to root: subtree k is complete when k is reached (its descendants come after
        // it); its axis inertia, then it is merged into its parent's. By reference: its fields
        // were just written one by one by its children's merges.
        for k in (0..self.len).rev() {
            let (parents, rest) = composite.subtrees.split_at_mut(k.min(N));
            let (Some(f), Some(sub)) = (frames.get(k), rest.first()) else {
                continue;
            };
            let value = match f.kind {
                JointType::Revolute => {
                    let arm = (sub.com - f.position).cross(&f.axis);
                    f.axis.dot(&sub.inertia.mul(&f.axis)) + sub.mass * arm.norm_squared()
                }
                JointType::Prismatic => sub.mass,
            };
            if let Some(e) = composite.axis_inertia.get_mut(offset + k) {
                *e = value;
            }
            let parent = match f.parent.checked_sub(1) {
                None => Some(&mut composite.base),
                Some(p) => parents.get_mut(p),
            };
            if let Some(parent) = parent {
                parent.merge(sub);
            }
        }
        if self.floating() {
            let total = &composite.base;
            let base_transpose = self.base_rotation.transpose();
            let com = base_transpose * total.com;
            let rotational = base_transpose * total.inertia.matrix() * self.base_rotation
                + shift(&com) * total.mass;
            let diagonal = rotational.diagonal();
            let mass = Vector3::repeat(total.mass);
            set_column(&mut composite.axis_inertia, 0, six(&mass, &diagonal));
        }
        let origin = self.base_translation;
        let mut finite = all_finite(composite.axis_inertia.as_slice());
        let own = composite.subtrees.get_mut(..self.len).unwrap_or(&mut []);
        for s in core::iter::once(&mut composite.base).chain(own.iter_mut()) {
            s.com += origin;
            finite &= s.is_finite();
        }
        if finite {
            Ok(composite)
        } else {
            Err(TreeEvalError::OutOfRange)
        }
    }
}

/// Writes `values` into column `c` of a column-major R×N matrix (nothing past the matrix).
#[inline]
fn set_column<const R: usize, const N: usize>(
    m: &mut SMatrix<f64, R, N>,
    c: usize,
    values: impl Iterator<Item = f64>,
) {
    let column = c
        .checked_mul(R)
        .and_then(|start| m.as_mut_slice().get_mut(start..start.saturating_add(R)));
    if let Some(column) = column {
        for (e, v) in column.iter_mut().zip(values) {
            *e = v;
        }
    }
}

/// A 6-vector's entries: linear, then angular.
#[inline]
fn six<'a>(linear: &'a Vector3<f64>, angular: &'a Vector3<f64>) -> impl Iterator<Item = f64> + 'a {
    linear.iter().chain(angular.iter()).copied()
}

fn isometry(rotation: &Matrix3<f64>, translation: &Vector3<f64>) -> Isometry3<f64> {
    let q = UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(*rotation));
    Isometry3::from_parts(
        Translation3::from(*translation),
        UnitQuaternion::new_normalize(q.into_inner()),
    )
}

fn finite_or_out_of_range<const R: usize, const C: usize>(
    m: SMatrix<f64, R, C>,
) -> Result<SMatrix<f64, R, C>, TreeEvalError> {
    if all_finite(m.as_slice()) {
        Ok(m)
    } else {
        Err(TreeEvalError::OutOfRange)
    }
}

/// Every body's subtree at one configuration ([`TreeKinematics::composite`]): Pinocchio's
/// `data.mass[i]`, `data.com[i]` (after `centerOfMass(…, computeSubtreeComs=True)`, which
/// gives it in joint i's frame: here it is in the world) and `data.oYcrb[i]` (after `crba` in
/// the WORLD convention), body b being Pinocchio's joint b (fixed base: body 0 is the universe,
/// whose own inertia is left out) or joint b + 1 (floating base: body 0 is the free-flyer).
/// Every value in it is finite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeComposite<const N: usize> {
    /// Body 0's subtree: the whole tree.
    base: Mass,
    /// Body k + 1's at k; the first `len` are the tree's.
    subtrees: [Mass; N],
    len: usize,
    axis_inertia: SVector<f64, N>,
}

impl<const N: usize> TreeComposite<N> {
    /// The number of bodies: joints + 1.
    pub fn body_count(&self) -> usize {
        self.len + 1
    }

    fn subtree(&self, body: usize) -> Option<&Mass> {
        match body.checked_sub(1) {
            None => Some(&self.base),
            Some(k) => self.subtrees.get(..self.len).and_then(|s| s.get(k)),
        }
    }

    /// The mass of body `body`'s subtree, kg (body 0: the total of
    /// [`TreeKinematics::center_of_mass`]).
    pub fn subtree_mass(&self, body: usize) -> Option<f64> {
        self.subtree(body).map(|s| s.mass)
    }

    /// The world centre of mass of body `body`'s subtree, m (body 0 of a fixed base without
    /// joints: its origin).
    pub fn subtree_com(&self, body: usize) -> Option<Vector3<f64>> {
        self.subtree(body).map(|s| s.com)
    }

    /// The inertia tensor of body `body`'s subtree about its centre of mass, world axes, kg·m².
    pub fn subtree_inertia(&self, body: usize) -> Option<Matrix3<f64>> {
        self.subtree(body).map(|s| s.inertia.matrix())
    }

    /// Every generalized coordinate's composite inertia about its own axis, in the velocity
    /// layout (entries ≥ nv are 0): for a revolute joint k, the inertia of its subtree (held
    /// rigid) about the joint line, s·D s + M‖(c − d) × s‖² (kg·m²); for a prismatic joint the
    /// subtree's mass M (kg); for a floating base, the whole tree's mass (×3, kg) and its
    /// inertia about the base frame's axes through the base origin (kg·m²). Equal to the
    /// diagonal of the mass matrix (to rounding).
    pub fn axis_inertia(&self) -> SVector<f64, N> {
        self.axis_inertia
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::articulated::LinkSpec;
    use crate::articulated::tests::{all_finite_slice, link_strategy, pick, raw_values};
    use core::f64::consts::PI;
    use proptest::prelude::*;

    /// Capacity of the random trees: up to 8 joints, on a floating base nv ≤ 14; on a fixed
    /// base the unused part of the fixed-size results is exercised too.
    const CAP: usize = 14;
    const MAX_JOINTS: usize = 8;

    /// The largest |entry| of a set of values, at least `floor`.
    fn scale(values: &[f64], floor: f64) -> f64 {
        values.iter().fold(floor, |m, v| m.max(v.abs()))
    }

    /// Every |a − b| within `rel` times the largest entry of either (norm-relative: entries that
    /// vanish by symmetry are compared at the scale of the whole result).
    #[track_caller]
    fn assert_close_all(what: &str, ours: &[f64], reference: &[f64], rel: f64) {
        assert_eq!(ours.len(), reference.len(), "{what}: lengths");
        let s = scale(ours, 0.0).max(scale(reference, 0.0));
        for (i, (a, b)) in ours.iter().zip(reference).enumerate() {
            assert!(
                (a - b).abs() <= rel * s,
                "{what}[{i}]: {a} against {b} (|diff| {:e}, scale {s:e})",
                (a - b).abs()
            );
        }
    }

    fn close_all(ours: &[f64], reference: &[f64], rel: f64, floor: f64) -> bool {
        let s = scale(ours, floor).max(scale(reference, floor));
        ours.len() == reference.len()
            && ours
                .iter()
                .zip(reference)
                .all(|(a, b)| (a - b).abs() <= rel * s)
    }

    /// The top-left r×c block of a matrix, row-major.
    fn rows<const R: usize, const C: usize>(
        m: &SMatrix<f64, R, C>,
        r: usize,
        c: usize,
    ) -> Vec<f64> {
        (0..r)
            .flat_map(|i| (0..c).map(move |j| m[(i, j)]))
            .collect()
    }

    fn pose(xyz: [f64; 3], rpy: [f64; 3]) -> Isometry3<f64> {
        Isometry3::from_parts(
            Translation3::from(Vector3::from(xyz)),
            UnitQuaternion::from_euler_angles(rpy[0], rpy[1], rpy[2]),
        )
    }

    fn world_inertia(body: &Inertial, rotation: &Matrix3<f64>) -> Matrix3<f64> {
        rotation * body.inertia_matrix() * rotation.transpose()
    }

    // ---------------------------------------------------------------------------------------
    // Pinocchio's numbers.

    fn inertial(mass_kg: f64, com_m: [f64; 3], inertia_kgm2: [f64; 6]) -> Inertial {
        Inertial {
            mass_kg,
            com_m,
            inertia_kgm2,
        }
    }

    fn joint(
        parent_body: usize,
        kind: JointType,
        xyz: [f64; 3],
        rpy: [f64; 3],
        axis: [f64; 3],
        body: Inertial,
    ) -> JointSpec {
        JointSpec {
            parent_body,
            kind,
            origin: Placement::from_xyz_rpy(xyz, rpy),
            axis,
            body,
        }
    }

    /// The tree of `tools/tree_reference.py` (its `BASE` and `JOINTS`).
    fn reference_base() -> Inertial {
        inertial(4.0, [0.05, -0.02, 0.1], [0.3, 0.01, -0.02, 0.4, 0.03, 0.5])
    }

    fn reference_joints() -> [JointSpec; 6] {
        use JointType::{Prismatic, Revolute};
        [
            joint(
                0,
                Revolute,
                [0.1, 0.0, 0.2],
                [0.1, -0.2, 0.3],
                [0.0, 0.0, 1.0],
                inertial(
                    2.0,
                    [0.2, 0.01, -0.03],
                    [0.02, 0.001, 0.002, 0.03, -0.001, 0.025],
                ),
            ),
            joint(
                1,
                Revolute,
                [0.4, 0.0, 0.0],
                [0.0, 0.5, 0.0],
                [0.3, -0.5, 0.8],
                inertial(
                    1.5,
                    [0.15, 0.0, 0.02],
                    [0.01, 0.0, 0.001, 0.015, 0.0, 0.012],
                ),
            ),
            joint(
                2,
                Prismatic,
                [0.3, 0.05, 0.0],
                [0.2, 0.0, -0.1],
                [1.0, 0.0, 0.0],
                inertial(
                    0.5,
                    [0.0, 0.02, 0.05],
                    [0.002, 0.0, 0.0, 0.003, 0.0005, 0.001],
                ),
            ),
            joint(
                2,
                Revolute,
                [0.1, -0.1, 0.0],
                [0.0, 0.0, 1.0],
                [1.0, 0.0, 0.0],
                inertial(
                    0.3,
                    [0.02, 0.0, 0.01],
                    [0.0005, 0.0, 0.0, 0.0006, 0.0, 0.0007],
                ),
            ),
            joint(
                0,
                Revolute,
                [-0.1, 0.2, 0.0],
                [-0.3, 0.0, 0.2],
                [0.0, -1.0, 0.0],
                inertial(1.2, [0.0, 0.1, 0.0], [0.008, 0.0, 0.0, 0.004, 0.0, 0.008]),
            ),
            joint(
                5,
                Prismatic,
                [0.0, 0.3, 0.1],
                [0.0, 0.0, 0.0],
                [0.2, 0.3, -0.9],
                inertial(
                    0.8,
                    [0.05, 0.0, 0.0],
                    [0.001, 0.0002, 0.0, 0.002, 0.0, 0.0015],
                ),
            ),
        ]
    }

    const REF_Q: [f64; 6] = [0.3, -0.7, 0.12, 1.1, -0.05, 0.4];
    const REF_V: [f64; 6] = [0.5, -0.3, 0.2, 0.8, -0.6, 0.4];
    const REF_A: [f64; 6] = [-0.2, 0.7, 0.1, -0.4, 0.3, 0.9];
    const REF_BASE_V: [f64; 6] = [0.3, -0.1, 0.2, 0.4, -0.5, 0.6];
    const REF_BASE_A: [f64; 6] = [-0.6, 0.2, 0.5, -0.3, 0.1, 0.7];
    const REF_GRAVITY: [f64; 3] = [0.5, -0.3, -9.81];
    const REF_FIXED_POSE: ([f64; 3], [f64; 3]) = ([0.5, -0.3, 0.8], [0.2, 0.1, -0.4]);
    const REF_FLOATING_POSE: ([f64; 3], [f64; 3]) = ([0.1, 0.2, 1.0], [0.3, -0.2, 0.5]);
    const REF_FRAME_BODY: usize = 3;
    const REF_FRAME: ([f64; 3], [f64; 3]) = ([0.05, 0.02, -0.01], [0.1, 0.2, 0.3]);
    const REF_COMPOSITE_BODY: usize = 2;

    // Printed by `python3 control-core/tools/tree_reference.py` (Pinocchio 4.1.0); matrices
    // row-major.
    // pinocchio 4.1.0
    // FIXED: nv = 6
    const FIXED_MASS_MATRIX: [f64; 36] = [
        0.8246479641071572,
        0.24377826884630774,
        -0.16952099639310583,
        -0.0012685819864860783,
        0.0,
        0.0,
        0.24377826884630774,
        0.12805416738407846,
        -0.04862058699935337,
        -0.0002095914474033371,
        0.0,
        0.0,
        -0.16952099639310583,
        -0.04862058699935337,
        0.49999999999999983,
        0.0,
        0.0,
        0.0,
        -0.0012685819864860783,
        -0.0002095914474033371,
        0.0,
        0.0005300000000000001,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.07893591304261355,
        -0.05363390480545728,
        0.0,
        0.0,
        0.0,
        0.0,
        -0.05363390480545728,
        0.7999999999999999,
    ];
    const FIXED_RNEA: [f64; 6] = [
        5.105314787913011,
        1.3978956474610431,
        -2.9506638742031277,
        -0.025996082772474415,
        0.5444183254121556,
        -6.982457200645991,
    ];
    const FIXED_GRAVITY: [f64; 6] = [
        5.129410058831094,
        1.3790350157028284,
        -2.9714127309507505,
        -0.025970058336463958,
        0.6762164221604898,
        -7.6059607619522,
    ];
    const FIXED_FRAME_JACOBIAN: [f64; 36] = [
        0.07376966458574358,
        0.20021205458707247,
        0.7461151346244661,
        0.0,
        0.0,
        0.0,
        0.6698286209658967,
        0.38448422124855747,
        -0.36540375795457647,
        0.0,
        0.0,
        0.0,
        0.22386967290226817,
        0.15808824951262523,
        -0.5565898845262891,
        0.0,
        0.0,
        0.0,
        -0.1951008693129303,
        0.6185284502036533,
        0.0,
        0.0,
        0.0,
        0.0,
        -0.29149749921245494,
        -0.5520119842140704,
        0.0,
        0.0,
        0.0,
        0.0,
        0.936464018927702,
        0.5592006129938624,
        0.0,
        0.0,
        0.0,
        0.0,
    ];
    const FIXED_FRAME_POSE: [f64; 12] = [
        1.3488998225650797,
        -0.40282975463869564,
        0.7957968173991865,
        0.7062517033390265,
        0.22447183621527647,
        0.6714319967627889,
        -0.043965064241912495,
        0.9604784826171949,
        -0.27486025095596306,
        -0.7065943706660336,
        0.16460096954608947,
        0.6882084830685822,
    ];
    const FIXED_COM: [f64; 4] = [
        6.3,
        0.8524531733448487,
        -0.2075244234514718,
        0.907020392395845,
    ];
    const FIXED_COM_JACOBIAN: [f64; 18] = [
        -0.015496452764216403,
        0.03115680538856485,
        0.05921548687495763,
        -0.0001401690818802684,
        0.03558154290781995,
        0.018714106614413594,
        0.24991482351928967,
        0.05734723901647074,
        -0.029000298250363214,
        -0.00016999129463616982,
        -0.006051435562537893,
        0.025867018428613005,
        0.07456364927547778,
        0.022147673590856107,
        -0.0441738003592293,
        -0.00042215276600690094,
        0.012940075652206525,
        -0.12290503682583169,
    ];
    const FIXED_COMPOSITE: [f64; 14] = [
        2.3,
        2.3,
        1.1508365580538842,
        -0.38357370761524917,
        0.9843824104194553,
        0.024109992364916004,
        0.0017891093397157422,
        0.014720245814480845,
        0.0017891093397157422,
        0.050337445315472636,
        -0.000930314341637209,
        0.014720245814480845,
        -0.000930314341637209,
        0.0383364408027136,
    ];
    // FLOATING: nv = 12
    const FLOATING_MASS_MATRIX: [f64; 144] = [
        10.3,
        1.7763568394002505e-15,
        -2.220446049250313e-16,
        0.0,
        0.9570024910019967,
        -1.4627031399544588,
        -0.7464304902266643,
        0.02597095442418737,
        0.4404673179305302,
        -0.0001288181288410374,
        0.2120703422486249,
        0.12220729340777312,
        1.7763568394002505e-15,
        10.3,
        4.440892098500626e-16,
        -0.9570024910019982,
        -6.661338147750939e-16,
        1.9419063995270869,
        1.4629244355767148,
        0.4294264153257141,
        -0.06933181292459786,
        -0.0018373646118879884,
        0.0716434129448064,
        0.039936606092586646,
        -2.220446049250313e-16,
        4.440892098500626e-16,
        10.300000000000002,
        1.4627031399544597,
        -1.9419063995270873,
        -5.551115123125783e-17,
        0.10874617821427351,
        0.058692790908376924,
        -0.2262335995197745,
        -0.002368015450258618,
        0.09078613194900373,
        -0.7896014468906145,
        0.0,
        -0.9570024910019982,
        1.4627031399544597,
        1.1905918747206126,
        -0.30925366888249717,
        -0.44591520803038953,
        -0.2727438941960709,
        -0.04794114093331682,
        -0.0533406804364239,
        0.0003252337645103026,
        0.07793623506495516,
        -0.4107712365309612,
        0.9570024910019967,
        -6.661338147750939e-16,
        -1.9419063995270873,
        -0.30925366888249717,
        1.8569767727692268,
        0.061690937263143564,
        -0.22703814062067423,
        -0.03980705470268775,
        0.22698873214842408,
        0.0016142711445797998,
        -0.0841215749374947,
        -0.08538670019011324,
        -1.4627031399544588,
        1.9419063995270869,
        -5.551115123125783e-17,
        -0.44591520803038953,
        0.061690937263143564,
        2.07725379765073,
        0.9846324679819137,
        0.2929567068399106,
        -0.1734152966005307,
        -0.0012702200400316163,
        -0.11614788459858097,
        -0.06789412082305607,
        -0.7464304902266643,
        1.4629244355767148,
        0.10874617821427351,
        -0.2727438941960709,
        -0.22703814062067423,
        0.9846324679819137,
        0.8246479641071571,
        0.2437782688463079,
        -0.16952099639310575,
        -0.001268581986486075,
        0.0,
        0.0,
        0.02597095442418737,
        0.4294264153257141,
        0.058692790908376924,
        -0.04794114093331682,
        -0.03980705470268775,
        0.2929567068399106,
        0.2437782688463079,
        0.12805416738407874,
        -0.04862058699935343,
        -0.00020959144740333516,
        0.0,
        0.0,
        0.4404673179305302,
        -0.06933181292459786,
        -0.2262335995197745,
        -0.0533406804364239,
        0.22698873214842408,
        -0.1734152966005307,
        -0.16952099639310575,
        -0.04862058699935343,
        0.4999999999999999,
        0.0,
        0.0,
        0.0,
        -0.0001288181288410374,
        -0.0018373646118879884,
        -0.002368015450258618,
        0.0003252337645103026,
        0.0016142711445797998,
        -0.0012702200400316163,
        -0.001268581986486075,
        -0.00020959144740333516,
        0.0,
        0.0005300000000000005,
        0.0,
        0.0,
        0.2120703422486249,
        0.0716434129448064,
        0.09078613194900373,
        0.07793623506495516,
        -0.0841215749374947,
        -0.11614788459858097,
        0.0,
        0.0,
        0.0,
        0.0,
        0.07893591304261359,
        -0.05363390480545713,
        0.12220729340777312,
        0.039936606092586646,
        -0.7896014468906145,
        -0.4107712365309612,
        -0.08538670019011324,
        -0.06789412082305607,
        0.0,
        0.0,
        0.0,
        0.0,
        -0.05363390480545713,
        0.7999999999999998,
    ];
    const FLOATING_RNEA: [f64; 12] = [
        7.786078995374817,
        37.37075972372847,
        98.32111331025756,
        9.93412823901205,
        -18.147267093707686,
        6.796308825153902,
        6.199559598890484,
        2.2497305791082383,
        -2.4008293736705393,
        -0.029999878013844787,
        1.1777304486842433,
        -6.546781894945023,
    ];
    const FLOATING_GRAVITY: [f64; 12] = [
        17.09658014584338,
        34.392782268087316,
        93.65149184170367,
        10.103917754876747,
        -16.06805451897823,
        4.056343934187604,
        4.634648030081907,
        2.0106651587536244,
        -1.557392547892125,
        -0.02787986506103355,
        1.4166942330801366,
        -6.84315492016044,
    ];
    const FLOATING_FRAME_JACOBIAN: [f64; 72] = [
        0.8600893382050472,
        -0.5095362866083979,
        -0.024881779183339794,
        0.008875639715597308,
        0.045700004937726385,
        -0.6290533972466166,
        -0.5291122716612492,
        -0.21773321647447033,
        0.8395948258967055,
        0.0,
        0.0,
        0.0,
        0.46986894694951536,
        0.8102391858702562,
        -0.3503364588118941,
        -0.11027685973539586,
        0.3005049273803635,
        0.5470889224715458,
        0.41986836986798776,
        0.3526788291679056,
        0.46008888260557307,
        0.0,
        0.0,
        0.0,
        0.19866933079506122,
        0.2896294776255156,
        0.9362933635841992,
        0.22238877380229077,
        -0.7602646619465263,
        0.18798940041108994,
        0.21904504396449523,
        0.2027677679649538,
        -0.2887884146399154,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.8600893382050472,
        -0.5095362866083979,
        -0.024881779183339794,
        -0.08295237299042722,
        0.6760583993620846,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.46986894694951536,
        0.8102391858702562,
        -0.3503364588118941,
        -0.5411173270302854,
        -0.006247308258989587,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.19866933079506122,
        0.2896294776255156,
        0.9362933635841992,
        0.8368458294111624,
        0.7368215603465287,
        0.0,
        0.0,
        0.0,
        0.0,
    ];
    const FLOATING_FRAME_POSE: [f64; 12] = [
        0.6773621826157952,
        0.7739791352218292,
        1.2615786618766525,
        0.59599935778167,
        -0.6563901475404715,
        0.462532960701867,
        0.6639076886874316,
        0.7268180061016392,
        0.17596069705519551,
        -0.4516761521550028,
        0.20220672644161966,
        0.8689655305915274,
    ];
    const FLOATING_COM: [f64; 4] = [
        10.3,
        0.18748550864306224,
        0.3710978691781635,
        1.165580026452973,
    ];
    const FLOATING_COM_JACOBIAN: [f64; 36] = [
        0.8600893382050473,
        -0.5095362866083979,
        -0.024881779183339794,
        0.04380901349524473,
        0.08460443935672207,
        -0.2182065195524263,
        -0.13496269798455587,
        -0.019216638941398367,
        0.04075703038333522,
        8.58572116348977e-05,
        0.013945204003652845,
        0.01013657562981947,
        0.4698689469495154,
        0.8102391858702562,
        -0.3503364588118941,
        -0.1250329279155291,
        0.10970741398346079,
        0.08603202680766178,
        0.0773297518711313,
        0.03296881841035225,
        0.022334411776969564,
        -6.986701927903227e-05,
        0.01222212397987455,
        0.035573377693819914,
        0.1986693307950612,
        0.2896294776255156,
        0.9362933635841992,
        0.10605272925028196,
        -0.15806476020605092,
        0.026392143895736776,
        0.0366244193282033,
        0.017911441854630564,
        -0.014018855079607543,
        -0.0002694081859360994,
        0.014357705834161056,
        -0.06829640146017806,
    ];
    const FLOATING_COMPOSITE: [f64; 14] = [
        2.3,
        2.3,
        0.5068082972161961,
        0.5942754939274599,
        1.3789769219627908,
        0.03528255622507859,
        -0.016811594009785012,
        0.005097022223020192,
        -0.016811594009785012,
        0.031836861335110614,
        0.005719734767392327,
        0.005097022223020192,
        0.005719734767392327,
        0.0456644609229131,
    ];

    struct Reference<'a> {
        mass_matrix: &'a [f64],
        rnea: &'a [f64],
        gravity: &'a [f64],
        frame_jacobian: &'a [f64],
        frame_pose: &'a [f64],
        com: &'a [f64],
        com_jacobian: &'a [f64],
        composite: &'a [f64],
    }

    /// Every evaluation of the reference tree on `base` against Pinocchio's, to 1e-12 of each
    /// result's largest entry.
    fn check_reference(base: BaseKind, r: &Reference<'_>) {
        let joints = reference_joints();
        let spec = TreeSpec {
            base,
            base_body: reference_base(),
            joints: &joints,
        };
        let tree = Tree::<CAP>::new(&spec).unwrap();
        let nv = tree.nv();
        let (base_pose, offset) = match base {
            BaseKind::Fixed => (pose(REF_FIXED_POSE.0, REF_FIXED_POSE.1), 0),
            BaseKind::Floating => (pose(REF_FLOATING_POSE.0, REF_FLOATING_POSE.1), 6),
        };
        let mut q = [0.0; CAP];
        let mut v = [0.0; CAP];
        let mut a = [0.0; CAP];
        q[..6].copy_from_slice(&REF_Q);
        v[offset..offset + 6].copy_from_slice(&REF_V);
        a[offset..offset + 6].copy_from_slice(&REF_A);
        if base == BaseKind::Floating {
            v[..6].copy_from_slice(&REF_BASE_V);
            a[..6].copy_from_slice(&REF_BASE_A);
        }
        let g = Vector3::from(REF_GRAVITY);
        let kin = tree.kinematics(&base_pose, &q).unwrap();
        let rel = 1e-12;
        assert_close_all(
            "crba",
            &rows(&kin.mass_matrix().unwrap(), nv, nv),
            r.mass_matrix,
            rel,
        );
        let tau = kin.inverse_dynamics(&v, &a, &g).unwrap();
        assert_close_all("rnea", &tau.as_slice()[..nv], r.rnea, rel);
        assert_close_all(
            "gravity",
            &kin.gravity(&g).unwrap().as_slice()[..nv],
            r.gravity,
            rel,
        );
        let frame = Placement::from_xyz_rpy(REF_FRAME.0, REF_FRAME.1);
        let jacobian = kin.frame_jacobian(REF_FRAME_BODY, &frame).unwrap();
        assert_close_all(
            "frame jacobian",
            &rows(&jacobian, 6, nv),
            r.frame_jacobian,
            rel,
        );
        let frame_pose = kin.frame_pose(REF_FRAME_BODY, &frame).unwrap();
        let rotation = frame_pose.rotation.to_rotation_matrix().into_inner();
        assert_close_all(
            "frame position",
            frame_pose.translation.vector.as_slice(),
            &r.frame_pose[..3],
            rel,
        );
        assert_close_all(
            "frame rotation",
            &rows(&rotation, 3, 3),
            &r.frame_pose[3..],
            rel,
        );
        let (mass, com) = kin.center_of_mass().unwrap();
        assert_close_all("com", &[mass, com.x, com.y, com.z], r.com, rel);
        assert_close_all(
            "com jacobian",
            &rows(&kin.com_jacobian().unwrap(), 3, nv),
            r.com_jacobian,
            rel,
        );
        let composite = kin.composite().unwrap();
        let body = REF_COMPOSITE_BODY;
        let sub_mass = composite.subtree_mass(body).unwrap();
        assert_close_all(
            "subtree mass",
            &[sub_mass, sub_mass],
            &r.composite[..2],
            rel,
        );
        let sub_com = composite.subtree_com(body).unwrap();
        assert_close_all("subtree com", sub_com.as_slice(), &r.composite[2..5], rel);
        let sub_inertia = composite.subtree_inertia(body).unwrap();
        assert_close_all(
            "subtree inertia",
            &rows(&sub_inertia, 3, 3),
            &r.composite[5..],
            rel,
        );
        // The axis inertias are the diagonal of Pinocchio's mass matrix.
        let diagonal: Vec<f64> = (0..nv).map(|i| r.mass_matrix[i * nv + i]).collect();
        assert_close_all(
            "axis inertia",
            &composite.axis_inertia().as_slice()[..nv],
            &diagonal,
            rel,
        );
    }

    #[test]
    fn fixed_base_matches_pinocchio() {
        check_reference(
            BaseKind::Fixed,
            &Reference {
                mass_matrix: &FIXED_MASS_MATRIX,
                rnea: &FIXED_RNEA,
                gravity: &FIXED_GRAVITY,
                frame_jacobian: &FIXED_FRAME_JACOBIAN,
                frame_pose: &FIXED_FRAME_POSE,
                com: &FIXED_COM,
                com_jacobian: &FIXED_COM_JACOBIAN,
                composite: &FIXED_COMPOSITE,
            },
        );
    }

    #[test]
    fn floating_base_matches_pinocchio() {
        check_reference(
            BaseKind::Floating,
            &Reference {
                mass_matrix: &FLOATING_MASS_MATRIX,
                rnea: &FLOATING_RNEA,
                gravity: &FLOATING_GRAVITY,
                frame_jacobian: &FLOATING_FRAME_JACOBIAN,
                frame_pose: &FLOATING_FRAME_POSE,
                com: &FLOATING_COM,
                com_jacobian: &FLOATING_COM_JACOBIAN,
                composite: &FLOATING_COMPOSITE,
            },
        );
    }

    // ---------------------------------------------------------------------------------------
    // Random trees.

    /// A random tree: base, joints and one state.
    #[derive(Debug, Clone)]
    struct Case {
        base: BaseKind,
        base_body: Inertial,
        joints: Vec<JointSpec>,
        pose: Isometry3<f64>,
        q: [f64; CAP],
        v: [f64; CAP],
        a: [f64; CAP],
    }

    impl Case {
        fn spec(&self) -> TreeSpec<'_> {
            TreeSpec {
                base: self.base,
                base_body: self.base_body,
                joints: &self.joints,
            }
        }

        fn tree(&self) -> Tree<CAP> {
            Tree::new(&self.spec()).expect("valid random tree")
        }

        fn kin(&self) -> TreeKinematics<CAP> {
            self.tree().kinematics(&self.pose, &self.q).unwrap()
        }

        /// An upper bound on the magnitude of the bodies' terms in `kin`'s inverse dynamics
        /// at velocities `v`, accelerations `a` and gravity `g` (gravity's alone with both 0):
        /// every lever at most `L = 2 r + 1` m (`r` the farthest body origin or centre of mass
        /// from the world origin; the metre covers the base's linear coordinates), every body's
        /// linear acceleration at most `|g| + (Σ|a| + (Σ|v|)²) L`, its angular one
        /// `Σ|a| + (Σ|v|)²`. Torques that are sums of such terms may nearly cancel, and then
        /// their rounding is that of the terms.
        fn term_bound(
            &self,
            kin: &TreeKinematics<CAP>,
            v: &[f64],
            a: &[f64],
            g: &Vector3<f64>,
        ) -> f64 {
            let bodies = self.joints.len() + 1;
            let mut reach = 0.0f64;
            for b in 0..bodies {
                let pose = kin.body_pose(b).unwrap();
                let com = pose * nalgebra::Point3::from(Vector3::from(self.body(b).com_m));
                reach = reach
                    .max(pose.translation.vector.norm())
                    .max(com.coords.norm());
            }
            let lever = 2.0 * reach + 1.0;
            let speed: f64 = v.iter().map(|x| x.abs()).sum();
            let angular = a.iter().map(|x| x.abs()).sum::<f64>() + speed * speed;
            let linear = g.norm() + angular * lever;
            (0..bodies)
                .map(|b| {
                    let body = self.body(b);
                    let inertia = 3.0 * scale(&body.inertia_kgm2, 0.0);
                    body.mass_kg.abs() * linear * lever + inertia * angular
                })
                .sum()
        }

        /// The body inertial of body `b`.
        fn body(&self, b: usize) -> Inertial {
            if b == 0 {
                self.base_body
            } else {
                self.joints[b - 1].body
            }
        }

        /// The state moved by `h` along the velocity direction `dir` (nv entries): the base by
        /// the body-frame displacement (translation, rotation vector), the joints by h·dir.
        fn moved(&self, dir: &[f64], h: f64) -> (Isometry3<f64>, [f64; CAP]) {
            let offset = offset(self.base);
            let mut pose = self.pose;
            if self.base == BaseKind::Floating {
                let lin = Vector3::new(dir[0], dir[1], dir[2]) * h;
                let ang = Vector3::new(dir[3], dir[4], dir[5]) * h;
                pose = self.pose * Isometry3::new(lin, ang);
            }
            let mut q = self.q;
            for k in 0..self.joints.len() {
                q[k] += h * dir[offset + k];
            }
            (pose, q)
        }
    }

    fn inertial_of(link: &LinkSpec) -> Inertial {
        Inertial {
            mass_kg: link.mass_kg,
            com_m: link.com_m,
            inertia_kgm2: link.inertia_kgm2,
        }
    }

    fn joint_of(k: usize, link: &LinkSpec, parent: u64, prismatic: bool, axis: u8) -> JointSpec {
        const AXES: [[f64; 3]; 6] = [
            [1.0, 0.0, 0.0],
            [-1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, -1.0, 0.0],
            [0.0, 0.0, 1.0],
            [0.0, 0.0, -1.0],
        ];
        // The origin rotation as drawn, or (from the high bits of `parent`) the identity or a
        // turn about one coordinate axis by the drawn roll, as most URDF joints have them (the
        // kinematics takes a shorter way for these).
        let roll = link.origin_rpy_rad[0];
        let rpy = match (parent >> 40) % 6 {
            2 => [0.0; 3],
            3 => [roll, 0.0, 0.0],
            4 => [0.0, roll, 0.0],
            5 => [0.0, 0.0, roll],
            _ => link.origin_rpy_rad,
        };
        JointSpec {
            parent_body: (parent % (k as u64 + 1)) as usize,
            kind: if prismatic {
                JointType::Prismatic
            } else {
                JointType::Revolute
            },
            origin: Placement::from_xyz_rpy(link.origin_xyz_m, rpy),
            axis: AXES.get(axis as usize).copied().unwrap_or(link.axis),
            body: inertial_of(link),
        }
    }

    fn case_strategy(bases: &'static [BaseKind]) -> impl Strategy<Value = Case> {
        (
            (
                prop::sample::select(bases),
                link_strategy(),
                prop::collection::vec(
                    (link_strategy(), any::<u64>(), any::<bool>(), 0u8..12),
                    1..=MAX_JOINTS,
                ),
            ),
            (
                prop::array::uniform3(-2.0..2.0f64),
                prop::array::uniform3(-PI..PI),
                prop::array::uniform32(-2.0..2.0f64),
            ),
        )
            .prop_map(|((base, base_link, links), (xyz, rpy, state))| Case {
                base,
                base_body: inertial_of(&base_link),
                joints: links
                    .iter()
                    .enumerate()
                    .map(|(k, (link, parent, prismatic, axis))| {
                        joint_of(k, link, *parent, *prismatic, *axis)
                    })
                    .collect(),
                pose: pose(xyz, rpy),
                q: core::array::from_fn(|i| state[i] * 1.5),
                v: core::array::from_fn(|i| state[CAP + i % (32 - CAP)]),
                a: core::array::from_fn(|i| state[(CAP + 9 + i) % 32]),
            })
    }

    const BOTH: &[BaseKind] = &[BaseKind::Fixed, BaseKind::Floating];
    const FLOATING: &[BaseKind] = &[BaseKind::Floating];

    /// M = Σ_b J_bᵀ m_b J_b + J_ω,bᵀ I_b J_ω,b over the moving bodies, J_b the linear rows of
    /// the Jacobian of body b's centre of mass, J_ω,b the angular rows, I_b its world inertia.
    fn slow_mass_matrix(case: &Case, kin: &TreeKinematics<CAP>) -> SMatrix<f64, CAP, CAP> {
        let mut m = SMatrix::<f64, CAP, CAP>::zeros();
        for b in 0..kin.body_count() {
            let body = case.body(b);
            if b == 0 && case.base == BaseKind::Fixed {
                continue;
            }
            let at_com = Placement {
                xyz_m: body.com_m,
                rotation: Placement::IDENTITY.rotation,
            };
            let j = kin.frame_jacobian(b, &at_com).unwrap();
            let linear = j.fixed_rows::<3>(0).into_owned();
            let angular = j.fixed_rows::<3>(3).into_owned();
            let rotation = kin
                .body_pose(b)
                .unwrap()
                .rotation
                .to_rotation_matrix()
                .into_inner();
            m += linear.transpose() * linear * body.mass_kg
                + angular.transpose() * world_inertia(&body, &rotation) * angular;
        }
        m
    }

    /// Σ_b ½(m_b‖v_c‖² + ω·I_b ω), every body's velocity from its frame Jacobian.
    fn kinetic_energy(case: &Case, kin: &TreeKinematics<CAP>, v: &SVector<f64, CAP>) -> f64 {
        let mut energy = 0.0;
        for b in 0..kin.body_count() {
            let body = case.body(b);
            let at_com = Placement {
                xyz_m: body.com_m,
                rotation: Placement::IDENTITY.rotation,
            };
            let twist = kin.frame_jacobian(b, &at_com).unwrap() * v;
            let linear = twist.fixed_rows::<3>(0).into_owned();
            let angular = twist.fixed_rows::<3>(3).into_owned();
            let rotation = kin
                .body_pose(b)
                .unwrap()
                .rotation
                .to_rotation_matrix()
                .into_inner();
            let mass = if b == 0 && case.base == BaseKind::Fixed {
                0.0
            } else {
                body.mass_kg
            };
            energy += 0.5
                * (mass * linear.norm_squared()
                    + angular.dot(&(world_inertia(&body, &rotation) * angular)));
        }
        energy
    }

    fn unit(i: usize) -> [f64; CAP] {
        let mut e = [0.0; CAP];
        e[i] = 1.0;
        e
    }

    proptest! {
        /// CRBA is the sum over the bodies of their Jacobian products, on branching trees with
        /// both joint kinds and both bases (1e-12 of M's largest entry); symmetric exactly;
        /// the axis inertias are its diagonal.
        #[test]
        fn mass_matrix_is_the_sum_of_body_jacobian_products(case in case_strategy(BOTH)) {
            check_mass_matrix(&case)?;
        }

        /// `subtree_end` and `depth_first` describe the tree (every subtree the joints
        /// k..subtree_end exactly when the order is depth-first); the mass matrix filled row by
        /// row over each subtree (depth-first) and by walking up the ancestors (any order) is
        /// the same, bit for bit; the one-pass axis inertias and gravity torques of the joint
        /// ticks are `composite`'s and `gravity`'s, bit for bit.
        #[test]
        fn fast_paths_give_the_same_numbers(
            case in case_strategy(BOTH),
            g in prop::array::uniform3(-10.0..10.0f64),
        ) {
            check_fast_paths(&case, &Vector3::from(g))?;
        }

        /// RNEA at rest without gravity is M a: column i of M is RNEA(q, 0, e_i, 0); with
        /// v = a = 0 it is the generalized gravity (at 1e-12 of the bodies' gravity terms).
        #[test]
        fn rnea_at_rest_is_the_mass_matrix_and_gravity(case in case_strategy(BOTH)) {
            check_rnea_at_rest(&case)?;
        }

        /// ½ vᵀ M v equals the bodies' kinetic energies, each from its own frame Jacobian
        /// (the floating base's included).
        #[test]
        fn kinetic_energy_from_the_frame_jacobians(case in case_strategy(BOTH)) {
            check_kinetic_energy(&case)?;
        }

        /// The centre-of-mass Jacobian is the central difference of the centre of mass (the
        /// floating base moved by its body-frame displacements); the generalized gravity is the
        /// central difference of the potential energy −M g·c.
        #[test]
        fn com_jacobian_and_gravity_are_derivatives(case in case_strategy(BOTH)) {
            check_derivatives(&case)?;
        }

        /// With a = 0 and no gravity, RNEA gives the velocity terms c(q, v), whose power is
        /// ½ vᵀ Ṁ v (vᵀ(Ṁ − 2C)v = 0); Ṁ by a central difference along v.
        #[test]
        fn velocity_terms_balance_the_energy(case in case_strategy(BOTH)) {
            check_velocity_terms(&case)?;
        }

        /// A floating base's mass matrix does not depend on the base pose (the base block is in
        /// the base frame), nor its RNEA without gravity.
        #[test]
        fn floating_mass_matrix_does_not_depend_on_the_base_pose(
            case in case_strategy(FLOATING),
            xyz in prop::array::uniform3(-100.0..100.0f64),
            rpy in prop::array::uniform3(-PI..PI),
        ) {
            check_base_pose_independence(&case, &pose(xyz, rpy))?;
        }

        /// The subtrees are the sums of their bodies: body 0's is the centre of mass of
        /// `center_of_mass`, every subtree's mass and centre the mass-weighted sum over its
        /// bodies, and the whole tree's inertia about its centre Σ (I_b + m_b shift(c_b − c)).
        #[test]
        fn composite_subtrees_are_sums_of_bodies(case in case_strategy(BOTH)) {
            check_composite_sums(&case)?;
        }
    }

    // The identities, one function each: the random trees above and the trees with massless
    // frames below are held to the same ones.

    fn check_mass_matrix(case: &Case) -> Result<(), TestCaseError> {
        let kin = case.kin();
        let m = kin.mass_matrix().unwrap();
        prop_assert!(close_all(
            m.as_slice(),
            slow_mass_matrix(case, &kin).as_slice(),
            1e-12,
            0.0
        ));
        prop_assert_eq!(m, m.transpose());
        let diagonal = m.diagonal();
        prop_assert!(close_all(
            kin.composite().unwrap().axis_inertia().as_slice(),
            diagonal.as_slice(),
            1e-12,
            0.0
        ));
        // Into a matrix that holds anything: the nv×nv block is M, the rest untouched.
        let mut reused = SMatrix::<f64, CAP, CAP>::repeat(7.0);
        kin.mass_matrix_into(&mut reused).unwrap();
        let nv = kin.nv();
        for r in 0..CAP {
            for c in 0..CAP {
                prop_assert_eq!(
                    reused[(r, c)],
                    if r < nv && c < nv { m[(r, c)] } else { 7.0 }
                );
            }
        }
        Ok(())
    }

    fn check_fast_paths(case: &Case, g: &Vector3<f64>) -> Result<(), TestCaseError> {
        let tree = case.tree();
        let n = case.joints.len();
        let descends = |mut j: usize, k: usize| loop {
            if j == k {
                break true;
            }
            match case.joints[j].parent_body.checked_sub(1) {
                Some(p) => j = p,
                None => break false,
            }
        };
        let mut depth_first = true;
        for k in 0..n {
            let members: Vec<usize> = (0..n).filter(|&j| descends(j, k)).collect();
            let last = *members.last().unwrap();
            depth_first &= members.len() == last + 1 - k;
            prop_assert_eq!(tree.joints[k].subtree_end as usize, last + 1);
        }
        prop_assert_eq!(tree.depth_first, depth_first);
        let kin = case.kin();
        let m = kin.mass_matrix().unwrap();
        let mut walked = kin;
        walked.depth_first = false;
        prop_assert_eq!(walked.mass_matrix().unwrap(), m);
        let (mut inertia, mut holding) = ([1.0; CAP], [1.0; CAP]);
        kin.axis_inertia_and_gravity(g, &mut inertia, &mut holding)
            .unwrap();
        let composite = kin.composite().unwrap().axis_inertia();
        prop_assert_eq!(&inertia[..], composite.as_slice());
        let gravity = kin.gravity(g).unwrap();
        prop_assert_eq!(&holding[..], gravity.as_slice());
        Ok(())
    }

    fn check_rnea_at_rest(case: &Case) -> Result<(), TestCaseError> {
        let kin = case.kin();
        let m = kin.mass_matrix().unwrap();
        let zero = [0.0; CAP];
        for i in 0..kin.nv() {
            let column = kin
                .inverse_dynamics(&zero, &unit(i), &Vector3::zeros())
                .unwrap();
            prop_assert!(close_all(
                column.as_slice(),
                m.column(i).into_owned().as_slice(),
                1e-12,
                0.0
            ));
        }
        let g = Vector3::new(0.4, -0.2, -9.81);
        let held = kin.inverse_dynamics(&zero, &zero, &g).unwrap();
        // At the scale of the bodies' gravity terms, which may nearly cancel (a single link
        // whose centre of mass is almost above its axis).
        prop_assert!(close_all(
            held.as_slice(),
            kin.gravity(&g).unwrap().as_slice(),
            1e-12,
            case.term_bound(&kin, &zero, &zero, &g)
        ));
        Ok(())
    }

    fn check_kinetic_energy(case: &Case) -> Result<(), TestCaseError> {
        let kin = case.kin();
        let v = SVector::<f64, CAP>::from(case.v);
        let mut v_nv = v;
        for i in kin.nv()..CAP {
            v_nv[i] = 0.0;
        }
        let from_m = 0.5 * v_nv.dot(&(kin.mass_matrix().unwrap() * v_nv));
        let from_bodies = kinetic_energy(case, &kin, &v_nv);
        prop_assert!(
            (from_m - from_bodies).abs() <= 1e-12 * from_m.abs().max(1e-3),
            "{} {}",
            from_m,
            from_bodies
        );
        Ok(())
    }

    fn check_derivatives(case: &Case) -> Result<(), TestCaseError> {
        let tree = case.tree();
        let kin = case.kin();
        let jacobian = kin.com_jacobian().unwrap();
        let g = Vector3::new(0.4, -0.2, -9.81);
        let gravity = kin.gravity(&g).unwrap();
        let h = 1e-6;
        let potential = |dir: &[f64], h: f64| {
            let (pose, q) = case.moved(dir, h);
            let (mass, com) = tree
                .kinematics(&pose, &q)
                .unwrap()
                .center_of_mass()
                .unwrap();
            (com, -mass * g.dot(&com))
        };
        for i in 0..kin.nv() {
            let dir = unit(i);
            let (plus, v_plus) = potential(&dir, h);
            let (minus, v_minus) = potential(&dir, -h);
            let fd = (plus - minus) / (2.0 * h);
            prop_assert!(
                (fd - jacobian.column(i)).amax() <= 1e-7,
                "column {}: {} {}",
                i,
                fd,
                jacobian.column(i)
            );
            let fd_potential = (v_plus - v_minus) / (2.0 * h);
            prop_assert!(
                (fd_potential - gravity[i]).abs() <= 1e-7 * scale(gravity.as_slice(), 1.0),
                "{} {} {}",
                i,
                fd_potential,
                gravity[i]
            );
        }
        Ok(())
    }

    fn check_velocity_terms(case: &Case) -> Result<(), TestCaseError> {
        let tree = case.tree();
        let kin = case.kin();
        let nv = kin.nv();
        let mut v = SVector::<f64, CAP>::from(case.v);
        for i in nv..CAP {
            v[i] = 0.0;
        }
        let c = kin
            .inverse_dynamics(&v.into(), &[0.0; CAP], &Vector3::zeros())
            .unwrap();
        let h = 1e-6;
        let mass_at = |h: f64| {
            let (pose, q) = case.moved(v.as_slice(), h);
            tree.kinematics(&pose, &q).unwrap().mass_matrix().unwrap()
        };
        let m_dot = (mass_at(h) - mass_at(-h)) / (2.0 * h);
        let power = v.dot(&c);
        let expected = 0.5 * v.dot(&(m_dot * v));
        let m = kin.mass_matrix().unwrap();
        let energy_scale = v.dot(&(m * v)).max(1e-3);
        prop_assert!(
            (power - expected).abs() <= 1e-6 * energy_scale,
            "{} {}",
            power,
            expected
        );
        Ok(())
    }

    fn check_base_pose_independence(case: &Case, at: &Isometry3<f64>) -> Result<(), TestCaseError> {
        let tree = case.tree();
        let kin = case.kin();
        let moved = tree.kinematics(at, &case.q).unwrap();
        prop_assert!(close_all(
            moved.mass_matrix().unwrap().as_slice(),
            kin.mass_matrix().unwrap().as_slice(),
            1e-12,
            0.0
        ));
        let zero = Vector3::zeros();
        // At the scale of the bodies' terms, which may nearly cancel.
        let terms = case
            .term_bound(&kin, &case.v, &case.a, &zero)
            .max(case.term_bound(&moved, &case.v, &case.a, &zero));
        prop_assert!(close_all(
            moved
                .inverse_dynamics(&case.v, &case.a, &zero)
                .unwrap()
                .as_slice(),
            kin.inverse_dynamics(&case.v, &case.a, &zero)
                .unwrap()
                .as_slice(),
            1e-12,
            terms,
        ));
        Ok(())
    }

    fn check_composite_sums(case: &Case) -> Result<(), TestCaseError> {
        let kin = case.kin();
        let composite = kin.composite().unwrap();
        let (mass, com) = kin.center_of_mass().unwrap();
        prop_assert!((composite.subtree_mass(0).unwrap() - mass).abs() <= 1e-12 * mass);
        prop_assert!(close_all(
            composite.subtree_com(0).unwrap().as_slice(),
            com.as_slice(),
            1e-12,
            1.0
        ));
        let bodies = kin.body_count();
        // The bodies of body b's subtree: those with b on their path to the base.
        let in_subtree = |b: usize, a: usize| {
            let mut x = a;
            loop {
                if x == b {
                    return true;
                }
                if x == 0 {
                    return false;
                }
                x = case.joints[x - 1].parent_body;
            }
        };
        for b in 0..bodies {
            let mut m = 0.0;
            let mut moment = Vector3::zeros();
            let mut members = Vec::new();
            for a in 0..bodies {
                if !in_subtree(b, a) || (a == 0 && case.base == BaseKind::Fixed) {
                    continue;
                }
                let body = case.body(a);
                let p = kin.body_pose(a).unwrap();
                let c = p * nalgebra::Point3::from(Vector3::from(body.com_m));
                let rotation = p.rotation.to_rotation_matrix().into_inner();
                m += body.mass_kg;
                moment += c.coords * body.mass_kg;
                members.push((body.mass_kg, c.coords, world_inertia(&body, &rotation)));
            }
            prop_assert!((composite.subtree_mass(b).unwrap() - m).abs() <= 1e-12 * m.max(1.0));
            if m == 0.0 {
                continue;
            }
            let c = moment / m;
            prop_assert!(close_all(
                composite.subtree_com(b).unwrap().as_slice(),
                c.as_slice(),
                1e-12,
                1.0
            ));
            let mut inertia = Matrix3::zeros();
            for (mi, ci, ii) in &members {
                inertia += ii + shift(&(ci - c)) * *mi;
            }
            prop_assert!(close_all(
                composite.subtree_inertia(b).unwrap().as_slice(),
                inertia.as_slice(),
                1e-12,
                0.0
            ));
        }
        Ok(())
    }

    // ---------------------------------------------------------------------------------------
    // Massless frames.

    /// A tree with massless frames: a ball of three revolute joints at one point, about x, y
    /// and z of its frame in turn (R_o Rx(q0) Ry(q1) Rz(q2)), with two massless frames between
    /// them, whose body carries a revolute limb; and a massless frame hinged on the base
    /// carrying two limbs, a prismatic and a revolute one (a massless body with two children,
    /// merged into it one after the other). Random bodies, origins, base pose and state; both
    /// bases.
    fn ball_case_strategy() -> impl Strategy<Value = Case> {
        (
            (
                prop::sample::select(BOTH),
                link_strategy(),
                prop::collection::vec(link_strategy(), 5),
            ),
            (
                prop::array::uniform3(-0.5..0.5f64),
                prop::array::uniform3(-PI..PI),
            ),
            (
                prop::array::uniform3(-2.0..2.0f64),
                prop::array::uniform3(-PI..PI),
                prop::array::uniform32(-2.0..2.0f64),
            ),
        )
            .prop_map(
                |((base, base_link, links), (ball_xyz, ball_rpy), (xyz, rpy, state))| {
                    let revolute = |parent_body, origin, axis, body| JointSpec {
                        parent_body,
                        kind: JointType::Revolute,
                        origin,
                        axis,
                        body,
                    };
                    let ball_origin = Placement::from_xyz_rpy(ball_xyz, ball_rpy);
                    let joints = vec![
                        revolute(0, ball_origin, [1.0, 0.0, 0.0], Inertial::ZERO),
                        revolute(1, Placement::IDENTITY, [0.0, 1.0, 0.0], Inertial::ZERO),
                        revolute(
                            2,
                            Placement::IDENTITY,
                            [0.0, 0.0, 1.0],
                            inertial_of(&links[0]),
                        ),
                        joint_of(3, &links[1], 3, false, 6),
                        JointSpec {
                            body: Inertial::ZERO,
                            ..joint_of(4, &links[2], 0, false, 6)
                        },
                        joint_of(5, &links[3], 5, true, 6),
                        joint_of(6, &links[4], 5, false, 6),
                    ];
                    Case {
                        base,
                        base_body: inertial_of(&base_link),
                        joints,
                        pose: pose(xyz, rpy),
                        q: core::array::from_fn(|i| state[i] * 1.5),
                        v: core::array::from_fn(|i| state[CAP + i % (32 - CAP)]),
                        a: core::array::from_fn(|i| state[(CAP + 9 + i) % 32]),
                    }
                },
            )
    }

    /// The massless frames of [`ball_case_strategy`]'s trees (bodies 1, 2 and 5).
    const MASSLESS_BODIES: [usize; 3] = [1, 2, 5];

    proptest! {
        /// A tree with massless frames (a ball of three revolute joints, a massless body with
        /// two children) is held to every identity of the random trees, at their tolerances:
        /// M against the frame Jacobians' products, symmetric, its diagonal the axis
        /// inertias; the fast paths bit for bit; RNEA at rest against M and the gravity; the
        /// kinetic energy; the centre-of-mass Jacobian and the gravity against central
        /// differences; the velocity terms against Ṁ; a floating base's M and RNEA
        /// independent of its pose; the subtrees the sums of their bodies. The massless frames'
        /// own axis inertias are 0, and so out of range; the subtree of the ball's first two
        /// frames is the ball body's, bit for bit; the ball turns its body by Rx Ry Rz.
        #[test]
        fn massless_frames_make_a_ball_of_three_revolute_joints(
            case in ball_case_strategy(),
            g in prop::array::uniform3(-10.0..10.0f64),
            xyz in prop::array::uniform3(-100.0..100.0f64),
            rpy in prop::array::uniform3(-PI..PI),
        ) {
            prop_assert_eq!(case.tree().depth_first, true);
            check_mass_matrix(&case)?;
            check_fast_paths(&case, &Vector3::from(g))?;
            check_rnea_at_rest(&case)?;
            check_kinetic_energy(&case)?;
            check_derivatives(&case)?;
            check_velocity_terms(&case)?;
            if case.base == BaseKind::Floating {
                check_base_pose_independence(&case, &pose(xyz, rpy))?;
            }
            check_composite_sums(&case)?;
            let kin = case.kin();
            let composite = kin.composite().unwrap();
            for (massless, child) in [(1, 2), (2, 3)] {
                prop_assert_eq!(composite.subtree_mass(massless), composite.subtree_mass(child));
                prop_assert_eq!(composite.subtree_com(massless), composite.subtree_com(child));
                prop_assert_eq!(composite.subtree_inertia(massless), composite.subtree_inertia(child));
            }
            for body in MASSLESS_BODIES {
                prop_assert_eq!(kin.own_axis_inertia(body - 1), Err(TreeEvalError::OutOfRange));
                prop_assert!(composite.subtree_mass(body).unwrap() > 0.0);
            }
            for joint in [2, 3, 5, 6] {
                prop_assert!(kin.own_axis_inertia(joint).unwrap() > 0.0);
            }
            let (mass, com) = kin.center_of_mass().unwrap();
            prop_assert!(mass > 0.0 && all_finite_slice(com.as_slice()));
            prop_assert!(all_finite_slice(kin.com_jacobian().unwrap().as_slice()));
            let base = kin.body_pose(0).unwrap().rotation.to_rotation_matrix().into_inner();
            let turn = |axis: Vector3<f64>, q: f64| {
                Rotation3::from_axis_angle(&nalgebra::Unit::new_normalize(axis), q).into_inner()
            };
            let ball = base
                * case.joints[0].origin.rotation_matrix()
                * turn(Vector3::x(), case.q[0])
                * turn(Vector3::y(), case.q[1])
                * turn(Vector3::z(), case.q[2]);
            let turned = kin.body_pose(3).unwrap().rotation.to_rotation_matrix().into_inner();
            prop_assert!(close_all(turned.as_slice(), ball.as_slice(), 1e-12, 1.0));
        }
    }

    /// Two revolute joints about one line with a massless frame between them move one body the
    /// same way: the 2×2 mass matrix's four entries are the single joint's inertia, the
    /// holding torque is the single joint's in both slots, and so is RNEA's at any v and a
    /// (the body turns at q̇0 + q̇1), 1e-12 relative; the matrix is singular.
    #[test]
    fn a_massless_frame_between_two_joints_about_one_line() {
        let body = inertial(
            1.7,
            [0.12, -0.04, 0.09],
            [0.02, 0.001, -0.002, 0.03, 0.0015, 0.025],
        );
        let origin = Placement::from_xyz_rpy([0.1, -0.2, 0.3], [0.2, -0.1, 0.4]);
        let about_z = |parent_body: usize, origin: Placement, body: Inertial| JointSpec {
            parent_body,
            kind: JointType::Revolute,
            origin,
            axis: [0.0, 0.0, 1.0],
            body,
        };
        let at = pose([0.5, -0.3, 0.8], [0.2, 0.1, -0.4]);
        let g = Vector3::new(0.3, -0.5, -9.81);
        let single = Tree::<1>::new(&TreeSpec {
            base: BaseKind::Fixed,
            base_body: reference_base(),
            joints: &[about_z(0, origin, body)],
        })
        .unwrap();
        let split = Tree::<2>::new(&TreeSpec {
            base: BaseKind::Fixed,
            base_body: reference_base(),
            joints: &[
                about_z(0, origin, Inertial::ZERO),
                about_z(1, Placement::IDENTITY, body),
            ],
        })
        .unwrap();
        let (q, v, a) = ([0.7, -1.9], [0.4, 1.3], [-0.8, 0.35]);
        let one = single.kinematics(&at, &[q[0] + q[1]]).unwrap();
        let two = split.kinematics(&at, &q).unwrap();
        let inertia = one.mass_matrix().unwrap()[(0, 0)];
        let m = two.mass_matrix().unwrap();
        assert_close_all("M", m.as_slice(), &[inertia; 4], 1e-12);
        assert_eq!(m, m.transpose());
        assert!(m.determinant().abs() <= 1e-12 * inertia * inertia);
        assert_close_all(
            "axis inertias",
            two.composite().unwrap().axis_inertia().as_slice(),
            &[inertia; 2],
            1e-12,
        );
        let held = one.gravity(&g).unwrap()[0];
        assert_close_all(
            "gravity",
            two.gravity(&g).unwrap().as_slice(),
            &[held; 2],
            1e-12,
        );
        let tau = one
            .inverse_dynamics(&[v[0] + v[1]], &[a[0] + a[1]], &g)
            .unwrap()[0];
        assert_close_all(
            "RNEA",
            two.inverse_dynamics(&v, &a, &g).unwrap().as_slice(),
            &[tau; 2],
            1e-12,
        );
        let (mass, com) = two.center_of_mass().unwrap();
        assert_eq!(mass, 1.7);
        assert_close_all(
            "centre of mass",
            com.as_slice(),
            one.center_of_mass().unwrap().1.as_slice(),
            1e-12,
        );
        let j = two.com_jacobian().unwrap();
        assert_close_all(
            "com Jacobian",
            j.column(1).as_slice(),
            one.com_jacobian().unwrap().as_slice(),
            1e-12,
        );
        assert_eq!(j.column(0), j.column(1));
        let composite = two.composite().unwrap();
        assert_eq!(composite.subtree_com(1), composite.subtree_com(2));
        assert_eq!(composite.subtree_inertia(1), composite.subtree_inertia(2));
        assert_eq!(two.own_axis_inertia(0), Err(TreeEvalError::OutOfRange));
        assert_close_all(
            "own axis inertia",
            &[two.own_axis_inertia(1).unwrap()],
            &[inertia],
            1e-12,
        );
    }

    /// A joint's child may be a massless frame, exactly `Inertial::ZERO`, wherever mass hangs
    /// below it; a massless leaf (or a massless chain ending in one) is refused naming the
    /// root of the massless subtree, and so is a zero mass with an inertia or a centre (a mass
    /// left out); a positive mass still needs a positive definite inertia.
    #[test]
    fn massless_frames_are_validated() {
        // Reference joints: 0 → 1 → {2, 3} (leaves 2 and 3), 4 → 5 (leaf 5).
        let good = reference_joints();
        let build = |base: BaseKind, joints: &[JointSpec]| {
            Tree::<12>::new(&TreeSpec {
                base,
                base_body: reference_base(),
                joints,
            })
            .err()
        };
        let massless = |ks: &[usize], f: &dyn Fn(&mut Inertial)| {
            let mut joints = good;
            for &k in ks {
                joints[k].body = Inertial::ZERO;
                f(&mut joints[k].body);
            }
            [BaseKind::Floating, BaseKind::Fixed].map(|base| build(base, &joints))
        };
        let keep = &|_: &mut Inertial| {};
        let refused = |joint: usize| [Some(TreeError::NonPositiveMass { joint: Some(joint) }); 2];
        // Carrying mass below: accepted, one massless frame or several in a row.
        for ks in [&[0][..], &[1], &[4], &[0, 1], &[0, 1, 4], &[1, 4]] {
            assert_eq!(massless(ks, keep), [None; 2], "{ks:?}");
        }
        // −0.0 is 0.
        assert_eq!(massless(&[0], &|b| b.mass_kg = -0.0), [None; 2]);
        // A massless leaf, or a massless subtree: its root is named.
        assert_eq!(massless(&[5], keep), refused(5));
        assert_eq!(massless(&[3], keep), refused(3));
        assert_eq!(massless(&[4, 5], keep), refused(4));
        assert_eq!(massless(&[1, 2], keep), refused(2));
        assert_eq!(massless(&[0, 1, 2, 3], keep), refused(0));
        assert_eq!(massless(&[0, 1, 2, 3, 4, 5], keep), refused(0));
        // A zero mass with an inertia or a centre is a mass left out.
        assert_eq!(
            massless(&[1], &|b| b.inertia_kgm2 =
                [1e-6, 0.0, 0.0, 1e-6, 0.0, 1e-6]),
            refused(1)
        );
        assert_eq!(massless(&[1], &|b| b.inertia_kgm2[4] = 1e-300), refused(1));
        assert_eq!(massless(&[4], &|b| b.com_m = [0.0, 0.1, 0.0]), refused(4));
        assert_eq!(massless(&[4], &|b| b.mass_kg = -1e-9), refused(4));
        // A positive mass without an inertia is not a massless frame.
        assert_eq!(
            massless(&[2], &|b| b.mass_kg = 1.0),
            [Some(TreeError::InertiaNotPositiveDefinite { joint: Some(2) }); 2]
        );
        // Each joint's own checks come first, in joint order; then the subtree rule.
        let mut joints = good;
        joints[5].body = Inertial::ZERO;
        joints[3].axis = [0.0; 3];
        assert_eq!(
            build(BaseKind::Floating, &joints),
            Some(TreeError::ZeroAxis { joint: 3 })
        );
        // A fixed base holding a massless joint alone moves nothing: refused.
        let alone = JointSpec {
            body: Inertial::ZERO,
            ..good[0]
        };
        assert_eq!(build(BaseKind::Fixed, &[alone]), refused(0)[0]);
        // The floating base still needs a mass.
        assert_eq!(
            Tree::<12>::new(&TreeSpec {
                base: BaseKind::Floating,
                base_body: Inertial::ZERO,
                joints: &good,
            })
            .err(),
            Some(TreeError::NonPositiveMass { joint: None })
        );
        let message = TreeError::NonPositiveMass { joint: Some(4) }.to_string();
        assert!(message.starts_with("tree: joint 4: ") && message.contains("massless"));
    }

    proptest! {
        /// The rotated inertia (Pinocchio's 34-multiplication form) is R I Rᵀ to rounding.
        #[test]
        fn inertia_rotation_is_r_i_rt(
            rpy in prop::array::uniform3(-PI..PI),
            link in link_strategy(),
        ) {
            let rotation = Rotation3::from_euler_angles(rpy[0], rpy[1], rpy[2]).into_inner();
            let local = inertial_of(&link).inertia_matrix();
            let plain = rotation * local * rotation.transpose();
            prop_assert!(close_all(Sym3::rotated(&local, &rotation).matrix().as_slice(), plain.as_slice(), 1e-14, 0.0));
        }
    }

    #[test]
    fn accessors_and_layout() {
        let joints = reference_joints();
        for (base, offset) in [(BaseKind::Fixed, 0), (BaseKind::Floating, 6)] {
            let tree = Tree::<12>::new(&TreeSpec {
                base,
                base_body: reference_base(),
                joints: &joints,
            })
            .unwrap();
            assert_eq!(tree.nv(), 6 + offset);
            assert_eq!(tree.joint_count(), 6);
            assert_eq!(tree.base(), base);
            assert_eq!(tree.parent_body(4), Some(0));
            assert_eq!(tree.parent_body(5), Some(5));
            assert_eq!(tree.parent_body(6), None);
            assert_eq!(tree.velocity_index(2), Some(2 + offset));
            assert_eq!(tree.velocity_index(6), None);
            assert_eq!(tree.joint_kind(2), Some(JointType::Prismatic));
            assert_eq!(tree.joint_kind(9), None);
            let axis = tree.joint_axis(1).unwrap();
            assert!((axis.norm() - 1.0).abs() < 1e-15);
            let kin = tree.kinematics(&Isometry3::identity(), &[0.0; 12]).unwrap();
            assert_eq!(
                (kin.nv(), kin.joint_count(), kin.body_count()),
                (6 + offset, 6, 7)
            );
            assert!(kin.body_pose(6).is_some() && kin.body_pose(7).is_none());
            // Columns and entries past nv are zero; the mass matrix is zero outside nv×nv.
            let m = kin.mass_matrix().unwrap();
            let g = kin.gravity(&Vector3::new(0.0, 0.0, -9.81)).unwrap();
            let j = kin.frame_jacobian(4, &Placement::IDENTITY).unwrap();
            for i in 6 + offset..12 {
                assert_eq!(g[i], 0.0);
                assert!(
                    m.column(i).iter().all(|&x| x == 0.0) && m.row(i).iter().all(|&x| x == 0.0)
                );
                assert!(j.column(i).iter().all(|&x| x == 0.0));
            }
            // Joint 3 hangs from body 2: its body's Jacobian has columns of joints 0, 1 and 3.
            for (joint, carries) in [
                (0, true),
                (1, true),
                (2, false),
                (3, true),
                (4, false),
                (5, false),
            ] {
                assert_eq!(
                    j.column(offset + joint).iter().any(|&x| x != 0.0),
                    carries,
                    "joint {joint}"
                );
            }
        }
    }

    /// `kinematics_into` fills a kept buffer exactly as `kinematics` returns a new one; on an
    /// error it leaves the buffer empty.
    #[test]
    fn kinematics_into_a_kept_buffer() {
        let joints = reference_joints();
        let tree = Tree::<12>::new(&TreeSpec {
            base: BaseKind::Floating,
            base_body: reference_base(),
            joints: &joints,
        })
        .unwrap();
        let at = pose([0.3, -0.2, 1.0], [0.1, 0.2, 0.3]);
        let q = [0.4; 12];
        let mut kin = TreeKinematics::default();
        assert_eq!(
            (kin.body_count(), kin.nv(), kin.base()),
            (1, 0, BaseKind::Fixed)
        );
        tree.kinematics_into(&mut kin, &at, &q).unwrap();
        assert_eq!(kin, tree.kinematics(&at, &q).unwrap());
        // nv = N: the whole matrix is the block (zeroed in one run).
        let mut m = SMatrix::<f64, 12, 12>::repeat(7.0);
        kin.mass_matrix_into(&mut m).unwrap();
        assert_eq!(m, kin.mass_matrix().unwrap());
        let mut bad = q;
        bad[3] = f64::NAN;
        assert_eq!(
            tree.kinematics_into(&mut kin, &at, &bad),
            Err(TreeEvalError::NonFinite {
                what: EvalInput::Position { joint: 3 }
            })
        );
        assert_eq!((kin.body_count(), kin.nv()), (1, 0));
        assert_eq!(kin.body_pose(0), Some(Isometry3::identity()));
    }

    /// A fixed base without joints: nothing moves, mass 0, centre at the base origin.
    #[test]
    fn a_fixed_base_alone() {
        let tree = Tree::<3>::new(&TreeSpec {
            base: BaseKind::Fixed,
            base_body: reference_base(),
            joints: &[],
        })
        .unwrap();
        assert_eq!(tree.nv(), 0);
        let at = pose([1.0, 2.0, 3.0], [0.1, 0.2, 0.3]);
        let kin = tree.kinematics(&at, &[0.0; 3]).unwrap();
        assert_eq!(
            kin.center_of_mass().unwrap(),
            (0.0, Vector3::new(1.0, 2.0, 3.0))
        );
        assert_eq!(kin.mass_matrix().unwrap(), SMatrix::<f64, 3, 3>::zeros());
        assert_eq!(kin.com_jacobian().unwrap(), SMatrix::<f64, 3, 3>::zeros());
        let composite = kin.composite().unwrap();
        assert_eq!(composite.body_count(), 1);
        assert_eq!(composite.subtree_mass(0), Some(0.0));
        assert_eq!(
            kin.body_pose(0).unwrap().translation.vector,
            Vector3::new(1.0, 2.0, 3.0)
        );
    }

    /// The largest tree the brief asks for: a floating base and 58 joints in `Tree<64>`, on the
    /// default test thread.
    #[test]
    fn capacity_64_holds_a_floating_base_and_58_joints() {
        let joints: Vec<JointSpec> = (0..58)
            .map(|k| JointSpec {
                parent_body: if k < 4 { 0 } else { k - 3 },
                kind: if k % 7 == 6 {
                    JointType::Prismatic
                } else {
                    JointType::Revolute
                },
                origin: Placement::from_xyz_rpy([0.1, 0.02 * (k % 3) as f64, 0.0], [0.1, 0.0, 0.2]),
                axis: [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 1.0]][k % 3],
                body: inertial(0.5, [0.05, 0.0, 0.0], [0.001, 0.0, 0.0, 0.002, 0.0, 0.002]),
            })
            .collect();
        let spec = TreeSpec {
            base: BaseKind::Floating,
            base_body: reference_base(),
            joints: &joints,
        };
        let tree = Tree::<64>::new(&spec).unwrap();
        assert_eq!(tree.nv(), 64);
        let q: [f64; 64] = core::array::from_fn(|i| 0.1 * i as f64);
        let kin = tree
            .kinematics(&pose([0.0; 3], [0.1, 0.2, 0.3]), &q)
            .unwrap();
        let m = kin.mass_matrix().unwrap();
        let e = unit64(40);
        let column = kin
            .inverse_dynamics(&[0.0; 64], &e, &Vector3::zeros())
            .unwrap();
        assert!(close_all(
            column.as_slice(),
            m.column(40).into_owned().as_slice(),
            1e-12,
            0.0
        ));
        assert!(matches!(
            Tree::<64>::new(&TreeSpec {
                joints: &[joints.as_slice(), &joints[..1]].concat(),
                ..spec
            }),
            Err(TreeError::CapacityExceeded {
                dofs: 65,
                capacity: 64
            })
        ));
    }

    fn unit64(i: usize) -> [f64; 64] {
        let mut e = [0.0; 64];
        e[i] = 1.0;
        e
    }

    #[test]
    fn validation_names_the_joint() {
        let good = reference_joints();
        let base = reference_base();
        let build = |base_kind: BaseKind, base_body: Inertial, joints: &[JointSpec]| {
            Tree::<12>::new(&TreeSpec {
                base: base_kind,
                base_body,
                joints,
            })
            .err()
        };
        assert_eq!(build(BaseKind::Floating, base, &good), None);
        assert_eq!(build(BaseKind::Fixed, Inertial::ZERO, &good), None);
        let too_many = [good[0]; 7];
        assert_eq!(
            build(BaseKind::Floating, base, &too_many),
            Some(TreeError::CapacityExceeded {
                dofs: 13,
                capacity: 12
            })
        );
        let with = |k: usize, f: &dyn Fn(&mut JointSpec)| {
            let mut joints = good;
            f(&mut joints[k]);
            build(BaseKind::Floating, base, &joints)
        };
        assert_eq!(
            with(3, &|j| j.parent_body = 4),
            Some(TreeError::ParentAfterChild {
                joint: 3,
                parent_body: 4
            })
        );
        let non_finite = |field| {
            Some(TreeError::NonFinite {
                joint: Some(2),
                field,
            })
        };
        assert_eq!(
            with(2, &|j| j.origin.xyz_m[1] = f64::NAN),
            non_finite(SpecField::Origin)
        );
        assert_eq!(
            with(2, &|j| j.origin.rotation[2][0] = f64::INFINITY),
            non_finite(SpecField::Origin)
        );
        assert_eq!(
            with(2, &|j| j.axis[0] = f64::NAN),
            non_finite(SpecField::Axis)
        );
        assert_eq!(
            with(2, &|j| j.body.mass_kg = f64::INFINITY),
            non_finite(SpecField::Mass)
        );
        assert_eq!(
            with(2, &|j| j.body.com_m[2] = f64::NAN),
            non_finite(SpecField::Centre)
        );
        assert_eq!(
            with(2, &|j| j.body.inertia_kgm2[4] = f64::NAN),
            non_finite(SpecField::Inertia)
        );
        // The first in the order of `SpecField`.
        assert_eq!(
            with(2, &|j| {
                j.axis[1] = f64::NAN;
                j.body.mass_kg = f64::NAN;
            }),
            non_finite(SpecField::Axis)
        );
        assert_eq!(
            with(1, &|j| j.origin.rotation[0][0] *= 1.0 + 1e-8),
            Some(TreeError::NotARotation { joint: 1 })
        );
        // A reflection is orthonormal but not a rotation.
        assert_eq!(
            with(1, &|j| j.origin.rotation[2] =
                j.origin.rotation[2].map(|x| -x)),
            Some(TreeError::NotARotation { joint: 1 })
        );
        assert_eq!(with(1, &|j| j.origin.rotation[0][0] += 1e-10), None);
        assert_eq!(
            with(4, &|j| j.axis = [0.0; 3]),
            Some(TreeError::ZeroAxis { joint: 4 })
        );
        assert_eq!(with(4, &|j| j.axis = [1e-300, 0.0, 0.0]), None);
        assert_eq!(with(4, &|j| j.axis = [1e300, 1e300, -1e300]), None);
        assert_eq!(
            with(0, &|j| j.body.mass_kg = 0.0),
            Some(TreeError::NonPositiveMass { joint: Some(0) })
        );
        assert_eq!(
            with(5, &|j| j.body.inertia_kgm2 = [1.0, 2.0, 0.0, 1.0, 0.0, 1.0]),
            Some(TreeError::InertiaNotPositiveDefinite { joint: Some(5) })
        );
        assert_eq!(
            build(
                BaseKind::Floating,
                Inertial {
                    com_m: [f64::NAN; 3],
                    ..base
                },
                &good
            ),
            Some(TreeError::NonFinite {
                joint: None,
                field: SpecField::Centre
            })
        );
        assert_eq!(
            build(
                BaseKind::Fixed,
                Inertial {
                    mass_kg: f64::INFINITY,
                    ..base
                },
                &good
            ),
            Some(TreeError::NonFinite {
                joint: None,
                field: SpecField::Mass
            })
        );
        assert_eq!(
            build(BaseKind::Floating, Inertial::ZERO, &good),
            Some(TreeError::NonPositiveMass { joint: None })
        );
        assert_eq!(
            build(
                BaseKind::Floating,
                Inertial {
                    inertia_kgm2: [0.0; 6],
                    ..base
                },
                &good
            ),
            Some(TreeError::InertiaNotPositiveDefinite { joint: None })
        );
        // Every error reads as a sentence.
        for e in [
            TreeError::CapacityExceeded {
                dofs: 13,
                capacity: 12,
            },
            TreeError::NonFinite {
                joint: None,
                field: SpecField::Inertia,
            },
            TreeError::InertiaNotPositiveDefinite { joint: Some(2) },
        ] {
            assert!(e.to_string().starts_with("tree: "));
        }
        assert_eq!(
            TreeError::NonFinite {
                joint: Some(3),
                field: SpecField::Axis
            }
            .to_string(),
            "tree: joint 3: the axis is not finite"
        );
    }

    /// Every field of a joint's spec refuses NaN, +∞ and −∞; a moving body's inertia refuses
    /// every tensor that is not positive definite, and a zero mass (either sign) under an
    /// inertia; any finite non-zero axis is normalised and any positive definite inertia is
    /// accepted, however large or small; a capacity of 0 holds no joint.
    #[test]
    fn every_field_refused_and_every_scale_accepted() {
        let good = JointSpec {
            parent_body: 0,
            kind: JointType::Revolute,
            origin: Placement::from_xyz_rpy([0.1, 0.0, 0.0], [0.0; 3]),
            axis: [0.0, 1.0, 0.0],
            body: inertial(1.0, [0.05, 0.0, 0.0], [0.1, 0.0, 0.0, 0.1, 0.0, 0.1]),
        };
        let build = |j: JointSpec| {
            Tree::<3>::new(&TreeSpec {
                base: BaseKind::Fixed,
                base_body: Inertial::ZERO,
                joints: &[
                    good,
                    JointSpec {
                        parent_body: 1,
                        ..j
                    },
                ],
            })
        };
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            for field in 0..8 {
                let mut j = good;
                let named = match field {
                    0 => {
                        j.origin.xyz_m[1] = v;
                        SpecField::Origin
                    }
                    1 => {
                        j.origin.rotation[1][2] = v;
                        SpecField::Origin
                    }
                    2 => {
                        j.axis[2] = v;
                        SpecField::Axis
                    }
                    3 => {
                        j.body.mass_kg = v;
                        SpecField::Mass
                    }
                    4 => {
                        j.body.com_m[0] = v;
                        SpecField::Centre
                    }
                    5 => {
                        j.body.inertia_kgm2[0] = v;
                        SpecField::Inertia
                    }
                    6 => {
                        j.body.inertia_kgm2[4] = v;
                        SpecField::Inertia
                    }
                    _ => {
                        j.body.inertia_kgm2[5] = v;
                        SpecField::Inertia
                    }
                };
                let refused = Err(TreeError::NonFinite {
                    joint: Some(1),
                    field: named,
                });
                assert_eq!(build(j), refused, "field {field} = {v}");
            }
        }
        for m in [0.0, -0.0, -1.0] {
            let j = JointSpec {
                body: Inertial {
                    mass_kg: m,
                    ..good.body
                },
                ..good
            };
            assert_eq!(
                build(j),
                Err(TreeError::NonPositiveMass { joint: Some(1) }),
                "{m}"
            );
        }
        for inertia in [
            [0.0; 6],
            [-1.0, 0.0, 0.0, 1.0, 0.0, 1.0],
            [1.0, 0.0, 0.0, 1.0, 0.0, 0.0],
            [1.0, 1.0, 0.0, 1.0, 0.0, 1.0], // singular
            [1.0, 2.0, 0.0, 1.0, 0.0, 1.0], // indefinite
        ] {
            let j = JointSpec {
                body: Inertial {
                    inertia_kgm2: inertia,
                    ..good.body
                },
                ..good
            };
            assert_eq!(
                build(j),
                Err(TreeError::InertiaNotPositiveDefinite { joint: Some(1) }),
                "{inertia:?}"
            );
        }
        for scale in [f64::MAX, 1e200, 1.0, 1e-200, f64::MIN_POSITIVE, 5e-324] {
            let tree = build(JointSpec {
                axis: [scale, scale, 0.0],
                ..good
            })
            .unwrap();
            let axis = tree.joint_axis(1).unwrap();
            assert!(
                (axis - Vector3::new(1.0, 1.0, 0.0) / 2f64.sqrt()).norm() < 1e-15,
                "{scale}: {axis}"
            );
            let j = JointSpec {
                body: Inertial {
                    inertia_kgm2: [scale, 0.0, 0.0, scale, 0.0, scale],
                    ..good.body
                },
                ..good
            };
            assert!(build(j).is_ok(), "inertia {scale}");
        }
        assert_eq!(
            Tree::<0>::new(&TreeSpec {
                base: BaseKind::Fixed,
                base_body: Inertial::ZERO,
                joints: &[good],
            })
            .err(),
            Some(TreeError::CapacityExceeded {
                dofs: 1,
                capacity: 0
            })
        );
    }

    /// Finite parameters whose products overflow give `OutOfRange` from the composite inertias,
    /// the mass matrix and inverse dynamics, never a NaN; entries past nv are never read.
    #[test]
    fn overflowing_evaluations_are_out_of_range_and_entries_past_nv_unread() {
        let huge = JointSpec {
            parent_body: 0,
            kind: JointType::Revolute,
            origin: Placement::from_xyz_rpy([1e300, 0.0, 0.0], [0.0; 3]),
            axis: [0.0, 0.0, 1.0],
            body: inertial(1e300, [1e300, 0.0, 0.0], [1.0, 0.0, 0.0, 1.0, 0.0, 1.0]),
        };
        let tree = Tree::<3>::new(&TreeSpec {
            base: BaseKind::Fixed,
            base_body: Inertial::ZERO,
            joints: &[
                huge,
                JointSpec {
                    parent_body: 1,
                    ..huge
                },
            ],
        })
        .unwrap();
        let kin = tree.kinematics(&Isometry3::identity(), &[0.0; 3]).unwrap();
        assert_eq!(kin.composite().unwrap_err(), TreeEvalError::OutOfRange);
        assert_eq!(kin.mass_matrix().unwrap_err(), TreeEvalError::OutOfRange);
        assert_eq!(
            kin.inverse_dynamics(&[0.0; 3], &[1.0; 3], &Vector3::zeros())
                .unwrap_err(),
            TreeEvalError::OutOfRange
        );
        let link = JointSpec {
            parent_body: 0,
            kind: JointType::Revolute,
            origin: Placement::from_xyz_rpy([0.5, 0.0, 0.0], [0.0; 3]),
            axis: [0.0, 1.0, 1.0],
            body: inertial(1.0, [0.25, 0.0, 0.0], [0.005, 0.0, 0.0, 0.02, 0.0, 0.02]),
        };
        let tree = Tree::<3>::new(&TreeSpec {
            base: BaseKind::Fixed,
            base_body: Inertial::ZERO,
            joints: &[
                link,
                JointSpec {
                    parent_body: 1,
                    ..link
                },
            ],
        })
        .unwrap();
        let kin = tree
            .kinematics(&Isometry3::identity(), &[0.3, 0.2, f64::NAN])
            .unwrap();
        let g = Vector3::new(0.0, 0.0, -9.81);
        // A speed whose square overflows.
        assert_eq!(
            kin.inverse_dynamics(&[1e200, -1e200, 0.0], &[0.0; 3], &g)
                .unwrap_err(),
            TreeEvalError::OutOfRange
        );
        let tau = kin
            .inverse_dynamics(&[0.1, 0.2, f64::NAN], &[0.3, -0.4, f64::INFINITY], &g)
            .unwrap();
        assert_eq!(tau[2], 0.0);
        assert!(tau.iter().all(|t| t.is_finite()));
    }

    #[test]
    fn evaluations_name_the_bad_input() {
        let joints = reference_joints();
        let tree = Tree::<12>::new(&TreeSpec {
            base: BaseKind::Floating,
            base_body: reference_base(),
            joints: &joints,
        })
        .unwrap();
        let ok = [0.1; 12];
        let non_finite = |what| Err::<(), _>(TreeEvalError::NonFinite { what });
        let mut bad_pose = Isometry3::identity();
        bad_pose.translation.vector.y = f64::NAN;
        assert_eq!(
            tree.kinematics(&bad_pose, &ok).map(|_| ()),
            non_finite(EvalInput::BasePose)
        );
        let zero_quaternion = Isometry3::from_parts(
            Translation3::identity(),
            UnitQuaternion::new_unchecked(Quaternion::new(0.0, 0.0, 0.0, 0.0)),
        );
        assert_eq!(
            tree.kinematics(&zero_quaternion, &ok).map(|_| ()),
            non_finite(EvalInput::BasePose)
        );
        // A quaternion of any non-zero length is normalised.
        let long = Isometry3::from_parts(
            Translation3::identity(),
            UnitQuaternion::new_unchecked(Quaternion::new(1e300, 0.0, 0.0, 1e300)),
        );
        let unit_pose = Isometry3::from_parts(
            Translation3::identity(),
            UnitQuaternion::new_normalize(Quaternion::new(1.0, 0.0, 0.0, 1.0)),
        );
        let a = tree.kinematics(&long, &ok).unwrap().body_pose(3).unwrap();
        let b = tree
            .kinematics(&unit_pose, &ok)
            .unwrap()
            .body_pose(3)
            .unwrap();
        assert!((a.translation.vector - b.translation.vector).amax() < 1e-15);
        let mut q = ok;
        q[5] = f64::NEG_INFINITY;
        assert_eq!(
            tree.kinematics(&Isometry3::identity(), &q).map(|_| ()),
            non_finite(EvalInput::Position { joint: 5 })
        );
        // Entries past the joints are not read.
        let mut q = ok;
        q[6] = f64::NAN;
        let kin = tree.kinematics(&Isometry3::identity(), &q).unwrap();
        let g = Vector3::new(0.0, 0.0, -9.81);
        let mut v = ok;
        v[11] = f64::NAN;
        assert_eq!(
            kin.inverse_dynamics(&v, &ok, &g).map(|_| ()),
            non_finite(EvalInput::Velocity { index: 11 })
        );
        let mut a = ok;
        a[2] = f64::INFINITY;
        assert_eq!(
            kin.inverse_dynamics(&ok, &a, &g).map(|_| ()),
            non_finite(EvalInput::Acceleration { index: 2 })
        );
        let bad_g = Vector3::new(0.0, f64::NAN, 0.0);
        assert_eq!(
            kin.inverse_dynamics(&ok, &ok, &bad_g).map(|_| ()),
            non_finite(EvalInput::Gravity)
        );
        assert_eq!(
            kin.gravity(&bad_g).map(|_| ()),
            non_finite(EvalInput::Gravity)
        );
        let mut placement = Placement::IDENTITY;
        placement.xyz_m[0] = f64::NAN;
        assert_eq!(
            kin.frame_pose(1, &placement).map(|_| ()),
            non_finite(EvalInput::Placement)
        );
        assert_eq!(
            kin.frame_jacobian(1, &placement).map(|_| ()),
            non_finite(EvalInput::Placement)
        );
        let mut skewed = Placement::IDENTITY;
        skewed.rotation[0][1] = 0.1;
        assert_eq!(
            kin.frame_pose(1, &skewed),
            Err(TreeEvalError::PlacementNotARotation)
        );
        assert_eq!(
            kin.frame_jacobian(1, &skewed).map(|_| ()),
            Err(TreeEvalError::PlacementNotARotation)
        );
        let no_body = TreeEvalError::NoSuchBody { body: 7, bodies: 7 };
        assert_eq!(kin.frame_pose(7, &Placement::IDENTITY), Err(no_body));
        assert_eq!(
            kin.frame_jacobian(7, &Placement::IDENTITY).map(|_| ()),
            Err(no_body)
        );
        assert!(kin.body_pose(usize::MAX).is_none());
        // Finite inputs whose results overflow are out of range.
        let mut far = Placement::IDENTITY;
        far.xyz_m = [f64::MAX, f64::MAX, 0.0];
        assert_eq!(kin.frame_pose(2, &far), Err(TreeEvalError::OutOfRange));
        assert_eq!(
            kin.frame_jacobian(2, &far).map(|_| ()),
            Err(TreeEvalError::OutOfRange)
        );
        let mut huge = ok;
        huge[6] = 1e300; // joint 0, revolute: centripetal accelerations of 1e600
        assert_eq!(
            kin.inverse_dynamics(&huge, &ok, &g).map(|_| ()),
            Err(TreeEvalError::OutOfRange)
        );
        let slide = JointSpec {
            parent_body: 0,
            kind: JointType::Prismatic,
            ..joints[0]
        };
        let slides = Tree::<2>::new(&TreeSpec {
            base: BaseKind::Fixed,
            base_body: Inertial::ZERO,
            joints: &[
                slide,
                JointSpec {
                    parent_body: 1,
                    ..slide
                },
            ],
        })
        .unwrap();
        let q = [f64::MAX, f64::MAX];
        assert_eq!(
            slides.kinematics(&Isometry3::identity(), &q).map(|_| ()),
            Err(TreeEvalError::OutOfRange)
        );
        let big_g = Vector3::new(f64::MAX, 0.0, 0.0);
        assert_eq!(
            kin.gravity(&big_g).map(|_| ()),
            Err(TreeEvalError::OutOfRange)
        );
        for e in [
            no_body,
            TreeEvalError::OutOfRange,
            TreeEvalError::PlacementNotARotation,
        ] {
            assert!(e.to_string().starts_with("tree: "));
        }
        assert_eq!(
            TreeEvalError::NonFinite {
                what: EvalInput::Velocity { index: 3 }
            }
            .to_string(),
            "tree: velocity 3 is not finite"
        );
    }

    fn pick3(raw: &[(u8, u64)]) -> [f64; 3] {
        [pick(raw[0]), pick(raw[1]), pick(raw[2])]
    }

    /// A joint from raw values: any numbers at all (1 kind in 4), or a valid joint of any scale
    /// (3 in 4), so that the evaluations see valid trees of absurd scales too; of those, 1 in
    /// 6 carries a massless frame (exactly `Inertial::ZERO`: refused as a leaf, built where a
    /// joint with mass hangs from it).
    fn joint_from(k: usize, kind: u8, raw: &[(u8, u64)]) -> JointSpec {
        let rotation = [pick3(&raw[0..3]), pick3(&raw[3..6]), pick3(&raw[6..9])];
        let spec = JointSpec {
            parent_body: (raw[9].1 % (k as u64 + 2)) as usize,
            kind: if raw[9].0.is_multiple_of(2) {
                JointType::Revolute
            } else {
                JointType::Prismatic
            },
            origin: Placement {
                xyz_m: pick3(&raw[10..13]),
                rotation,
            },
            axis: pick3(&raw[13..16]),
            body: Inertial {
                mass_kg: pick(raw[16]),
                com_m: pick3(&raw[17..20]),
                inertia_kgm2: core::array::from_fn(|i| pick(raw[20 + i])),
            },
        };
        if kind.is_multiple_of(4) {
            return spec;
        }
        let finite = |v: f64| if v.is_finite() { v } else { 0.5 };
        let angles = pick3(&raw[0..3]).map(finite);
        let sides = [
            spec.body.inertia_kgm2[0],
            spec.body.inertia_kgm2[3],
            spec.body.inertia_kgm2[5],
        ]
        .map(|s| finite(s).abs() + 0.05);
        let m = finite(spec.body.mass_kg).abs() + 0.1;
        let k12 = m / 12.0;
        let [x, y, z] = sides;
        let body = if kind % 8 == 1 {
            Inertial::ZERO
        } else {
            Inertial {
                mass_kg: m,
                com_m: spec.body.com_m.map(finite),
                inertia_kgm2: [
                    k12 * (y * y + z * z),
                    0.0,
                    0.0,
                    k12 * (x * x + z * z),
                    0.0,
                    k12 * (x * x + y * y),
                ],
            }
        };
        JointSpec {
            parent_body: spec.parent_body.min(k),
            origin: Placement::from_xyz_rpy(spec.origin.xyz_m.map(finite), angles),
            axis: spec.axis.map(finite),
            body,
            ..spec
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

        /// Nothing panics on any input, and every result that is returned is finite.
        #[test]
        fn nothing_panics_and_nothing_non_finite_escapes(
            joints in prop::collection::vec((any::<u8>(), raw_values(26)), 0..=5),
            base_raw in raw_values(10),
            raw in raw_values(3 * 8 + 3 + 3 + 7 + 9),
            floating in any::<bool>(),
            body in prop_oneof![0usize..7, any::<usize>()],
        ) {
            let specs: Vec<JointSpec> = joints.iter().enumerate().map(|(k, (kind, raw))| joint_from(k, *kind, raw)).collect();
            let base_body = if base_raw[0].0.is_multiple_of(4) {
                Inertial { mass_kg: pick(base_raw[0]), com_m: pick3(&base_raw[1..4]), inertia_kgm2: core::array::from_fn(|i| pick(base_raw[4 + i])) }
            } else {
                reference_base()
            };
            let base = if floating { BaseKind::Floating } else { BaseKind::Fixed };
            let v: Vec<f64> = raw.iter().copied().map(pick).collect();
            let q: [f64; 11] = core::array::from_fn(|i| v[i]);
            let qd: [f64; 11] = core::array::from_fn(|i| v[8 + i]);
            let qdd: [f64; 11] = core::array::from_fn(|i| v[13 + i]);
            let g = Vector3::new(v[24], v[25], v[26]);
            let xyz = [v[27], v[28], v[29]];
            let quaternion = Quaternion::new(v[30], v[31], v[32], v[33]);
            let placement = Placement {
                xyz_m: [v[34], v[35], v[36]],
                rotation: if raw[37].0.is_multiple_of(2) {
                    [[v[37], v[38], v[39]], [v[40], v[41], v[42]], [v[43], v[44], v[45]]]
                } else {
                    Placement::IDENTITY.rotation
                },
            };
            // Boxed: the tree, its kinematics and their results are large for a debug-build
            // test thread's stack.
            let Ok(tree) = Tree::<11>::new(&TreeSpec { base, base_body, joints: &specs }).map(Box::new) else {
                return Ok(());
            };
            let base_pose = Isometry3::from_parts(
                Translation3::from(Vector3::from(xyz)),
                if raw[30].0.is_multiple_of(2) { UnitQuaternion::new_unchecked(quaternion) } else { UnitQuaternion::identity() },
            );
            let Ok(kin) = tree.kinematics(&base_pose, &q).map(Box::new) else { return Ok(()) };
            if let Some(p) = kin.body_pose(body) {
                prop_assert!(all_finite_slice(p.translation.vector.as_slice()) && all_finite_slice(p.rotation.coords.as_slice()));
            }
            if let Ok(p) = kin.frame_pose(body, &placement) {
                prop_assert!(all_finite_slice(p.translation.vector.as_slice()) && all_finite_slice(p.rotation.coords.as_slice()));
            }
            if let Ok(j) = kin.frame_jacobian(body, &placement) {
                prop_assert!(all_finite_slice(j.as_slice()));
            }
            if let Ok(m) = kin.mass_matrix().map(Box::new) {
                prop_assert!(all_finite_slice(m.as_slice()));
            }
            if let Ok(t) = kin.gravity(&g) {
                prop_assert!(all_finite_slice(t.as_slice()));
            }
            if let Ok(t) = kin.inverse_dynamics(&qd, &qdd, &g) {
                prop_assert!(all_finite_slice(t.as_slice()));
            }
            if let Ok((m, c)) = kin.center_of_mass() {
                prop_assert!(m.is_finite() && all_finite_slice(c.as_slice()));
            }
            if let Ok(j) = kin.com_jacobian() {
                prop_assert!(all_finite_slice(j.as_slice()));
            }
            if let Ok(inertia) = kin.own_axis_inertia(body) {
                prop_assert!(inertia.is_finite() && inertia > 0.0);
            }
            let (mut inertia, mut holding) = ([0.0; 11], [0.0; 11]);
            if kin.axis_inertia_and_gravity(&g, &mut inertia, &mut holding).is_ok() {
                prop_assert!(all_finite_slice(&inertia) && all_finite_slice(&holding));
            }
            if let Ok(composite) = kin.composite().map(Box::new) {
                prop_assert!(all_finite_slice(composite.axis_inertia().as_slice()));
                for b in 0..composite.body_count() {
                    prop_assert!(composite.subtree_mass(b).unwrap().is_finite());
                    prop_assert!(all_finite_slice(composite.subtree_com(b).unwrap().as_slice()));
                    prop_assert!(all_finite_slice(composite.subtree_inertia(b).unwrap().as_slice()));
                }
            }
        }
    }
}
