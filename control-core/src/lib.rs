//! The controller's core: the math and the controllers of the runtime, for any target.
//!
//! - [`lambert_w`]: both real branches of Lambert W, f64 and f32, with entry points that take the
//!   distance to the branch point.
//! - [`gains`]: the analytic critically damped arrival-gain solver (Allen, Neff and Faloutsos),
//!   the stable gain limit of a sampled loop, and a clamp that reports when it acted.
//! - `gains_f32` and `servo_f32` (feature `micromath`): the gain solver and the arrival servo in
//!   f32, on `lambert_w::compact_f32` (within 1.6 f32 ulp, 7 KB), for MCUs with a
//!   single-precision FPU.
//! - [`servo`]: the arrival servo for a fixed-rate tick, and the fixed-gain and static-timing
//!   baselines.
//! - [`servo_fixed`]: the arrival servo's torque law in fixed point (the firmware profile), with
//!   its gains re-solved at a lower rate.
//! - [`closed_form`]: the closed-form critically damped motion the promises are checked against.
//! - [`arm`]: the ball-blocking arm's controller (target sequencing, gravity feed-forward, one
//!   of five servos), the same on the host and in firmware.
//! - [`model`]: mass properties shared by the plant and the controller.
//! - [`articulated`]: per-joint arrival gains on each joint's composite inertia for a fixed-base
//!   robot's [`tree`], and a serial chain of links built as a tree.
//! - [`beat`]: the timing-and-tension controllers of "On the Beat!" for such a robot (gains from
//!   a keyframe's segment and n time constants, on the composite or the single-link inertia).
//! - [`reach`]: Kenwright's joint-torque control of a robot's hand (Jᵀ F, a null-space posture
//!   torque with the plain or the dynamically consistent projector) and CCD IK.
//! - [`stable_pd`]: stable PD (Tan, Liu and Turk) for any controller of joint torques between
//!   rigid bodies: the torques of the state one period ahead, stable at low control rates.
//! - [`simbicon`]: SIMBICON's basic planar walk (state machine, balance feedback, torso PD), with
//!   fixed or analytic gains.
//! - [`dynamo`]: Dynamo's world-space servos for a floating-base humanoid with ball joints
//!   (parent, world or person-space targets, arrival gains about the error axis, the composite
//!   inertia a joint moves) and its breakable root spring.
//! - [`balance`]: whole-body balance by a QP per tick (Abe, da Silva and Popović): joint
//!   accelerations, friction-cone contact forces and torques chosen together on a floating-base
//!   tree.
//! - [`qp`]: a dense convex QP solver with second-order (friction) cones for a controller's tick
//!   (interior point on the equalities' null space, bounded work, warm start, certificates).
//! - [`frames`]: the versioned, checksummed wire frames between controller and plant.
//! - [`compact`]: compact frames sized to what they carry, for a microcontroller's link, and
//!   [`mailbox`]: the shared-memory mailbox layout between a host and firmware.
//!
//! Scenario vocabulary (balls, the paper's experiments) lives in `hil`, not here: this crate keeps
//! frames, math and controllers.
//!
//! This crate is `no_std`, has no allocator, and must never panic on any input: every function
//! returns a value or a typed error for NaN, infinities, subnormals and arbitrary bytes alike.
//! The freestanding build in `nostd-check/` proves the first two in CI; property tests over the
//! whole input domains check the third.
#![cfg_attr(not(test), no_std)]
#![deny(missing_docs)]

pub mod arm;
pub mod articulated;
pub mod balance;
pub mod beat;
pub mod closed_form;
pub mod compact;
pub mod contact_stabiliser;
pub mod controller;
pub mod dynamo;
pub mod frames;
pub mod gains;
#[cfg(feature = "micromath")]
pub mod gains_f32;
pub mod keyframes;
pub mod lambert_w;
pub mod mailbox;
pub mod model;
pub mod qp;
pub mod reach;
pub mod servo;
#[cfg(feature = "micromath")]
pub mod servo_f32;
pub mod servo_fixed;
pub mod simbicon;
pub mod simbicon3d;
pub mod stable_pd;
pub mod tree;
pub mod walker3d;

// The README's Rust examples are compiled and run as doctests of `robot-model` (which depends on
// this crate): one of them loads a URDF.
