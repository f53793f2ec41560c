//! The plant process: a `rapier3d` simulation of the arm scene, driven over wire frames.
//!
//! - [`scene`]: the scene description (JSON) the harness writes, with its checks.
//! - [`plant`]: the Rapier world built from a scene, stepped with joint torques, reporting joint
//!   states and contact / plane-crossing events as `control_core::frames::StateFrame`s. The only
//!   module that names a Rapier type.
//! - [`host`]: the lockstep and real-time loops that connect a plant to a `transport::FrameLink`,
//!   refusing and counting bad torque frames (malformed, oversize, over the scene's torque
//!   limit).
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

pub mod cli;
pub mod host;
pub mod plant;
pub mod scene;

pub use host::{HostError, Mode, RunEnd, RunSummary};
pub use plant::Plant;
pub use scene::{ArmSpec, BallSpawn, Scene, SceneError, WeightDrop, WeightShape};
