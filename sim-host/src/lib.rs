//! The plant process: a `rapier3d` simulation of the arm scene, of any robot described in URDF,
//! or of the walkers, driven over wire frames.
//!
//! - [`scene`]: the arm scene description (JSON) the harness writes, with its checks, and
//!   [`PlantScene`], a scene file of either kind.
//! - [`plant`]: the arm scene's plant: the [`robot`] plant of the scene's arm as a one-joint robot
//!   model, its balls and weights around it, stepped with the joint torque, reporting the joint
//!   state and contact / plane-crossing events as `control_core::frames::StateFrame`s.
//! - [`environment`]: the scene around a robot: walls, pushes, thrown balls and dropped weights,
//!   and the contact forces the environment puts on the bodies. [`plant`], [`environment`],
//!   [`biped`], [`humanoid`] and [`robot`] are the only modules that name a Rapier type.
//! - [`biped`]: the SIMBICON planar 7-link walker (`"kind": "biped"` scenes), a floating-base
//!   Rapier plant with impulse joints and ground contact, stepped in process with six joint
//!   torques (not yet hosted over wire frames).
//! - [`humanoid`]: a 15-body floating-base humanoid read from a URDF (`models/humanoid15.urdf`,
//!   after Cartwheel-3d's Bip; `"kind": "humanoid"` scenes): ball, hinge and two-axis impulse
//!   joints driven by a world torque vector per joint plus an external root torque, the
//!   bodies' world motion, the feet's and toes' ground forces and the other bodies' ground
//!   contacts in every state frame. Its [`humanoid::HumanoidModel`] is what the controller reads
//!   from the same file.
//! - [`robot`]: one plant for any robot (`"kind": "robot"` scenes), built from the robot model
//!   the controller builds its dynamics from (`robot_model::RobotModel`): multibody revolute and
//!   prismatic joints with the URDF's limits, damping and dry friction, convex hulls of the
//!   collision meshes, a fixed or a floating base, ground, walls, balls and weights; one
//!   generalized force per joint, hosted over wire frames.
//! - [`clock`]: every plant's clock (the step, the current state's index, the run's length, the
//!   last step's cost) and the one rule that turns a scene's times into steps.
//! - [`walk`]: SIMBICON (`control_core::simbicon`) on the biped plant in process: the readout
//!   mapping and a measured lockstep walk.
//! - [`host`]: the lockstep and real-time loops that connect a plant (either, through
//!   [`host::HostedPlant`]) to a `transport::FrameLink`, refusing and counting bad torque frames
//!   (malformed, oversize, over a torque limit).
//! - [`input`]: the one reader of every input file (scenario, scene, URDF, records): regular
//!   files only, never blocking on a FIFO, size-capped, URDF nesting capped; and the serde
//!   helper that holds fixed-size vectors to their length.
//! - [`cli`]: the process's command line.
//!
//! The binary, `sim-host --scene FILE --fd N --mode lockstep|realtime [--cpu N]`, is a one-line
//! shell around [`cli::main`]. It exits 0 when the scene ends or the controller closes its end, 2 on a bad
//! command line or scene file (naming the file, the field and the reason), 1 on a transport or
//! protocol error.
//!
//! Never does: let the controller's bytes crash it or drive its state to infinity (every torque
//! frame is checked and a bad one refused and counted), read the wall clock for physics.
#![deny(missing_docs)]

pub mod biped;
pub mod cli;
pub mod clock;
pub mod environment;
pub mod host;
pub mod humanoid;
pub mod input;
pub mod plant;
pub mod robot;
pub mod scene;
pub mod walk;

/// Mesh files for the robot plant's unit tests (shared with the integration tests).
#[cfg(test)]
#[path = "../tests/support/mesh.rs"]
mod test_mesh;

pub use biped::{BipedPlant, BipedScene, BipedState, TorqueLimitError};
pub use clock::PlantClock;
pub use environment::{FIRST_PROP_ID, MAX_PROPS, Push, Wall};
pub use host::{HostError, HostedPlant, Mode, RunEnd, RunSummary};
pub use humanoid::{HumanoidModel, HumanoidPlant, HumanoidScene};
pub use plant::Plant;
pub use robot::{RobotPlant, RobotScene};
pub use scene::{
    ArmSpec, BallSpawn, PlantScene, Scene, SceneError, SceneFile, WeightDrop, WeightShape,
};
