//! A humanoid with ball joints balancing by [`Balance`]: the map from its bodies' world motions
//! to a floating-base tree's coordinates ([`BodyMap`]), and the whole-body controller that
//! runs the QP on them ([`HumanoidBalance`]): the contact hold, the recovery step
//! ([`crate::balance::step`]), the legs held where a step landed, a hand reaching for a point
//! along a smooth path, and the root kept upright with its heading.
//!
//! The tree: the root (pelvis) is the base, its frame at its centre of mass; each body's frame
//! sits at its joint. A ball joint is three revolute joints (Euler angles, two massless frames
//! between, [`Coordinates::Ball`]); a two-axis joint is its two free axes with the locked one
//! between them, whose angle the plant keeps near zero ([`Coordinates::TwoAxis`]); a hinge is
//! one joint. `robot-model`'s `HumanoidTree` builds both the tree and its [`BodyMap`] from a
//! URDF.
//!
//! Never allocates, blocks or panics: capacities are in the types (`J` mapped joints; `NV`,
//! `NX`, `NR` the QP's), and a state that cannot be mapped (a non-finite motion, an Euler
//! singularity) is refused (`None`), for the caller's safe state. A [`HumanoidBalance`] holds its
//! QP by value (about 0.7 MB for the 15-body humanoid): box it, built on a thread with the
//! stack for it.

use nalgebra::{Isometry3, Matrix3, Point3, Quaternion, Translation3, UnitQuaternion, Vector3};

use super::contact::ContactHold;
use super::step::{FootState, StepCommand, Stepper, hold_legs};
use super::{
    Balance, BalanceInput, BalanceOutput, BalanceStatus, ContactBody, MAX_POINTS, PLANTED_N,
    PointTask, euler_angles, euler_rates,
};
use crate::frames::{BodyMotion, MAX_BODIES};
use crate::tree::TreeKinematics;

/// How a joint's rotation becomes tree coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Coordinates {
    /// Euler angles about the coordinate axes `order` (0: x, 1: y, 2: z).
    Ball {
        /// The three axes, in the tree's joint order.
        order: [usize; 3],
    },
    /// Euler angles about `order`, the middle (locked) one left out.
    TwoAxis {
        /// The free axis, the locked one, the other free one.
        order: [usize; 3],
    },
    /// The angle about `axis` (unit, parent axes).
    Hinge {
        /// The hinge's axis.
        axis: Vector3<f64>,
    },
}

/// One plant joint in the tree.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MappedJoint {
    /// The parent body (plant order).
    pub parent: usize,
    /// The child body (plant order).
    pub child: usize,
    /// Its first tree joint.
    pub first: usize,
    /// Its tree joints (1–3).
    pub count: usize,
    /// How its rotation becomes those joints' coordinates.
    pub coordinates: Coordinates,
}

/// The plant's bodies → a floating-base tree's coordinates, for up to `J` plant joints.
#[derive(Debug, Clone)]
pub struct BodyMap<const J: usize> {
    joints: heapless::Vec<MappedJoint, J>,
    root: usize,
    /// The two-argument arc tangent a hinge's angle is taken with.
    atan2: fn(f64, f64) -> f64,
}

impl<const J: usize> BodyMap<J> {
    /// The map of the plant joints `joints` (plant joint order, the ones the tree keeps), the
    /// root body `root` the base; `None` past the capacity `J`. A hinge's angle is taken with
    /// `libm`'s `atan2` (the Euler angles too, [`euler_angles`]).
    pub fn new(root: usize, joints: &[MappedJoint]) -> Option<Self> {
        Self::with_atan2(root, joints, libm::atan2)
    }

    /// [`BodyMap::new`] with the hinges' angles taken with `atan2(y, x)` (a host with `std`
    /// may pass `f64::atan2`, the C library's: it and `libm`'s can differ in the last bit, and a
    /// balance run amplifies that into different millimetres). The Euler angles of ball and
    /// two-axis joints always use `libm`'s.
    pub fn with_atan2(
        root: usize,
        joints: &[MappedJoint],
        atan2: fn(f64, f64) -> f64,
    ) -> Option<Self> {
        Some(Self {
            joints: heapless::Vec::from_slice(joints).ok()?,
            root,
            atan2,
        })
    }

    /// The root body (plant order).
    pub fn root(&self) -> usize {
        self.root
    }

    /// The mapped joints.
    pub fn joints(&self) -> &[MappedJoint] {
        &self.joints
    }

    /// The base pose, coordinates and velocities (base: its frame) of the plant's `bodies`,
    /// written into `q` and `v` (length at least 6 + the tree's joints), and the largest
    /// locked-axis angle of a two-axis joint; `None` when a motion is not finite or at an Euler
    /// singularity.
    pub fn state(
        &self,
        bodies: &[BodyMotion],
        q: &mut [f64],
        v: &mut [f64],
    ) -> Option<(Isometry3<f64>, f64)> {
        let root = bodies.get(self.root)?;
        let root_rotation = orientation(root)?;
        let base = Isometry3::from_parts(Translation3::from(v3(root.com_m)), root_rotation);
        let to_base = root_rotation.inverse();
        let lin = to_base * v3(root.velocity_m_s);
        let ang = to_base * v3(root.angular_velocity_rad_s);
        v.get_mut(..3)?.copy_from_slice(lin.as_slice());
        v.get_mut(3..6)?.copy_from_slice(ang.as_slice());
        let mut largest = 0.0f64;
        for m in &self.joints {
            let (parent, child) = (bodies.get(m.parent)?, bodies.get(m.child)?);
            let (rp, rc) = (orientation(parent)?, orientation(child)?);
            let relative = rp.inverse() * rc;
            let omega = rp.inverse()
                * (v3(child.angular_velocity_rad_s) - v3(parent.angular_velocity_rad_s));
            let (angles, rates, locked) = coordinates(m, &relative, &omega, self.atan2)?;
            largest = largest.max(locked);
            for k in 0..m.count {
                *q.get_mut(m.first + k)? = *angles.get(k)?;
                *v.get_mut(6 + m.first + k)? = *rates.get(k)?;
            }
        }
        Some((base, largest))
    }

    /// The tree coordinates of mapped joint `j` at the relative rotation `r` (its joint's),
    /// written into `q`.
    pub fn pose_coordinates(&self, j: usize, r: &UnitQuaternion<f64>, q: &mut [f64]) -> Option<()> {
        let m = self.joints.get(j)?;
        let (goal, _, _) = coordinates(m, r, &Vector3::zeros(), self.atan2)?;
        for (k, g) in goal.iter().enumerate().take(m.count) {
            *q.get_mut(m.first + k)? = *g;
        }
        Some(())
    }
}

/// A body's orientation, if it is a finite quaternion of about unit length.
fn orientation(b: &BodyMotion) -> Option<UnitQuaternion<f64>> {
    let [w, x, y, z] = b.orientation;
    let q = Quaternion::new(w, x, y, z);
    (q.norm() > 0.5 && q.coords.iter().all(|c| c.is_finite()))
        .then(|| UnitQuaternion::from_quaternion(q))
}

fn v3(a: [f64; 3]) -> Vector3<f64> {
    Vector3::new(a[0], a[1], a[2])
}

/// The unit vector along coordinate axis `n` (zero past z).
fn unit(n: usize) -> Vector3<f64> {
    let mut e = Vector3::zeros();
    if let Some(x) = e.get_mut(n) {
        *x = 1.0;
    }
    e
}

/// Tree coordinates and rates of joint `m` at the relative rotation `r` and relative angular
/// velocity `omega` (parent axes), and the |angle| about a two-axis joint's locked axis; a
/// hinge's angle by `atan2`.
fn coordinates(
    m: &MappedJoint,
    r: &UnitQuaternion<f64>,
    omega: &Vector3<f64>,
    atan2: fn(f64, f64) -> f64,
) -> Option<([f64; 3], [f64; 3], f64)> {
    let matrix: Matrix3<f64> = r.to_rotation_matrix().into_inner();
    match m.coordinates {
        Coordinates::Ball { order } => {
            let angles = euler_angles(&matrix, order)?;
            let rates = euler_rates(angles, order, omega)?;
            Some((angles, rates, 0.0))
        }
        Coordinates::TwoAxis { order } => {
            let [a, locked, c] = euler_angles(&matrix, order)?;
            // ω ≈ e_a ȧ + Rot(e_a, a) e_c ċ: orthonormal columns.
            let ea = unit(order[0]);
            let ec = UnitQuaternion::from_axis_angle(&nalgebra::Unit::new_unchecked(ea), a)
                * unit(order[2]);
            Some((
                [a, c, 0.0],
                [ea.dot(omega), ec.dot(omega), 0.0],
                locked.abs(),
            ))
        }
        Coordinates::Hinge { axis } => {
            let q = r.quaternion();
            let s = q.imag().dot(&axis);
            let angle = 2.0 * atan2(s, q.w);
            let angle = if angle > core::f64::consts::PI {
                angle - 2.0 * core::f64::consts::PI
            } else if angle < -core::f64::consts::PI {
                angle + 2.0 * core::f64::consts::PI
            } else {
                angle
            };
            Some(([angle, 0.0, 0.0], [axis.dot(omega), 0.0, 0.0], 0.0))
        }
    }
}

/// A hand reaching for a point while the body balances: a [`PointTask`] on the hand's point
/// whose target moves along a smoothstep from where the hand was at `start_s` to the shoulder's
/// point plus `reach` at `arrive_s`, then stays.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HandReach {
    /// The plant body the point is on.
    pub body: usize,
    /// The point from that body's centre of mass (body axes), m.
    pub from_com: [f64; 3],
    /// The tree body the point is on.
    pub tree_body: usize,
    /// The point in the tree body's frame, m.
    pub point: [f64; 3],
    /// The plant body below the shoulder joint.
    pub shoulder_body: usize,
    /// The shoulder joint's point from that body's centre of mass (body axes), m.
    pub shoulder_from_com: [f64; 3],
    /// The final target from the shoulder, world, m.
    pub reach: [f64; 3],
    /// When the reach starts, s.
    pub start_s: f64,
    /// When the hand must be there, s.
    pub arrive_s: f64,
    /// Set at the first tick at or after `start_s`: the hand's start and the final target.
    pub path: Option<([f64; 3], [f64; 3])>,
}

impl HandReach {
    /// The final target, once the reach has started.
    pub fn target(&self) -> Option<[f64; 3]> {
        self.path.map(|(_, t)| t)
    }
}

/// `body`'s point `from_com` (body axes, from its centre of mass) in the world.
fn world_point(b: &BodyMotion, from_com: [f64; 3]) -> Option<Vector3<f64>> {
    let [w, x, y, z] = b.orientation;
    let q = Quaternion::new(w, x, y, z);
    if !(q.norm() > 0.5 && q.coords.iter().all(|c| c.is_finite())) {
        return None;
    }
    Some(Vector3::from(b.com_m) + UnitQuaternion::from_quaternion(q) * Vector3::from(from_com))
}

/// A humanoid's balance controller: its [`BodyMap`], the QP controller, and what it keeps
/// from tick to tick (the contact hold, the recovery step, the legs held, the hand's reach).
/// Its contact bodies are the left foot, the right foot, the left toes and the right toes, in
/// that order; a foot steps with its toes.
pub struct HumanoidBalance<const NV: usize, const NX: usize, const NR: usize> {
    qp: Balance<NV, NX, NR>,
    map: BodyMap<MAX_BODIES>,
    contacts: [ContactBody; 4],
    /// The plant's bodies' masses, kg (the centre of mass's velocity for the step).
    masses: heapless::Vec<f64, MAX_BODIES>,
    gravity: Vector3<f64>,
    com_height_m: f64,
    /// The largest locked-axis angle of a two-axis joint seen, rad.
    pub largest_locked_angle_rad: f64,
    /// The last tick's output.
    pub last: Option<BalanceOutput<NV>>,
    /// The hand's reach (none: no hand task).
    pub hand: Option<HandReach>,
    /// The recovery step (none: no stepping).
    stepper: Option<Stepper>,
    /// The step's kinematics, kept from tick to tick (filled in place, not built anew).
    step_kin: TreeKinematics<NV>,
    /// The last tick's step command.
    last_step: Option<StepCommand>,
    /// Once a step has landed, the legs' coordinates there: their pose targets from then on.
    legs_held: Option<[f64; NV]>,
    /// The planted feet and toes, held some ticks after their last load.
    hold: ContactHold<4>,
}

impl<const NV: usize, const NX: usize, const NR: usize> core::fmt::Debug
    for HumanoidBalance<NV, NX, NR>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HumanoidBalance")
            .field("joints", &self.map.joints.len())
            .field("settings", self.qp.settings())
            .finish_non_exhaustive()
    }
}

/// What a [`HumanoidBalance`] is built from besides its QP.
#[derive(Debug, Clone)]
pub struct HumanoidBalanceSpec<'a> {
    /// The plant's bodies → the QP's tree.
    pub map: BodyMap<MAX_BODIES>,
    /// The contact bodies: left foot, right foot, left toes, right toes (the QP's, in its order).
    pub contacts: [ContactBody; 4],
    /// Every plant body's mass, kg, body order.
    pub masses: &'a [f64],
    /// Gravity, m/s².
    pub gravity: Vector3<f64>,
    /// The centre of mass's height above the soles the QP holds, m (> 0).
    pub com_height_m: f64,
    /// The recovery step (none: no stepping).
    pub stepper: Option<Stepper>,
    /// Ticks a contact body stays planted after its last load.
    pub contact_hold_ticks: u32,
}

impl<const NV: usize, const NX: usize, const NR: usize> HumanoidBalance<NV, NX, NR> {
    /// The controller of `qp` (built on the tree `spec.map` maps to, standing on
    /// `spec.contacts`); `None` when the bodies exceed [`MAX_BODIES`].
    pub fn new(qp: Balance<NV, NX, NR>, spec: HumanoidBalanceSpec<'_>) -> Option<Self> {
        Some(Self {
            qp,
            map: spec.map,
            contacts: spec.contacts,
            masses: heapless::Vec::from_slice(spec.masses).ok()?,
            gravity: spec.gravity,
            com_height_m: spec.com_height_m,
            largest_locked_angle_rad: 0.0,
            last: None,
            hand: None,
            stepper: spec.stepper,
            step_kin: TreeKinematics::default(),
            last_step: None,
            legs_held: None,
            hold: ContactHold::new(spec.contact_hold_ticks),
        })
    }

    /// The QP controller (its last QP, its settings).
    pub fn balance(&self) -> &Balance<NV, NX, NR> {
        &self.qp
    }

    /// The body map.
    pub fn map(&self) -> &BodyMap<MAX_BODIES> {
        &self.map
    }

    /// The hand's distance from its final target now, m (`None` before the reach starts or
    /// without a hand).
    pub fn hand_error_m(&self, bodies: &[BodyMotion]) -> Option<f64> {
        let h = self.hand.as_ref()?;
        let target = h.target()?;
        let now = world_point(bodies.get(h.body)?, h.from_com)?;
        Some((now - Vector3::from(target)).norm())
    }

    /// Recovery steps started so far and the longest of them, m.
    pub fn steps(&self) -> (u32, f64) {
        self.stepper.as_ref().map_or((0, 0.0), Stepper::steps)
    }

    /// Whether a foot was in the air, stepping, at the last tick.
    pub fn swinging(&self) -> bool {
        matches!(self.last_step, Some(StepCommand::Swing { .. }))
    }

    /// The recovery step's tick ([`Stepper::tick`]): the centre of mass from the plant's
    /// bodies, the feet (contact bodies 0 and 1, each with its toes, 2 and 3) from the tree at
    /// `base`, `q`. `None` if the state cannot be mapped.
    fn step_tick(
        &mut self,
        time_s: f64,
        bodies: &[BodyMotion],
        base: &Isometry3<f64>,
        q: &[f64; NV],
        contact_normal_n: &[f64; 4],
    ) -> Option<StepCommand> {
        let (mut mass, mut com, mut velocity) = (0.0, Vector3::zeros(), Vector3::zeros());
        for (b, m) in bodies.iter().zip(&self.masses) {
            mass += m;
            com += Vector3::from(b.com_m) * *m;
            velocity += Vector3::from(b.velocity_m_s) * *m;
        }
        let (com, velocity) = (com / mass, velocity / mass);
        let omega = libm::sqrt(self.gravity.norm() / self.com_height_m);
        let up = -self.gravity.normalize();
        self.qp
            .tree()
            .kinematics_into(&mut self.step_kin, base, q)
            .ok()?;
        let kin = &self.step_kin;
        // Per foot: its sole's corners and its toes' (world).
        let mut world = [[[0.0; 3]; 2 * MAX_POINTS]; 2];
        let mut counts = [0usize; 2];
        for (k, (w, n)) in world.iter_mut().zip(&mut counts).enumerate() {
            for c in [k, k + 2] {
                let cb = self.contacts.get(c)?;
                let pose = kin.body_pose(cb.body)?;
                for p in cb.points.iter().take(cb.count) {
                    let at = pose * Point3::from(*p);
                    *w.get_mut(*n)? = at.coords.into();
                    *n += 1;
                }
            }
        }
        let foot = |k: usize| -> Option<FootState<'_>> {
            let cb = self.contacts.get(k)?;
            let w = world.get(k)?;
            Some(FootState {
                body: cb.body,
                sole: cb.points.get(..cb.count)?,
                corners_world: w.get(..*counts.get(k)?)?,
                sole_world: [*w.first()?, *w.get(1)?, *w.get(2)?],
                loaded: *contact_normal_n.get(k)? > PLANTED_N,
                load_n: *contact_normal_n.get(k)?,
            })
        };
        let feet = [foot(0)?, foot(1)?];
        let stepper = self.stepper.as_mut()?;
        Some(stepper.tick(time_s, &com, &velocity, omega, &up, &feet))
    }

    /// One tick: the bodies' motions `bodies`, each mapped joint's target rotation relative to
    /// its parent `targets` (joint order), the ground's normal force on the contact bodies
    /// `contact_normal_n` (feet, toes); writes each mapped joint's torque vector (world) into
    /// `torques` (3 per joint, joint order). `None` if the state cannot be mapped (a non-finite
    /// motion, an Euler singularity): the caller sends its safe state.
    pub fn tick(
        &mut self,
        time_s: f64,
        bodies: &[BodyMotion],
        targets: &[UnitQuaternion<f64>],
        contact_normal_n: &[f64; 4],
        torques: &mut [f64],
    ) -> Option<BalanceStatus> {
        // The hand's task: none before its start; then the point along its path.
        let mut task = [PointTask::on(0); 4];
        let mut tasks = 0;
        if let Some(h) = self.hand.as_mut()
            && time_s >= h.start_s
        {
            if h.path.is_none() {
                let start = world_point(bodies.get(h.body)?, h.from_com)?;
                let shoulder = world_point(bodies.get(h.shoulder_body)?, h.shoulder_from_com)?;
                h.path = Some((start.into(), (shoulder + Vector3::from(h.reach)).into()));
            }
            if let Some((start, end)) = h.path {
                // A smoothstep from start to end: position, velocity, acceleration.
                let span = h.arrive_s - h.start_s;
                let u = ((time_s - h.start_s) / span).clamp(0.0, 1.0);
                let moving = u < 1.0;
                let (s, ds, dds) = (
                    u * u * (3.0 - 2.0 * u),
                    if moving {
                        6.0 * u * (1.0 - u) / span
                    } else {
                        0.0
                    },
                    if moving {
                        (6.0 - 12.0 * u) / (span * span)
                    } else {
                        0.0
                    },
                );
                let way = Vector3::from(end) - Vector3::from(start);
                task[0] = PointTask {
                    body: h.tree_body,
                    point: h.point,
                    target: (Vector3::from(start) + way * s).into(),
                    target_velocity: (way * ds).into(),
                    target_acceleration: (way * dds).into(),
                };
                tasks = 1;
            }
        }
        let mut q = [0.0; NV];
        let mut v = [0.0; NV];
        let mut q_target = [0.0; NV];
        let (base, locked) = self.map.state(bodies, &mut q, &mut v)?;
        self.largest_locked_angle_rad = self.largest_locked_angle_rad.max(locked);
        for j in 0..self.map.joints.len() {
            let target = targets
                .get(j)
                .copied()
                .unwrap_or_else(UnitQuaternion::identity);
            self.map.pose_coordinates(j, &target, &mut q_target)?;
        }
        let root_rotation = base.rotation;
        // Upright, heading kept: the root's forward axis turned about the vertical only.
        let up = -self.gravity.normalize();
        let forward = root_rotation * Vector3::x();
        let flat = forward - up * up.dot(&forward);
        let upright = if flat.norm() > 1e-6 {
            UnitQuaternion::rotation_between(&Vector3::x(), &flat.normalize())
                .unwrap_or_else(UnitQuaternion::identity)
        } else {
            UnitQuaternion::identity()
        };
        let mut planted = [[false; MAX_POINTS]; 4];
        let held = self
            .hold
            .tick(contact_normal_n.iter().map(|f| *f > PLANTED_N));
        for (touch, held) in planted.iter_mut().zip(held) {
            *touch = [held; MAX_POINTS];
        }
        if self.stepper.is_some() {
            let command = self.step_tick(time_s, bodies, &base, &q, contact_normal_n)?;
            self.last_step = Some(command);
            if let Some(foot) = command.swing_foot() {
                // The foot and its toes are in the air, whatever brushes the ground.
                for k in [foot, foot + 2] {
                    if let Some(p) = planted.get_mut(k) {
                        *p = [false; MAX_POINTS];
                    }
                }
            }
            if command.landed_now() {
                self.legs_held = Some(q);
            }
            for t in command.tasks() {
                *task.get_mut(tasks)? = *t;
                tasks += 1;
            }
        }
        if let Some(held) = self.legs_held {
            // The feet's legs (the toes' joints keep the standing pose's targets).
            let feet = self.contacts.iter().take(2).map(|c| c.body);
            hold_legs(self.qp.tree(), feet, &held, &mut q_target);
        }
        let out = self.qp.tick(&BalanceInput {
            base_pose: &base,
            q: &q,
            v: &v,
            q_target: &q_target,
            upright_target: &upright,
            com_height_m: self.com_height_m,
            planted: &planted,
            gravity: self.gravity,
            tasks: task.get(..tasks).unwrap_or(&[]),
        });
        for (j, slot) in torques
            .chunks_exact_mut(3)
            .take(self.map.joints.len())
            .enumerate()
        {
            if let Some(t) = out.group_torques.get(j) {
                slot.copy_from_slice(t);
            }
        }
        let status = out.status;
        self.last = Some(out);
        Some(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A root, a ball-jointed child (axes z, x, y) and a hinge about z below it, and a two-axis
    /// joint (x free, y locked, z free) on the root.
    fn map() -> BodyMap<4> {
        let joints = [
            MappedJoint {
                parent: 0,
                child: 1,
                first: 0,
                count: 3,
                coordinates: Coordinates::Ball { order: [2, 0, 1] },
            },
            MappedJoint {
                parent: 1,
                child: 2,
                first: 3,
                count: 1,
                coordinates: Coordinates::Hinge { axis: Vector3::z() },
            },
            MappedJoint {
                parent: 0,
                child: 3,
                first: 4,
                count: 2,
                coordinates: Coordinates::TwoAxis { order: [0, 1, 2] },
            },
        ];
        BodyMap::new(0, &joints).expect("within capacity")
    }

    fn body(q: UnitQuaternion<f64>, w: Vector3<f64>) -> BodyMotion {
        let c = q.quaternion();
        BodyMotion {
            com_m: [0.1, 0.9, -0.2],
            orientation: [c.w, c.i, c.j, c.k],
            velocity_m_s: [0.3, 0.0, 0.1],
            angular_velocity_rad_s: w.into(),
        }
    }

    #[test]
    fn a_state_maps_to_the_coordinates_that_pose_it() {
        let m = map();
        let root = UnitQuaternion::from_euler_angles(0.1, -0.2, 0.3);
        let ball = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), 0.4)
            * UnitQuaternion::from_axis_angle(&Vector3::x_axis(), -0.3)
            * UnitQuaternion::from_axis_angle(&Vector3::y_axis(), 0.2);
        let hinge = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), -0.7);
        let two = UnitQuaternion::from_axis_angle(&Vector3::x_axis(), 0.25)
            * UnitQuaternion::from_axis_angle(&Vector3::z_axis(), 0.5);
        // The hinge turning at 2 rad/s about its axis relative to its parent.
        let w1 = Vector3::new(0.1, 0.2, -0.3);
        let w2 = w1 + (root * ball) * Vector3::new(0.0, 0.0, 2.0);
        let bodies = [
            body(root, w1 * 0.5),
            body(root * ball, w1),
            body(root * ball * hinge, w2),
            body(root * two, w1 * 0.5),
        ];
        let (mut q, mut v) = ([0.0; 12], [0.0; 12]);
        let (base, locked) = m.state(&bodies, &mut q, &mut v).expect("a finite state");
        assert!((base.translation.vector - Vector3::new(0.1, 0.9, -0.2)).norm() < 1e-15);
        assert!(locked < 1e-12, "{locked}");
        let expected = [0.4, -0.3, 0.2, -0.7, 0.25, 0.5];
        for (got, want) in q.iter().zip(expected) {
            assert!((got - want).abs() < 1e-12, "{q:?}");
        }
        assert!((v[6 + 3] - 2.0).abs() < 1e-12, "{v:?}");
        // The base's velocities in its own frame.
        let lin = root.inverse() * Vector3::new(0.3, 0.0, 0.1);
        assert!((Vector3::new(v[0], v[1], v[2]) - lin).norm() < 1e-15);
        // The targets: the same rotations give the same coordinates.
        let mut target = [0.0; 12];
        for (j, r) in [ball, hinge, two].iter().enumerate() {
            m.pose_coordinates(j, r, &mut target).expect("a joint");
        }
        for (t, got) in target.iter().zip(&q).take(6) {
            assert!((t - got).abs() < 1e-12, "{target:?}");
        }
        assert!(m.pose_coordinates(3, &ball, &mut target).is_none());
    }

    #[test]
    fn what_it_cannot_map_is_refused_not_guessed() {
        let m = map();
        let up = body(UnitQuaternion::identity(), Vector3::zeros());
        let (mut q, mut v) = ([0.0; 12], [0.0; 12]);
        assert!(m.state(&[up; 4], &mut q, &mut v).is_some());
        // Too few bodies, a zero or non-finite quaternion, buffers too short.
        assert!(m.state(&[up; 3], &mut q, &mut v).is_none());
        for bad in [
            [0.0; 4],
            [f64::NAN, 0.0, 0.0, 0.0],
            [1.0, f64::INFINITY, 0.0, 0.0],
        ] {
            let mut b = [up; 4];
            b[2].orientation = bad;
            assert!(m.state(&b, &mut q, &mut v).is_none(), "{bad:?}");
        }
        assert!(m.state(&[up; 4], &mut q[..5], &mut v).is_none());
        assert!(m.state(&[up; 4], &mut q, &mut v[..8]).is_none());
        assert!(BodyMap::<2>::new(0, map().joints()).is_none());
        assert_eq!((m.root(), m.joints().len()), (0, 3));
    }
}

/// What a [`HumanoidBalance`] tick reads, as one input (for
/// [`crate::controller::Controller`]).
#[derive(Debug, Clone, Copy)]
pub struct HumanoidBalanceInput<'a> {
    /// The state's time, s.
    pub time_s: f64,
    /// The plant's bodies' motions.
    pub bodies: &'a [BodyMotion],
    /// Each mapped joint's target rotation relative to its parent, joint order.
    pub targets: &'a [UnitQuaternion<f64>],
    /// The ground's normal force on the left foot, right foot, left toes and right toes, N.
    pub contact_normal_n: [f64; 4],
}

/// What a [`HumanoidBalance`] tick sends, as one command.
#[derive(Debug, Clone, Copy)]
pub struct HumanoidBalanceCommand {
    /// Each mapped joint's world torque vector, 3 per joint (joint order), N·m; 0 past them.
    pub torques_nm: [f64; crate::frames::MAX_JOINTS],
    /// The QP's outcome.
    pub status: BalanceStatus,
}

/// Why a humanoid controller's tick sent nothing ([`HumanoidBalance`], the walker's stance
/// stabiliser): the plant's state could not be mapped to the model's coordinates (a non-finite
/// motion, an Euler singularity), or the request does not fit the model (no such stance side).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unmapped;

impl<const NV: usize, const NX: usize, const NR: usize>
    crate::controller::Controller<HumanoidBalanceInput<'_>> for HumanoidBalance<NV, NX, NR>
{
    type Command = HumanoidBalanceCommand;
    type Error = Unmapped;

    fn tick(&mut self, i: &HumanoidBalanceInput<'_>) -> Result<HumanoidBalanceCommand, Unmapped> {
        let mut torques_nm = [0.0; crate::frames::MAX_JOINTS];
        let status = HumanoidBalance::tick(
            self,
            i.time_s,
            i.bodies,
            i.targets,
            &i.contact_normal_n,
            &mut torques_nm,
        )
        .ok_or(Unmapped)?;
        Ok(HumanoidBalanceCommand { torques_nm, status })
    }

    /// A QP that did not solve is a fallback (its torques the last ones damped); the efforts'
    /// cuts are the QP's own (its last output, [`HumanoidBalance::last`]).
    fn limits(command: &HumanoidBalanceCommand) -> crate::controller::Limits {
        crate::controller::Limits {
            fallback: command.status != BalanceStatus::Solved,
            ..Default::default()
        }
    }
}
