//! The scene around a robot: the static walls it can press on, the pushes that act on its bodies,
//! and the contact forces the environment puts on them, as the Rapier plants read them (the
//! robot plant, [`crate::robot`], and the biped and humanoid plants' contact readout); and what
//! every body plant does with Rapier the same way: clearing the last step's forces, reading a
//! body's motion for a state frame, counting the bodies Rapier quarantined.
//!
//! - [`Wall`]: a static box, axis-aligned in the world: one fixed collider each, with no body,
//!   friction [`WALL_FRICTION`] and no restitution.
//! - [`Push`]: a constant world force on one body, at its centre of mass, applied for the steps
//!   k with round(start_s/dt) ≤ k < round(start_s/dt) + round(duration_s/dt).
//! - Contact forces: after every step, for each body, the force the environment put on it
//!   during the step: over every contact pair between an environment collider and one of the
//!   body's colliders (`NarrowPhase::contact_pairs_with`), over the manifolds the solver saw
//!   (`ContactPair::solver_manifolds`) and their solver contacts, the normal impulse plus the
//!   two friction impulses, each summed by Rapier over the step's substeps
//!   (`ContactData::impulse`, `tangent_impulse`), put in the world frame
//!   (`impulse_on_first`), summed, and divided by dt: the step's mean force, world frame, N.
//!   (`ContactPair::total_impulse` is the normal part only.) A body near a wall but not pushed
//!   (a speculative contact, impulse 0) is not reported. Friction along a direction the robot
//!   cannot move in (z for a planar arm whose joints all turn about z) is indeterminate for the
//!   solver and is reported as it left it.
//!
//! - `Props`: balls thrown and weights dropped into the scene (the arm's, the humanoid's and
//!   any robot's; their specs [`BallSpawn`] and [`WeightDrop`]): each a dynamic body with one
//!   collider of its shape and mass, continuous collision detection on, spawned at the start of
//!   the step its time rounds to (file order within a step, balls before weights). A prop
//!   touches the robot when the solver pushed on a contact between it and one of the robot's
//!   colliders during the step (non-zero normal impulse; a pair merely inside the prediction
//!   distance does not); the plant turns the changes into `ContactBegan` / `ContactEnded`
//!   events. Balls (not weights) can report crossing the plane z = 0 upwards, and props can be
//!   removed after a crossing or below a height: the arm scene's rules.
//!
//! Never does: read the wall clock, allocate per step beyond the caller's scratch and the props'
//! own records, or panic on a validated scene.

use std::collections::{HashMap, VecDeque};

use control_core::frames::{BodyId, BodyMotion, ContactForce, Event, MAX_CONTACTS};
use rapier3d::prelude::*;
use rapier3d::utils::OrthonormalBasis;
use serde::{Deserialize, Serialize};

use crate::clock::steps_for;
use crate::scene::{BallSpawn, Checker, MAX_PUSH_FORCE_N, WeightDrop, WeightShape};

/// Most walls a scene has.
pub const MAX_WALLS: usize = 8;
/// Most pushes a scene has.
pub const MAX_PUSHES: usize = 64;
/// Largest half extent of a wall, m.
pub const MAX_WALL_HALF_EXTENT_M: f64 = 100.0;
/// Friction coefficient of a wall's collider: the coefficient between a robot and a wall (the
/// robot plant's colliders have friction 1 and combine by product). Restitution is 0 (Rapier's
/// default): a body that hits a wall does not bounce.
pub const WALL_FRICTION: f64 = 0.5;

/// A static box, axis-aligned in the world: a fixed collider with no body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wall {
    /// Centre of the box, world frame, m (each within ±1000 m).
    #[serde(deserialize_with = "crate::input::exact")]
    pub center_m: [f64; 3],
    /// Half the box's size along the world x, y and z axes, m (each greater than 0 and at most
    /// [`MAX_WALL_HALF_EXTENT_M`]).
    #[serde(deserialize_with = "crate::input::exact")]
    pub half_extents_m: [f64; 3],
}

/// A constant world force on one link, at its centre of mass, for a while.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Push {
    /// The URDF name of the link pushed (a link merged into a body pushes that body; not a
    /// fixed base).
    pub body: String,
    /// The force, world frame, N (each component within ±[`MAX_PUSH_FORCE_N`]).
    #[serde(deserialize_with = "crate::input::exact")]
    pub force_n: [f64; 3],
    /// When it starts, s (rounded to the nearest step).
    pub start_s: f64,
    /// How long it lasts, s (rounded to a whole number of steps; 0: not at all).
    pub duration_s: f64,
}

/// Checks a scene's `pushes` (a `noun` scene's, for the message): at most [`MAX_PUSHES`], each
/// naming a body, its force within ±[`MAX_PUSH_FORCE_N`] and its times in [0, 1e7] s.
pub(crate) fn check_pushes(c: &mut Checker, pushes: &[Push], noun: &str) {
    if pushes.len() > MAX_PUSHES {
        c.fail(
            "pushes",
            format!(
                "{} pushes: a {noun} scene has at most {MAX_PUSHES}",
                pushes.len()
            ),
        );
    }
    for (i, p) in pushes.iter().enumerate() {
        let f = |name: &str| format!("pushes[{i}].{name}");
        if p.body.is_empty() {
            c.fail(&f("body"), String::from("must name a link of the URDF"));
        }
        for (k, x) in p.force_n.into_iter().enumerate() {
            c.range(
                &format!("pushes[{i}].force_n[{k}]"),
                x,
                -MAX_PUSH_FORCE_N,
                MAX_PUSH_FORCE_N,
            );
        }
        c.range(&f("start_s"), p.start_s, 0.0, 1e7);
        c.range(&f("duration_s"), p.duration_s, 0.0, 1e7);
    }
}

/// Most balls, and most weights, a robot or humanoid scene has.
pub const MAX_PROPS: usize = 64;
/// The smallest id a prop of a robot or humanoid scene may have: lower ids name the robot's
/// bodies (in contact forces and the humanoid's ground-contact events).
pub const FIRST_PROP_ID: u16 = 100;

/// Checks a scene's `balls` and `weights` (a `noun` scene's, for the message): at most `max`
/// of each when given; ids unique across both lists and at least `first_id`; spawn times in
/// [0, 1e7] s; positions and velocities finite within ±1e6; radii and half extents in
/// [1e-3, 10] m; masses in [1e-4, 1e5] kg.
pub(crate) fn check_props(
    c: &mut Checker,
    balls: &[BallSpawn],
    weights: &[WeightDrop],
    first_id: u16,
    max: Option<usize>,
    noun: &str,
) {
    if let Some(max) = max {
        for (field, n) in [("balls", balls.len()), ("weights", weights.len())] {
            if n > max {
                c.fail(
                    field,
                    format!("{n} {field}: a {noun} scene has at most {max}"),
                );
            }
        }
    }
    // One namespace: id → the path of the prop that has it first.
    let mut ids: HashMap<u16, String> = HashMap::new();
    let mut id = |c: &mut Checker, id: u16, path: String| {
        if id < first_id {
            c.fail(
                &format!("{path}.id"),
                format!("{id}: ids start at {first_id} (lower ids name the {noun}'s bodies)"),
            );
        }
        if let Some(first) = ids.get(&id) {
            c.fail(
                &format!("{path}.id"),
                format!(
                    "id {id} is already used by {first} (ball and weight ids share one namespace)"
                ),
            );
        } else {
            ids.insert(id, path);
        }
    };
    for (i, b) in balls.iter().enumerate() {
        let f = |name: &str| format!("balls[{i}].{name}");
        id(c, b.id, format!("balls[{i}]"));
        c.range(&f("spawn_time_s"), b.spawn_time_s, 0.0, 1e7);
        c.vec3(&f("position_m"), b.position_m);
        c.vec3(&f("velocity_m_s"), b.velocity_m_s);
        c.range(&f("radius_m"), b.radius_m, 1e-3, 10.0);
        c.range(&f("mass_kg"), b.mass_kg, 1e-4, 1e5);
    }
    for (i, w) in weights.iter().enumerate() {
        let f = |name: &str| format!("weights[{i}].{name}");
        id(c, w.id, format!("weights[{i}]"));
        c.range(&f("spawn_time_s"), w.spawn_time_s, 0.0, 1e7);
        c.vec3(&f("position_m"), w.position_m);
        c.vec3(&f("velocity_m_s"), w.velocity_m_s);
        match w.shape {
            WeightShape::Sphere { radius_m } => {
                c.range(&f("shape.sphere.radius_m"), radius_m, 1e-3, 10.0);
            }
            WeightShape::Box { half_extents_m } => {
                for (k, h) in half_extents_m.into_iter().enumerate() {
                    c.range(&f(&format!("shape.box.half_extents_m[{k}]")), h, 1e-3, 10.0);
                }
            }
        }
        c.range(&f("mass_kg"), w.mass_kg, 1e-4, 1e5);
    }
}

/// Checks a scene's `walls` (a `noun` scene's, for the message): at most [`MAX_WALLS`], centres
/// within ±1 km, half extents in (0, [`MAX_WALL_HALF_EXTENT_M`]].
pub(crate) fn check_walls(c: &mut Checker, walls: &[Wall], noun: &str) {
    if walls.len() > MAX_WALLS {
        c.fail(
            "walls",
            format!(
                "{} walls: a {noun} scene has at most {MAX_WALLS}",
                walls.len()
            ),
        );
    }
    for (i, w) in walls.iter().enumerate() {
        for k in 0..3 {
            c.range(
                &format!("walls[{i}].center_m[{k}]"),
                w.center_m[k],
                -1e3,
                1e3,
            );
            c.positive_up_to(
                &format!("walls[{i}].half_extents_m[{k}]"),
                w.half_extents_m[k],
                MAX_WALL_HALF_EXTENT_M,
            );
        }
    }
}

/// A push resolved to a body and steps.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ActivePush {
    body: RigidBodyHandle,
    force: Vector,
    first_step: u64,
    end_step: u64,
}

impl ActivePush {
    /// `force_n` (N, world) on `body` from the step nearest `start_s` for the steps nearest
    /// `duration_s`, at physics step `dt_s`.
    pub(crate) fn new(
        body: RigidBodyHandle,
        force_n: [f64; 3],
        start_s: f64,
        duration_s: f64,
        dt_s: f64,
    ) -> Self {
        let first_step = steps_for(start_s, dt_s);
        Self {
            body,
            force: v3(force_n),
            first_step,
            end_step: first_step + steps_for(duration_s, dt_s),
        }
    }
}

/// Adds the force of each push active at step `step` to its body (held for the whole step).
pub(crate) fn apply_pushes(pushes: &[ActivePush], bodies: &mut RigidBodySet, step: u64) {
    for p in pushes {
        if (p.first_step..p.end_step).contains(&step)
            && let Some(rb) = bodies.get_mut(p.body)
        {
            rb.add_force(p.force, true);
        }
    }
}

/// Clears the forces and torques added to the bodies `handles` (for the next step's).
pub(crate) fn reset_forces<'a>(
    bodies: &mut RigidBodySet,
    handles: impl IntoIterator<Item = &'a RigidBodyHandle>,
) {
    for &h in handles {
        if let Some(rb) = bodies.get_mut(h) {
            rb.reset_torques(false);
            rb.reset_forces(false);
        }
    }
}

/// The collision groups of a robot's or the humanoid's props: members of the environment's
/// group 1 (so the robot's colliders, which filter group 1, see them) and of their own group 3;
/// they collide with the environment, the robot (group 2) and each other.
pub(crate) const PROP_GROUPS: InteractionGroups = InteractionGroups::new(
    Group::GROUP_1.union(Group::GROUP_3),
    Group::GROUP_1.union(Group::GROUP_2).union(Group::GROUP_3),
    InteractionTestMode::And,
);

/// What a plant gives its props' colliders beyond shape and mass (Rapier's default where
/// `None`: friction 0.5 combined by average, every collision group).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PropMaterial {
    /// Friction coefficient.
    pub friction: Option<Real>,
    /// How it combines with the other collider's.
    pub friction_combine_rule: Option<CoefficientCombineRule>,
    /// Collision groups.
    pub groups: Option<InteractionGroups>,
}

#[derive(Debug, Clone, Copy)]
enum PropShape {
    Sphere(f64),
    Box([f64; 3]),
}

/// A prop waiting for its spawn step.
#[derive(Debug, Clone, Copy)]
struct DueProp {
    step: u64,
    id: BodyId,
    /// A ball: its crossings of z = 0 can be reported.
    crosses: bool,
    position: [f64; 3],
    velocity: [f64; 3],
    shape: PropShape,
    mass_kg: f64,
}

/// A prop in the world.
#[derive(Debug, Clone, Copy)]
struct LiveProp {
    id: BodyId,
    crosses: bool,
    body: RigidBodyHandle,
    collider: ColliderHandle,
    /// Step at which its centre crossed z = 0 (balls only, when crossings are read).
    crossed_at: Option<u64>,
    /// Whether it touched the robot during the last step.
    touching: bool,
}

/// A scene's balls and weights: those not yet thrown, in spawn order, and those in the world.
#[derive(Debug)]
pub(crate) struct Props {
    due: VecDeque<DueProp>,
    live: Vec<LiveProp>,
    material: PropMaterial,
    /// Each live prop's centre's z before the step ([`Self::note_heights`]), spawn order.
    z_before: Vec<Real>,
}

impl Props {
    /// The props of `balls` and `weights` for a plant stepping `dt_s`, their colliders made of
    /// `material`. Nothing is in the world yet: [`Self::spawn_due`] puts each in at its step.
    pub(crate) fn new(
        balls: &[BallSpawn],
        weights: &[WeightDrop],
        dt_s: f64,
        material: PropMaterial,
    ) -> Self {
        let mut due: Vec<DueProp> = balls
            .iter()
            .map(|b| DueProp {
                step: steps_for(b.spawn_time_s, dt_s),
                id: BodyId(b.id),
                crosses: true,
                position: b.position_m,
                velocity: b.velocity_m_s,
                shape: PropShape::Sphere(b.radius_m),
                mass_kg: b.mass_kg,
            })
            .chain(weights.iter().map(|w| DueProp {
                step: steps_for(w.spawn_time_s, dt_s),
                id: BodyId(w.id),
                crosses: false,
                position: w.position_m,
                velocity: w.velocity_m_s,
                shape: match w.shape {
                    WeightShape::Sphere { radius_m } => PropShape::Sphere(radius_m),
                    WeightShape::Box { half_extents_m } => PropShape::Box(half_extents_m),
                },
                mass_kg: w.mass_kg,
            }))
            .collect();
        due.sort_by_key(|p| p.step); // stable: file order within a step
        Self {
            due: due.into(),
            live: Vec::with_capacity(balls.len() + weights.len()),
            material,
            z_before: Vec::with_capacity(balls.len() + weights.len()),
        }
    }

    /// Puts every prop due at or before `step` into `world`.
    pub(crate) fn spawn_due(&mut self, world: &mut PhysicsWorld, step: u64) {
        while self.due.front().is_some_and(|p| p.step <= step) {
            let Some(p) = self.due.pop_front() else {
                break;
            };
            let mut collider = match p.shape {
                PropShape::Sphere(r) => ColliderBuilder::ball(r as Real),
                PropShape::Box(h) => {
                    ColliderBuilder::cuboid(h[0] as Real, h[1] as Real, h[2] as Real)
                }
            }
            .mass(p.mass_kg as Real);
            if let Some(f) = self.material.friction {
                collider = collider.friction(f);
            }
            if let Some(rule) = self.material.friction_combine_rule {
                collider = collider.friction_combine_rule(rule);
            }
            if let Some(groups) = self.material.groups {
                collider = collider.collision_groups(groups);
            }
            let body = RigidBodyBuilder::dynamic()
                .translation(v3(p.position))
                .linvel(v3(p.velocity))
                .ccd_enabled(true);
            let (body, collider) = world.insert(body, collider);
            self.live.push(LiveProp {
                id: p.id,
                crosses: p.crosses,
                body,
                collider,
                crossed_at: None,
                touching: false,
            });
        }
    }

    /// After a step: each prop's touch of the robot (a collider for which `is_robot` holds),
    /// with `changed(id, touching)` called, in spawn order, for each prop that began or ended
    /// touching it.
    pub(crate) fn read_touches(
        &mut self,
        world: &PhysicsWorld,
        is_robot: impl Fn(ColliderHandle) -> bool,
        mut changed: impl FnMut(BodyId, bool),
    ) {
        for prop in &mut self.live {
            let c = prop.collider;
            let now = world.narrow_phase.contact_pairs_with(c).any(|pair| {
                let other = if pair.collider1 == c {
                    pair.collider2
                } else {
                    pair.collider1
                };
                is_robot(other)
                    && pair.has_any_active_contact()
                    && pair.total_impulse_magnitude() > 0.0
            });
            if now != prop.touching {
                prop.touching = now;
                changed(prop.id, now);
            }
        }
    }

    /// Before a step: notes each prop's centre's z (0 for a body Rapier no longer has), which
    /// [`Self::read_crossings`] compares with after it. No allocation: the record holds every
    /// prop of the scene.
    pub(crate) fn note_heights(&mut self, world: &PhysicsWorld) {
        self.z_before.clear();
        self.z_before.extend(
            self.live
                .iter()
                .map(|p| world.bodies.get(p.body).map_or(0.0, |b| b.translation().z)),
        );
    }

    /// After step `step`: `crossed(id)` for each ball whose centre went from z < 0 (before the
    /// step, [`Self::note_heights`]) to z ≥ 0, once per ball.
    pub(crate) fn read_crossings(
        &mut self,
        world: &PhysicsWorld,
        step: u64,
        mut crossed: impl FnMut(BodyId),
    ) {
        for (prop, &z0) in self.live.iter_mut().zip(&self.z_before) {
            if !prop.crosses || prop.crossed_at.is_some() {
                continue;
            }
            let z1 = world
                .bodies
                .get(prop.body)
                .map_or(z0, |b| b.translation().z);
            if z0 < 0.0 && z1 >= 0.0 {
                prop.crossed_at = Some(step);
                crossed(prop.id);
            }
        }
    }

    /// After step `step`: removes from `world` every prop whose centre is below y =
    /// `below_y_m`, and every ball `linger_steps` or more after its crossing.
    pub(crate) fn remove_finished(
        &mut self,
        world: &mut PhysicsWorld,
        step: u64,
        linger_steps: u64,
        below_y_m: f64,
    ) {
        let mut i = 0;
        while let Some(prop) = self.live.get(i).copied() {
            let y = world
                .bodies
                .get(prop.body)
                .map_or(f64::NEG_INFINITY, |b| f64::from(b.translation().y));
            let expired = prop.crossed_at.is_some_and(|s| step >= s + linger_steps);
            if y < below_y_m || expired {
                world.remove_body(prop.body);
                self.live.remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// Props in the world now.
    pub(crate) fn live(&self) -> usize {
        self.live.len()
    }

    /// Centre of prop `id` now, world frame, m; `None` when it is not in the world.
    pub(crate) fn position_m(&self, world: &PhysicsWorld, id: BodyId) -> Option<[f64; 3]> {
        let prop = self.live.iter().find(|p| p.id == id)?;
        Some(to_f64(world.bodies.get(prop.body)?.translation()))
    }
}

/// Events a plant holds for later frames beyond this many are dropped (and counted).
pub(crate) const MAX_PENDING_EVENTS: usize = 256;

/// Queues `event` for the next frames; beyond [`MAX_PENDING_EVENTS`] waiting it is counted in
/// `left_out` instead.
pub(crate) fn queue_event(pending: &mut VecDeque<Event>, left_out: &mut u64, event: Event) {
    if pending.len() < MAX_PENDING_EVENTS {
        pending.push_back(event);
    } else {
        *left_out += 1;
    }
}

/// Queues `body`'s contact beginning (`began`) or ending ([`queue_event`]).
pub(crate) fn queue_contact(
    pending: &mut VecDeque<Event>,
    left_out: &mut u64,
    body: BodyId,
    began: bool,
) {
    let event = if began {
        Event::ContactBegan { body }
    } else {
        Event::ContactEnded { body }
    };
    queue_event(pending, left_out, event);
}

/// A rigid body's world motion as a state frame carries it (centre of mass, orientation
/// `[w, x, y, z]`, velocity, angular velocity), widened to f64.
pub(crate) fn body_motion(rb: &RigidBody) -> BodyMotion {
    let c = rb.center_of_mass();
    let r = rb.rotation();
    let v = rb.linvel();
    let w = rb.angvel();
    BodyMotion {
        com_m: [c.x, c.y, c.z].map(f64::from),
        orientation: [r.w, r.x, r.y, r.z].map(f64::from),
        velocity_m_s: [v.x, v.y, v.z].map(f64::from),
        angular_velocity_rad_s: [w.x, w.y, w.z].map(f64::from),
    }
}

/// How many of the bodies `handles` Rapier has quarantined (non-finite state, rolled back and
/// disabled) so far: 0 in a healthy run.
pub(crate) fn quarantined(world: &PhysicsWorld, handles: &[RigidBodyHandle]) -> usize {
    handles
        .iter()
        .filter(|h| world.quarantine().bodies().contains(h))
        .count()
}

fn v3(a: [f64; 3]) -> Vector {
    Vector::new(a[0] as Real, a[1] as Real, a[2] as Real)
}

fn to_f64(v: Vector) -> [f64; 3] {
    [f64::from(v.x), f64::from(v.y), f64::from(v.z)]
}

/// The impulse the contacts of `pair` applied to its first collider's body during the step just
/// taken, world frame, N·s: over the manifolds the solver saw and their solver contacts, the
/// normal impulse λ along −n (n, the manifold normal, points from the first collider to the
/// second) plus the friction impulses (t₁, t₂) along the solver's tangent basis, which Rapier
/// 0.36 derives from −n alone: t₁ = (−n).orthonormal_vector(), t₂ = (−n) × t₁. λ and (t₁, t₂) are
/// each the sum over the step's substeps (`ContactData::impulse`, `tangent_impulse`, written back
/// by the solver after the last substep). The second collider's body got the opposite.
pub(crate) fn impulse_on_first(pair: &ContactPair) -> Vector {
    let mut total = Vector::ZERO;
    for m in pair.solver_manifolds() {
        for_each_point_impulse(m, |impulse, _, _| total += impulse);
    }
    total
}

/// Calls `f` for each solver contact of manifold `m` with the impulse the solver applied on the
/// manifold's first collider there (world frame, as [`impulse_on_first`] sums them) and the
/// point in the first and in the second collider's own frame.
pub(crate) fn for_each_point_impulse(
    m: &ContactManifold,
    mut f: impl FnMut(Vector, Vector, Vector),
) {
    let dir1 = -m.data.normal;
    let t1 = dir1.orthonormal_vector();
    let t2 = dir1.cross(t1);
    for sc in &m.data.solver_contacts {
        let [index] = sc.contact_indices();
        if let Some(pt) = usize::try_from(index).ok().and_then(|i| m.points.get(i)) {
            let d = &pt.data;
            f(
                dir1 * d.impulse + t1 * d.tangent_impulse.x + t2 * d.tangent_impulse.y,
                pt.local_p1,
                pt.local_p2,
            );
        }
    }
}

/// Sums, over every contact between a collider of `environment` and a body that `body_id`
/// numbers, the impulses the solver applied in the step just taken ([`impulse_on_first`]), as
/// forces on that body (impulse / `dt_s`, N, world frame; a zero sum is no contact), and writes
/// them to `contacts` in id order: at most [`MAX_CONTACTS`], each body beyond counted in
/// `left_out`. `sums` is the scratch the sums are made in.
pub(crate) fn collect_contact_forces(
    world: &PhysicsWorld,
    environment: &[ColliderHandle],
    dt_s: f64,
    body_id: impl Fn(RigidBodyHandle) -> Option<u16>,
    sums: &mut Vec<(u16, [f64; 3])>,
    contacts: &mut heapless::Vec<ContactForce, MAX_CONTACTS>,
    left_out: &mut u64,
) {
    sums.clear();
    for &env in environment {
        for pair in world.narrow_phase.contact_pairs_with(env) {
            let (other, body_is_first) = if pair.collider1 == env {
                (pair.collider2, false)
            } else {
                (pair.collider1, true)
            };
            let Some(id) = world
                .colliders
                .get(other)
                .and_then(|c| c.parent())
                .and_then(&body_id)
            else {
                continue;
            };
            let on_first = impulse_on_first(pair);
            let sign = if body_is_first { 1.0 } else { -1.0 };
            let f = to_f64(on_first).map(|x| sign * x / dt_s);
            if f.iter().all(|&x| x == 0.0) {
                continue;
            }
            match sums.iter_mut().find(|(i, _)| *i == id) {
                Some((_, sum)) => {
                    for (s, x) in sum.iter_mut().zip(f) {
                        *s += x;
                    }
                }
                None => sums.push((id, f)),
            }
        }
    }
    sums.sort_by_key(|&(id, _)| id);
    contacts.clear();
    for &(id, force_n) in sums.iter() {
        if contacts
            .push(ContactForce {
                body: BodyId(id),
                point: 0,
                force_n,
            })
            .is_err()
        {
            *left_out = left_out.saturating_add(1);
        }
    }
}
