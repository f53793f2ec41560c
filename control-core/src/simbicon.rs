//! SIMBICON's basic planar walk (Yin, Loken and van de Panne, SIGGRAPH 2007) as a per-tick
//! controller for a 7-link planar biped (torso, two thighs, two shins, two feet): the four-state
//! machine, the swing hip tracked in the world frame with balance feedback, the torso's virtual
//! PD realised through the stance hip, PD on the other joints, and a torque limit; with either
//! SIMBICON's fixed gains or those gains made stable for the control period ([`Gains::Analytic`]).
//!
//! Must never allocate, block or panic, whatever the input: the configuration is validated when
//! the controller is built ([`SimbiconError::Config`], [`SimbiconError::GainLimit`]); a tick
//! refuses a NaN or infinite input ([`SimbiconError::NonFinite`]) and time going backwards
//! ([`SimbiconError::TimeWentBack`]) without touching the state machine, and never returns a
//! torque that is not finite or beyond the limit: a torque the limit cut is flagged in
//! [`WalkCommand::limited`] and counted ([`Simbicon::limited_total`]), never silently. On an
//! error the command of the previous tick is void: the caller applies zero torque (a limp
//! walker) or its own safe output.
//!
//! ```
//! use control_core::simbicon::{Gains, Simbicon, SimbiconConfig, WalkerState};
//! let mut walker = Simbicon::new(SimbiconConfig {
//!     gains: Gains::analytic(1.0 / 200.0),
//!     ..SimbiconConfig::default()
//! })?;
//! let standing = WalkerState { foot_contact: [true, true], ..WalkerState::default() };
//! let command = walker.tick(&standing)?;
//! assert_eq!(command.state, 0);
//! assert!(command.torques_nm.iter().all(|t| t.abs() <= 1000.0));
//! # Ok::<(), control_core::simbicon::SimbiconError>(())
//! ```
//!
//! # Conventions
//! - The walker moves in the x–y plane, **y up, walking towards +x**. Every angle and angular
//!   velocity is about **+z, counter-clockwise positive** (right-hand rule; with x forward and
//!   y up, a positive pitch turns a link's lower end forward, towards +x).
//! - A **pitch** is a link's world angle, 0 for the torso upright and for a leg link hanging
//!   straight down (a foot flat, toes towards +x).
//! - A **joint angle** is child pitch − parent pitch: hip = thigh − torso, knee = shin − thigh,
//!   ankle = foot − shin. So a positive hip angle swings the thigh forward, a negative knee angle
//!   bends the knee (the shin's lower end goes back), a positive ankle angle lifts the toes.
//! - Joints are ordered **left hip, left knee, left ankle, right hip, right knee, right ankle**
//!   ([`LEFT_HIP`] … [`RIGHT_ANKLE`]); per-foot and per-thigh pairs are **[left, right]**.
//! - A **joint torque** τ acts +τ on the child link and −τ on the parent (about +z), so a
//!   positive τ drives the joint angle up. The plant applies it so and resets it every step.
//! - d = x_COM − x_stance ankle (m, positive when the centre of mass is ahead of the stance
//!   ankle) and v = the COM's x velocity (m/s); the plant reports
//!   [`WalkerState::com_ahead_of_ankle_m`] for both feet, since only the controller knows which
//!   foot is the stance foot.
//!
//! # The mapping to SIMBICON's sources, checked
//! The 2D applet (JSimbicon `Bip7.java`, `Simbicon.java`, `Controller.java`, "REF: Table 1") draws
//! each link with `getRotationMatrix(θ) = [cos −sin; sin cos]` (counter-clockwise, y up; the
//! screen's y flip is only in drawing), composes each joint's rotation after its parent's
//! (hip = thigh relative to the torso), hangs the legs along −y and points the feet at +x: the
//! conventions above, with **no sign or zero change**. The targets of the table are therefore
//! used as printed (swing hip 0.40 is the thigh 0.40 rad forward of vertical; knee −1.10 is a
//! bent knee). Its `wPDtorq` adds the torso's tilt to the hip angle for the swing hip (`worldFrame`),
//! i.e. it tracks the thigh's pitch, which the plant gives here directly; its torso PD is
//! `kp(0 − tilt) − kd·ω`; its stance hip is `−torq[body] − torq[swingHip]`; its balance feedback
//! is `th + Md·thd + Mdd·thdd` with `Md = x_root − x_stance heel`, `Mdd = v − DesVel`
//! (`DesVel = 0`). The nslo/2dsimbicon port (ODE) uses the same numbers with d measured from the
//! stance ankle, as here.
//!
//! Where this controller chooses between the sources, or departs from them:
//! - Transitions are checked **before** the torques (as nslo): a tick that ends a state already
//!   commands the next state's targets (JSimbicon advances after, one tick later; at 200 Hz that
//!   tick is 5 ms). A timed state ends when its elapsed time reaches the duration (≥, less
//!   [`TIMED_PHASE_SLACK_S`] = 1 ns for the rounding of tick times); a contact
//!   state ends on the first tick the swing foot's contact is reported, with no minimum time.
//! - The swing hip's target is bounded to [`SimbiconConfig::swing_hip_target_range_rad`]
//!   (JSimbicon's `targetLimit` for the hips, [−0.4, 1.6] rad; nslo has none; `None` turns it
//!   off); a bounded target is flagged in [`WalkCommand::swing_hip_target_bounded`].
//! - The stance hip is composed from the swing hip's torque **after** the limit:
//!   τ_stance hip = −τ_torso − τ_swing hip (limited). The hips then exert on the torso exactly
//!   −τ_stance hip − τ_swing hip = τ_torso whenever the stance hip is itself within the limit
//!   (JSimbicon composes before limiting, so a limited swing hip would leave the torso a torque
//!   other than τ_torso). With a 1000 N·m limit and kp 300 the two differ only when the swing hip
//!   is more than 3 rad from its target.
//! - JSimbicon's `jointLimit` result is discarded there (it has no effect), so joint limits are
//!   not applied here either; the plant's joint limits, if any, are its own.
//! - The first stance foot is configurable ([`SimbiconConfig::first_stance`]; JSimbicon starts
//!   on the left foot, nslo on the right).
//!
//! # The state machine
//! | state | stance | ends | targets |
//! |---|---|---|---|
//! | 0 | first stance foot | after [`SimbiconConfig::timed_phase_s`] (0.3 s) | `targets[0]` |
//! | 1 | first stance foot | at the swing foot's contact | `targets[1]` |
//! | 2 | the other foot | after the timed phase | `targets[0]`, legs mirrored |
//! | 3 | the other foot | at the swing foot's contact | `targets[1]`, legs mirrored |
//!
//! and 3 is followed by 0. Each tick, with σ the stance side and ω the swing side:
//! - swing hip target θd = θd0 + c_d·d + c_v·v, bounded to the range;
//!   τ_swing hip = k(θd − pitch_thigh,ω) − γ·rate_thigh,ω (the world frame);
//! - τ_torso = k_t(θ_torso,d − pitch_torso) − γ_t·rate_torso (virtual: never applied itself);
//! - τ_stance hip = −τ_torso − τ_swing hip;
//! - swing knee, swing ankle, stance knee, stance ankle: τ = k(θd − θ) − γ·θ̇ on the joint angle;
//! - every torque limited to ±[`SimbiconConfig::torque_limit_nm`].
//!
//! # Gains
//! - [`Gains::Fixed`]: SIMBICON's kp and kd on every joint and the torso ([`Gains::SIMBICON`]:
//!   300 N·m/rad and 30 N·m·s/rad).
//! - [`Gains::Analytic`]: SIMBICON's pair (kp 300, kd 30 by default) is the design intent for
//!   every role r (torso, whose gains the stance hip's composition uses, swing hip, swing knee,
//!   swing ankle, stance knee, stance ankle), and the control period's stability analysis
//!   chooses the gains actually used, for the effective inertia m_r the role moves
//!   ([`RoleInertias`], the caller's: e.g. the composite inertia of the subtree the joint
//!   turns). The gains are solved once, when the controller is built ([`Simbicon::gains`]).
//! - [`Gains::PerRole`]: each role's own kp and kd ([`RoleGains`]), used as given: no stability
//!   rule moves them (every [`PdGains::clamped`] is false), e.g. gains searched per control rate
//!   offline (the `hil study cmaes` tool, Carensac et al. 2017's per-frequency optimisation).
//!   Each role's kp must be finite and > 0 and its kd finite and ≥ 0; a role that is not is
//!   refused by name ([`ConfigField::RoleStiffness`], [`ConfigField::RoleDamping`]).
//!
//! ## The rule and its derivation
//! A PD pair (k, γ) sampled every h on inertia m and integrated by semi-implicit Euler
//! (`v += h·a; x += h·v`, Rapier) is the loop x_{n+1} = Φ x_n with, for α = h²k/m and β = hγ/m,
//! tr Φ = 2 − α − β and det Φ = 1 − β (crate::gains, "Stability of the sampled loop"). Its
//! characteristic polynomial P(λ) = λ² − (2 − α − β)λ + (1 − β) has both roots inside the
//! unit circle exactly when (Jury) P(1) = α > 0, P(−1) = 4 − α − 2β > 0 and |1 − β| < 1; with
//! α > 0 the second implies β < 2, so the stable pairs are the triangle
//! **α > 0, β > 0, α + 2β < 4** ([`Integrator::is_stable`], for every integrator). The
//! critically damped [`crate::gains::GainLimit`] is the curve α = β²/4 through it (β < 1.657),
//! so it cannot judge SIMBICON's pairs, which are far from critical on light links (ζ = 7.9 on
//! a foot, 0.37 on the torso).
//!
//! Written with the natural frequency ω = √(k/m) and the damping ratio ζ = γ/(2√(km)), a pair
//! is s = ωh along a ray α = s², β = 2ζs, and the triangle's edge P(−1) = 0 is
//! s² + 4ζs = 4, i.e. **s\*(ζ) = 2/(ζ + √(1 + ζ²))** ([`Integrator::max_normalized_frequency`];
//! at ζ = 1 it is GainLimit's β_max/2). So, per role:
//! 1. if (kp, kd) is a stable loop for (m_r, h) (s < s\*(ζ)), it is used unchanged;
//! 2. otherwise the pair keeps its damping ratio ζ (the design's shape of response) and its
//!    natural frequency is lowered to μ·s\*(ζ)/h, μ the [`Gains::Analytic`] `stability_margin`
//!    (default 0.5: the moved loop would still be stable at twice the period):
//!    k = m(μs\*/h)², γ = 2ζm(μs\*/h), flagged [`PdGains::clamped`].
//!
//! Nothing is tuned per rate: the design pair, the inertias and μ are the same at every
//! period, and the period only decides which roles are moved and where to. A role whose design
//! is stable keeps it at every rate down to its edge, so at 2 kHz the analytic gains are
//! SIMBICON's for all six roles. The rule is deliberately not continuous at the edge: a design
//! just inside it is kept as given (the designer's choice), while a design just outside it is
//! moved to μ of the edge, not to the edge; a controller that wants a margin on its own design
//! should give a softer design.
//!
//! For the issue's model ([`RoleInertias::SIMBICON_BIPED`]) the design 300/30 is stable on
//! the torso (ζ 0.37), hips (0.49) and knees (1.22) down to 5.3, 7.9 and 34 Hz, and on an
//! ankle (0.012 kg·m², the swing foot and the stance foot until it is loaded: ζ 7.9,
//! s\* = 0.126) only above 1255 Hz. So below that only the two ankles move: to k 47.6, γ 11.95
//! at 1 kHz, k 4.29, γ 3.59 at 300 Hz and k 1.90, γ 2.39 at 200 Hz (tested). The critically
//! damped rule this replaced (γ = min(2√(kp·m), μγ_max), k = γ²/(4m)) gave the swing hip
//! γ 61 instead of 30, swung the leg too slowly and fell at about 1 s at every rate; it was
//! removed. Measured walks: `sim-host/examples/walk.rs`.
//!
//! # Costs (measured)
//! `cargo bench -p control-core --bench simbicon -- --warm-up-time 1 --measurement-time 3`,
//! x86-64 baseline build, on a shared 2-core machine under other jobs: [`Simbicon::tick`]
//! (validation, state machine, six torques, limits) 37.5 ns with the fixed gains and 35.8 ns with
//! the analytic ones (criterion's estimate, one run each, load average 2.5): the same work, the
//! analytic gains being solved once in [`Simbicon::new`].

use core::fmt;

use crate::gains::{GainError, Integrator};

/// A timed state ends once its elapsed time is within this of its duration, s: tick times such
/// as 10.4 + 60·(1/200) round to just below the 0.3 s they add up to, and should not cost a tick.
pub const TIMED_PHASE_SLACK_S: f64 = 1e-9;

/// Number of actuated joints: hip, knee and ankle of each leg.
pub const JOINTS: usize = 6;

/// The largest damping of the safe state ([`Simbicon::safe_damping`]), N·m·s/rad (SIMBICON's
/// own kd).
pub const SAFE_MAX_DAMPING_NMS_PER_RAD: f64 = 30.0;
/// Index of the left hip in the joint arrays.
pub const LEFT_HIP: usize = 0;
/// Index of the left knee.
pub const LEFT_KNEE: usize = 1;
/// Index of the left ankle.
pub const LEFT_ANKLE: usize = 2;
/// Index of the right hip.
pub const RIGHT_HIP: usize = 3;
/// Index of the right knee.
pub const RIGHT_KNEE: usize = 4;
/// Index of the right ankle.
pub const RIGHT_ANKLE: usize = 5;

/// A side of the walker; the index of per-side pairs (`[left, right]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Side {
    /// The left leg (index 0 of pairs; joints 0–2).
    #[default]
    Left,
    /// The right leg (index 1 of pairs; joints 3–5).
    Right,
}

impl Side {
    /// The other side.
    pub const fn other(self) -> Self {
        match self {
            Self::Left => Self::Right,
            Self::Right => Self::Left,
        }
    }

    /// This side's index in a `[left, right]` pair: 0 or 1.
    pub const fn index(self) -> usize {
        match self {
            Self::Left => 0,
            Self::Right => 1,
        }
    }

    /// This side's hip, knee and ankle indices in the joint arrays.
    pub const fn joints(self) -> [usize; 3] {
        match self {
            Self::Left => [LEFT_HIP, LEFT_KNEE, LEFT_ANKLE],
            Self::Right => [RIGHT_HIP, RIGHT_KNEE, RIGHT_ANKLE],
        }
    }
}

/// This side's element of a `[left, right]` pair.
const fn pick<T: Copy>(pair: [T; 2], side: Side) -> T {
    let [left, right] = pair;
    match side {
        Side::Left => left,
        Side::Right => right,
    }
}

/// This side's hip, knee and ankle of a joint array.
const fn leg<T: Copy>(joints: [T; JOINTS], side: Side) -> [T; 3] {
    let [lh, lk, la, rh, rk, ra] = joints;
    match side {
        Side::Left => [lh, lk, la],
        Side::Right => [rh, rk, ra],
    }
}

/// A joint array from the stance and the swing leg's hip, knee and ankle.
const fn joints_of<T: Copy>(stance: Side, stance_leg: [T; 3], swing_leg: [T; 3]) -> [T; JOINTS] {
    let ([lh, lk, la], [rh, rk, ra]) = match stance {
        Side::Left => (stance_leg, swing_leg),
        Side::Right => (swing_leg, stance_leg),
    };
    [lh, lk, la, rh, rk, ra]
}

/// What the walker's plant reports every tick (see the module's conventions).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct WalkerState {
    /// Time of the sample, s (never decreasing).
    pub time_s: f64,
    /// The torso's world pitch, rad (0 upright).
    pub torso_pitch_rad: f64,
    /// The torso's world angular velocity about +z, rad/s.
    pub torso_rate_rad_s: f64,
    /// Joint angles (child pitch − parent pitch), rad: left hip, knee, ankle, right hip, knee,
    /// ankle.
    pub joint_angle_rad: [f64; JOINTS],
    /// Joint rates (child − parent angular velocity), rad/s, in the same order.
    pub joint_rate_rad_s: [f64; JOINTS],
    /// Each thigh's world pitch, rad, [left, right] (0 hanging straight down).
    pub thigh_pitch_rad: [f64; 2],
    /// Each thigh's world angular velocity, rad/s, [left, right].
    pub thigh_rate_rad_s: [f64; 2],
    /// x_COM − x_ankle for each foot, m, [left, right]: positive when the whole walker's centre
    /// of mass is ahead of (at larger x than) that ankle. The stance foot's is SIMBICON's d.
    pub com_ahead_of_ankle_m: [f64; 2],
    /// The centre of mass's horizontal (x) velocity, m/s: SIMBICON's v.
    pub com_velocity_m_s: f64,
    /// Whether each foot touches the ground, [left, right].
    pub foot_contact: [bool; 2],
}

/// The targets and balance-feedback gains of one state (states 2 and 3 use those of 0 and 1 with
/// the legs mirrored).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhaseTargets {
    /// c_d, rad/m: swing hip target per metre of d.
    pub cd_rad_per_m: f64,
    /// c_v, rad·s/m: swing hip target per m/s of v.
    pub cv_rad_s_per_m: f64,
    /// The torso's target world pitch, rad.
    pub torso_pitch_rad: f64,
    /// θd0 of the swing hip: the swing thigh's target world pitch before feedback, rad.
    pub swing_hip_rad: f64,
    /// The swing knee's target joint angle, rad.
    pub swing_knee_rad: f64,
    /// The swing ankle's target joint angle, rad.
    pub swing_ankle_rad: f64,
    /// The stance knee's target joint angle, rad.
    pub stance_knee_rad: f64,
    /// The stance ankle's target joint angle, rad.
    pub stance_ankle_rad: f64,
}

/// SIMBICON's basic walk (JSimbicon `addWalkingController`, "Table 1"): states 0 and 1.
pub const BASIC_WALK: [PhaseTargets; 2] = [
    PhaseTargets {
        cd_rad_per_m: 0.0,
        cv_rad_s_per_m: 0.2,
        torso_pitch_rad: 0.0,
        swing_hip_rad: 0.40,
        swing_knee_rad: -1.10,
        swing_ankle_rad: 0.20,
        stance_knee_rad: -0.05,
        stance_ankle_rad: 0.20,
    },
    PhaseTargets {
        cd_rad_per_m: 2.2,
        cv_rad_s_per_m: 0.0,
        torso_pitch_rad: 0.0,
        swing_hip_rad: -0.70,
        swing_knee_rad: -0.05,
        swing_ankle_rad: 0.20,
        stance_knee_rad: -0.10,
        stance_ankle_rad: 0.20,
    },
];

/// A role of a joint in the walk, for gains and errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Role {
    /// The torso's virtual PD (and so the stance hip's composition).
    Torso,
    /// The swing hip (world frame).
    SwingHip,
    /// The swing knee.
    SwingKnee,
    /// The swing ankle.
    SwingAnkle,
    /// The stance knee.
    StanceKnee,
    /// The stance ankle.
    StanceAnkle,
}

/// The effective inertia each role moves, kg·m² (the caller's model; all > 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoleInertias {
    /// The torso about the hip axis (the torso PD and the stance hip).
    pub torso_kgm2: f64,
    /// What the swing hip turns: the swing leg about the hip.
    pub swing_hip_kgm2: f64,
    /// What the swing knee turns: shin and foot about the knee.
    pub swing_knee_kgm2: f64,
    /// What the swing ankle turns: the foot about the ankle.
    pub swing_ankle_kgm2: f64,
    /// What the stance knee turns, about the knee: everything above it while the stance foot is
    /// planted, but only shin and foot while it is not (give the smaller: see
    /// [`Self::SIMBICON_BIPED`]).
    pub stance_knee_kgm2: f64,
    /// What the stance ankle turns, about the ankle: everything above it while the stance foot
    /// is planted, but only the foot while it is not (give the smaller).
    pub stance_ankle_kgm2: f64,
}

impl RoleInertias {
    /// The issue's 7-link SIMBICON model (torso 70 kg, 1.475 kg·m², COM 0.24 m above the hip;
    /// thighs 5 kg, 0.0885, 0.45 m; shins 4 kg, 0.0696, 0.45 m; feet 1 kg, 0.01, COM 0.04 m
    /// ahead of and 0.02 m below the ankle, as JSimbicon's `Bip7`) standing straight, both legs
    /// vertical, by the parallel-axis theorem: the torso about the hip 5.507; the swing leg about
    /// the hip 3.092, shin and foot about the knee 0.505, the foot about the ankle 0.012.
    /// The stance knee and ankle are given the swing leg's: shin and foot about the knee
    /// (0.505), the foot about the ankle (0.012). Planted, the stance knee turns the torso, its
    /// thigh and the swing leg (35.99) and the stance ankle everything above the foot (97.74),
    /// but the stance foot is not planted for the whole stance: the state machine makes a foot
    /// the stance foot at its first touch (heel or toe), the timed state starts before it is
    /// loaded, and at the push-off it lifts again. A damping chosen for 97.74 kg·m² (342
    /// N·m·s/rad) on a free 0.012 kg·m² foot is a sampled loop with β = hγ/m = 14 even at 2 kHz:
    /// it chattered at the torque limit and the walker fell within 0.7 s at every rate
    /// (`sim-host/tests/biped_walk.rs`). The smaller inertia keeps the loop stable in either
    /// case (a planted joint, with more inertia, is only further inside the bound). Nominal:
    /// the real ones change with the pose.
    pub const SIMBICON_BIPED: Self = Self {
        torso_kgm2: 5.507,
        swing_hip_kgm2: 3.0917,
        swing_knee_kgm2: 0.5046,
        swing_ankle_kgm2: 0.012,
        stance_knee_kgm2: 0.5046,
        stance_ankle_kgm2: 0.012,
    };

    fn of(&self, role: Role) -> f64 {
        match role {
            Role::Torso => self.torso_kgm2,
            Role::SwingHip => self.swing_hip_kgm2,
            Role::SwingKnee => self.swing_knee_kgm2,
            Role::SwingAnkle => self.swing_ankle_kgm2,
            Role::StanceKnee => self.stance_knee_kgm2,
            Role::StanceAnkle => self.stance_ankle_kgm2,
        }
    }
}

/// How the PD gains are chosen (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Gains {
    /// The same kp and kd on every joint and the torso (SIMBICON's: [`Gains::SIMBICON`]).
    Fixed {
        /// kp, N·m/rad (> 0).
        stiffness_nm_per_rad: f64,
        /// kd, N·m·s/rad (≥ 0).
        damping_nms_per_rad: f64,
    },
    /// A design pair (kp, kd) for every role, kept wherever it is a stable sampled loop for
    /// the control period and the inertia the role moves, and otherwise moved into the stable
    /// region at the same damping ratio (see the module docs).
    Analytic {
        /// The control period h, s (> 0).
        period_s: f64,
        /// Where a design pair is unstable, the fraction μ of the stable edge its natural
        /// frequency is moved to, in (0, 1).
        stability_margin: f64,
        /// How the plant integrates between control samples (Rapier: semi-implicit Euler).
        integrator: Integrator,
        /// The design stiffness kp, N·m/rad (> 0).
        design_stiffness_nm_per_rad: f64,
        /// The design damping kd, N·m·s/rad (> 0).
        design_damping_nms_per_rad: f64,
        /// The inertia each role moves.
        inertias: RoleInertias,
    },
    /// Each role's own kp and kd, used as given (see the module docs): every role's stiffness
    /// finite and > 0, its damping finite and ≥ 0. The `clamped` flags given are ignored (the
    /// resolved gains say false: nothing moved them).
    PerRole(RoleGains),
}

impl Gains {
    /// SIMBICON's gains: kp 300 N·m/rad, kd 30 N·m·s/rad on every joint and the torso.
    pub const SIMBICON: Self = Self::Fixed {
        stiffness_nm_per_rad: 300.0,
        damping_nms_per_rad: 30.0,
    };

    /// Analytic gains for control period `period_s`: SIMBICON's 300/30 as the design pair,
    /// margin 0.5, semi-implicit Euler (Rapier), [`RoleInertias::SIMBICON_BIPED`].
    pub const fn analytic(period_s: f64) -> Self {
        Self::Analytic {
            period_s,
            stability_margin: 0.5,
            integrator: Integrator::SemiImplicitEuler,
            design_stiffness_nm_per_rad: 300.0,
            design_damping_nms_per_rad: 30.0,
            inertias: RoleInertias::SIMBICON_BIPED,
        }
    }

    /// The gains of every role. Errors name the field or the role whose limit failed.
    pub fn resolve(&self) -> Result<RoleGains, SimbiconError> {
        match *self {
            Self::Fixed {
                stiffness_nm_per_rad: k,
                damping_nms_per_rad: d,
            } => {
                if !(k.is_finite() && k > 0.0) {
                    return Err(SimbiconError::Config(ConfigField::Stiffness));
                }
                if !(d.is_finite() && d >= 0.0) {
                    return Err(SimbiconError::Config(ConfigField::Damping));
                }
                let g = PdGains {
                    stiffness_nm_per_rad: k,
                    damping_nms_per_rad: d,
                    clamped: false,
                };
                Ok(RoleGains {
                    torso: g,
                    swing_hip: g,
                    swing_knee: g,
                    swing_ankle: g,
                    stance_knee: g,
                    stance_ankle: g,
                })
            }
            Self::Analytic {
                period_s,
                stability_margin,
                integrator,
                design_stiffness_nm_per_rad: kp,
                design_damping_nms_per_rad: kd,
                inertias,
            } => {
                if !(period_s.is_finite() && period_s > 0.0) {
                    return Err(SimbiconError::Config(ConfigField::Period));
                }
                if !(stability_margin > 0.0 && stability_margin < 1.0) {
                    return Err(SimbiconError::Config(ConfigField::Margin));
                }
                if !(kp.is_finite() && kp > 0.0) {
                    return Err(SimbiconError::Config(ConfigField::DesignStiffness));
                }
                if !(kd.is_finite() && kd > 0.0) {
                    return Err(SimbiconError::Config(ConfigField::DesignDamping));
                }
                let role = |role: Role| {
                    let m = inertias.of(role);
                    if !(m.is_finite() && m > 0.0) {
                        return Err(SimbiconError::Config(ConfigField::Inertia(role)));
                    }
                    stable_pair(kp, kd, m, period_s, integrator, stability_margin).ok_or(
                        SimbiconError::GainLimit {
                            role,
                            error: GainError::OutOfRange,
                        },
                    )
                };
                Ok(RoleGains {
                    torso: role(Role::Torso)?,
                    swing_hip: role(Role::SwingHip)?,
                    swing_knee: role(Role::SwingKnee)?,
                    swing_ankle: role(Role::SwingAnkle)?,
                    stance_knee: role(Role::StanceKnee)?,
                    stance_ankle: role(Role::StanceAnkle)?,
                })
            }
            Self::PerRole(given) => {
                let role = |role: Role| {
                    let g = given.of(role);
                    let (k, d) = (g.stiffness_nm_per_rad, g.damping_nms_per_rad);
                    if !(k.is_finite() && k > 0.0) {
                        return Err(SimbiconError::Config(ConfigField::RoleStiffness(role)));
                    }
                    if !(d.is_finite() && d >= 0.0) {
                        return Err(SimbiconError::Config(ConfigField::RoleDamping(role)));
                    }
                    Ok(PdGains {
                        stiffness_nm_per_rad: k,
                        damping_nms_per_rad: d,
                        clamped: false,
                    })
                };
                Ok(RoleGains {
                    torso: role(Role::Torso)?,
                    swing_hip: role(Role::SwingHip)?,
                    swing_knee: role(Role::SwingKnee)?,
                    swing_ankle: role(Role::SwingAnkle)?,
                    stance_knee: role(Role::StanceKnee)?,
                    stance_ankle: role(Role::StanceAnkle)?,
                })
            }
        }
    }
}

/// The design pair (k, γ) on inertia m if it is a stable sampled loop for period h and
/// `integrator`; otherwise the pair of the same damping ratio ζ = γ/(2√(km)) whose normalised
/// natural frequency h√(k/m) is `margin` times the stable edge s*(ζ)
/// ([`Integrator::max_normalized_frequency`]). `None` when the moved pair is not finite, not
/// positive or (by rounding) not stable: the caller reports it as out of range.
fn stable_pair(
    k: f64,
    gamma: f64,
    m: f64,
    h: f64,
    integrator: Integrator,
    margin: f64,
) -> Option<PdGains> {
    let h_over_m = h / m;
    let (alpha, beta) = (h_over_m * h * k, h_over_m * gamma);
    if integrator.is_stable(alpha, beta) {
        return Some(PdGains {
            stiffness_nm_per_rad: k,
            damping_nms_per_rad: gamma,
            clamped: false,
        });
    }
    // ω = √(k/m), ζ = (γ/m)/(2ω): no k·m product to overflow.
    let omega = libm::sqrt(k / m);
    let zeta = gamma / m / (2.0 * omega);
    let omega_moved = margin * integrator.max_normalized_frequency(zeta) / h;
    let k_moved = m * omega_moved * omega_moved;
    let gamma_moved = 2.0 * zeta * m * omega_moved;
    let positive_finite = |v: f64| v.is_finite() && v > 0.0;
    let stable = integrator.is_stable(h_over_m * h * k_moved, h_over_m * gamma_moved);
    (positive_finite(k_moved) && positive_finite(gamma_moved) && stable).then_some(PdGains {
        stiffness_nm_per_rad: k_moved,
        damping_nms_per_rad: gamma_moved,
        clamped: true,
    })
}

/// One role's PD gains.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PdGains {
    /// k, N·m/rad.
    pub stiffness_nm_per_rad: f64,
    /// γ, N·m·s/rad.
    pub damping_nms_per_rad: f64,
    /// Whether the period's stable limit lowered them ([`Gains::Analytic`] only).
    pub clamped: bool,
}

impl PdGains {
    /// k(target − angle) − γ·rate.
    fn torque(&self, target_rad: f64, angle_rad: f64, rate_rad_s: f64) -> f64 {
        self.stiffness_nm_per_rad * (target_rad - angle_rad) - self.damping_nms_per_rad * rate_rad_s
    }
}

/// The gains of every role.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoleGains {
    /// The torso's virtual PD (the stance hip's composition).
    pub torso: PdGains,
    /// The swing hip.
    pub swing_hip: PdGains,
    /// The swing knee.
    pub swing_knee: PdGains,
    /// The swing ankle.
    pub swing_ankle: PdGains,
    /// The stance knee.
    pub stance_knee: PdGains,
    /// The stance ankle.
    pub stance_ankle: PdGains,
}

impl RoleGains {
    fn of(&self, role: Role) -> PdGains {
        match role {
            Role::Torso => self.torso,
            Role::SwingHip => self.swing_hip,
            Role::SwingKnee => self.swing_knee,
            Role::SwingAnkle => self.swing_ankle,
            Role::StanceKnee => self.stance_knee,
            Role::StanceAnkle => self.stance_ankle,
        }
    }
}

/// The controller's configuration. [`Default`] is SIMBICON's basic walk with its fixed gains.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimbiconConfig {
    /// How the gains are chosen.
    pub gains: Gains,
    /// The targets of states 0 and 1 (2 and 3 mirror them): [`BASIC_WALK`].
    pub targets: [PhaseTargets; 2],
    /// The duration of the timed states 0 and 2, s (> 0): 0.3.
    pub timed_phase_s: f64,
    /// Every joint torque is limited to ± this, N·m (> 0): 1000.
    pub torque_limit_nm: f64,
    /// Bounds [low, high] of the swing hip's target after feedback, rad (finite, low ≤ high):
    /// JSimbicon's [−0.4, 1.6]; `None`: unbounded.
    pub swing_hip_target_range_rad: Option<[f64; 2]>,
    /// The stance foot of states 0 and 1 (JSimbicon: left).
    pub first_stance: Side,
}

impl Default for SimbiconConfig {
    fn default() -> Self {
        Self {
            gains: Gains::SIMBICON,
            targets: BASIC_WALK,
            timed_phase_s: 0.3,
            torque_limit_nm: 1000.0,
            swing_hip_target_range_rad: Some([-0.4, 1.6]),
            first_stance: Side::Left,
        }
    }
}

/// A field of a [`SimbiconConfig`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigField {
    /// [`Gains::Fixed`]'s stiffness.
    Stiffness,
    /// [`Gains::Fixed`]'s damping.
    Damping,
    /// [`Gains::Analytic`]'s period.
    Period,
    /// [`Gains::Analytic`]'s stability margin.
    Margin,
    /// [`Gains::Analytic`]'s design stiffness.
    DesignStiffness,
    /// [`Gains::Analytic`]'s design damping.
    DesignDamping,
    /// One of [`Gains::Analytic`]'s inertias.
    Inertia(Role),
    /// A role's stiffness in [`Gains::PerRole`] (finite and > 0).
    RoleStiffness(Role),
    /// A role's damping in [`Gains::PerRole`] (finite and ≥ 0).
    RoleDamping(Role),
    /// A value of [`SimbiconConfig::targets`] (state 0 or 1).
    Targets {
        /// The state.
        state: u8,
    },
    /// [`SimbiconConfig::timed_phase_s`].
    TimedPhase,
    /// [`SimbiconConfig::torque_limit_nm`].
    TorqueLimit,
    /// [`SimbiconConfig::swing_hip_target_range_rad`].
    SwingHipTargetRange,
}

/// An input of a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Input {
    /// [`WalkerState::time_s`].
    Time,
    /// [`WalkerState::torso_pitch_rad`].
    TorsoPitch,
    /// [`WalkerState::torso_rate_rad_s`].
    TorsoRate,
    /// [`WalkerState::joint_angle_rad`].
    JointAngle {
        /// The joint ([`LEFT_HIP`] …).
        joint: usize,
    },
    /// [`WalkerState::joint_rate_rad_s`].
    JointRate {
        /// The joint.
        joint: usize,
    },
    /// [`WalkerState::thigh_pitch_rad`].
    ThighPitch(Side),
    /// [`WalkerState::thigh_rate_rad_s`].
    ThighRate(Side),
    /// [`WalkerState::com_ahead_of_ankle_m`].
    ComAheadOfAnkle(Side),
    /// [`WalkerState::com_velocity_m_s`].
    ComVelocity,
}

/// Why the controller could not be built, or a tick gave no command.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum SimbiconError {
    /// A configuration field is not finite or outside its range.
    Config(ConfigField),
    /// A role's stable gain limit (or its desired gain) could not be formed.
    GainLimit {
        /// The role.
        role: Role,
        /// Why.
        error: GainError,
    },
    /// A tick's input is NaN or infinite. The state machine is left as it was.
    NonFinite(Input),
    /// The tick's time lies before the current state's start. The state machine is left as it
    /// was.
    TimeWentBack {
        /// When the current state began, s.
        state_start_s: f64,
        /// The tick's time, s.
        time_s: f64,
    },
    /// Finite inputs so large that a target or torque is not a number (∞ − ∞, e.g. c_d·d and
    /// c_v·v overflowing with opposite signs). The state machine is left as it was.
    OutOfRange,
}

impl fmt::Display for SimbiconError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(field) => write!(f, "simbicon config: {field:?} out of range"),
            Self::GainLimit { role, error } => {
                write!(f, "simbicon: {role:?}: no gain limit: {error}")
            }
            Self::NonFinite(input) => write!(f, "simbicon: {input:?} is not finite"),
            Self::TimeWentBack {
                state_start_s,
                time_s,
            } => write!(
                f,
                "simbicon: time {time_s} s lies before the state's start at {state_start_s} s"
            ),
            Self::OutOfRange => write!(f, "simbicon: a target or torque exceeds the f64 range"),
        }
    }
}

impl core::error::Error for SimbiconError {}

/// One tick's command.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WalkCommand {
    /// Joint torques, N·m (+ on the child, − on the parent), in the joint order; finite, within
    /// ± the limit.
    pub torques_nm: [f64; JOINTS],
    /// Which torques the limit cut (the value asked for was beyond it), in the joint order.
    pub limited: [bool; JOINTS],
    /// The state the torques were computed in, 0–3 (after this tick's transition, if any).
    pub state: u8,
    /// The stance foot.
    pub stance: Side,
    /// Whether this tick ended the previous state.
    pub transitioned: bool,
    /// The swing hip's target world pitch after feedback and bounds, rad.
    pub swing_hip_target_rad: f64,
    /// Whether the target range bounded the swing hip's target.
    pub swing_hip_target_bounded: bool,
    /// The torso's virtual torque τ_torso, N·m (never applied itself; the stance hip carries it).
    pub torso_torque_nm: f64,
}

impl WalkCommand {
    /// How many torques the limit cut this tick.
    pub fn limited_count(&self) -> usize {
        self.limited.iter().filter(|&&l| l).count()
    }
}

/// SIMBICON's basic walk: the state machine and its torques (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Simbicon {
    config: SimbiconConfig,
    gains: RoleGains,
    state: u8,
    /// When the current state began; `None` until the first tick.
    state_start_s: Option<f64>,
    limited_total: u64,
}

impl Simbicon {
    /// A controller in state 0, its timer started by the first tick.
    pub fn new(config: SimbiconConfig) -> Result<Self, SimbiconError> {
        for (state, t) in (0u8..).zip(&config.targets) {
            let values = [
                t.cd_rad_per_m,
                t.cv_rad_s_per_m,
                t.torso_pitch_rad,
                t.swing_hip_rad,
                t.swing_knee_rad,
                t.swing_ankle_rad,
                t.stance_knee_rad,
                t.stance_ankle_rad,
            ];
            if !values.iter().all(|v| v.is_finite()) {
                return Err(SimbiconError::Config(ConfigField::Targets { state }));
            }
        }
        if !(config.timed_phase_s.is_finite() && config.timed_phase_s > 0.0) {
            return Err(SimbiconError::Config(ConfigField::TimedPhase));
        }
        if !(config.torque_limit_nm.is_finite() && config.torque_limit_nm > 0.0) {
            return Err(SimbiconError::Config(ConfigField::TorqueLimit));
        }
        if let Some([low, high]) = config.swing_hip_target_range_rad
            && !(low.is_finite() && high.is_finite() && low <= high)
        {
            return Err(SimbiconError::Config(ConfigField::SwingHipTargetRange));
        }
        let gains = config.gains.resolve()?;
        Ok(Self {
            config,
            gains,
            state: 0,
            state_start_s: None,
            limited_total: 0,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &SimbiconConfig {
        &self.config
    }

    /// The gains of every role, as resolved when the controller was built.
    pub fn gains(&self) -> &RoleGains {
        &self.gains
    }

    /// The safe state's damping of each joint (joint order: left hip, knee, ankle, right hip,
    /// knee, ankle) at the control period `period_s`: kd = min([`SAFE_MAX_DAMPING_NMS_PER_RAD`],
    /// m / (2 h)) on the inertia m the joint's swing role moves in `inertias`, so that
    /// β = h·kd/m ≤ 0.5, a stable sampled damper at any rate.
    pub fn safe_damping(inertias: &RoleInertias, period_s: f64) -> [f64; JOINTS] {
        let leg = [
            inertias.swing_hip_kgm2,
            inertias.swing_knee_kgm2,
            inertias.swing_ankle_kgm2,
        ];
        core::array::from_fn(|j| {
            let m = leg.get(j % 3).copied().unwrap_or(0.0);
            (m / (2.0 * period_s)).min(SAFE_MAX_DAMPING_NMS_PER_RAD)
        })
    }

    /// The safe state's torques at the joints' rates `rates_rad_s`: −kd·q̇ with `damping`'s kd,
    /// each within ±[`SimbiconConfig::torque_limit_nm`], 0 where it is not finite.
    pub fn safe_torques(
        &self,
        damping: &[f64; JOINTS],
        rates_rad_s: &[f64; JOINTS],
    ) -> [f64; JOINTS] {
        let limit = self.config.torque_limit_nm;
        core::array::from_fn(|j| {
            let (kd, w) = (
                damping.get(j).copied().unwrap_or(0.0),
                rates_rad_s.get(j).copied().unwrap_or(0.0),
            );
            let t = -kd * w;
            if t.is_finite() {
                t.clamp(-limit, limit)
            } else {
                0.0
            }
        })
    }

    /// The current state, 0–3.
    pub fn state(&self) -> u8 {
        self.state
    }

    /// The current stance foot.
    pub fn stance(&self) -> Side {
        Self::stance_of(self.config.first_stance, self.state)
    }

    /// How many joint torques the limit has cut since the controller was built (saturating).
    pub fn limited_total(&self) -> u64 {
        self.limited_total
    }

    /// Back to state 0; the next tick restarts the timer. The limit count is kept.
    pub fn reset(&mut self) {
        self.state = 0;
        self.state_start_s = None;
    }

    fn stance_of(first: Side, state: u8) -> Side {
        if state < 2 { first } else { first.other() }
    }

    /// One control tick: advance the state machine on `walker`'s time and contacts, then the six
    /// joint torques. Never panics; on an error nothing changes (see [`SimbiconError`]).
    pub fn tick(&mut self, walker: &WalkerState) -> Result<WalkCommand, SimbiconError> {
        validate(walker)?;
        let start = self.state_start_s.unwrap_or(walker.time_s);
        if walker.time_s < start {
            return Err(SimbiconError::TimeWentBack {
                state_start_s: start,
                time_s: walker.time_s,
            });
        }
        let stance = self.stance();
        let ends = if matches!(self.state, 0 | 2) {
            walker.time_s - start >= self.config.timed_phase_s - TIMED_PHASE_SLACK_S
        } else {
            pick(walker.foot_contact, stance.other())
        };
        let (state, start) = if ends {
            (Self::next(self.state), walker.time_s)
        } else {
            (self.state, start)
        };
        let mut command = self.command(state, walker)?;
        command.transitioned = ends;
        self.state = state;
        self.state_start_s = Some(start);
        let cut = command.limited_count() as u64;
        self.limited_total = self.limited_total.saturating_add(cut);
        Ok(command)
    }

    const fn next(state: u8) -> u8 {
        match state {
            0 => 1,
            1 => 2,
            2 => 3,
            _ => 0,
        }
    }

    /// The torques of `state` for `walker`.
    fn command(&self, state: u8, walker: &WalkerState) -> Result<WalkCommand, SimbiconError> {
        let c = &self.config;
        let g = &self.gains;
        let [even, odd] = c.targets;
        let p = if matches!(state, 0 | 2) { even } else { odd };
        let stance = Self::stance_of(c.first_stance, state);
        let swing = stance.other();

        let d = pick(walker.com_ahead_of_ankle_m, stance);
        let feedback =
            p.swing_hip_rad + p.cd_rad_per_m * d + p.cv_rad_s_per_m * walker.com_velocity_m_s;
        if feedback.is_nan() {
            return Err(SimbiconError::OutOfRange);
        }
        let target = match c.swing_hip_target_range_rad {
            Some([low, high]) => feedback.max(low).min(high),
            None => feedback,
        };
        let limit = c.torque_limit_nm;
        let bound = |tau: f64| -> Result<(f64, bool), SimbiconError> {
            if tau.is_nan() {
                Err(SimbiconError::OutOfRange)
            } else if tau > limit {
                Ok((limit, true))
            } else if tau < -limit {
                Ok((-limit, true))
            } else {
                Ok((tau, false))
            }
        };

        let torso = g.torso.torque(
            p.torso_pitch_rad,
            walker.torso_pitch_rad,
            walker.torso_rate_rad_s,
        );
        if torso.is_nan() {
            return Err(SimbiconError::OutOfRange);
        }
        let swing_hip = bound(g.swing_hip.torque(
            target,
            pick(walker.thigh_pitch_rad, swing),
            pick(walker.thigh_rate_rad_s, swing),
        ))?;
        let stance_hip = bound(-torso - swing_hip.0)?;

        let [_, swk_angle, swa_angle] = leg(walker.joint_angle_rad, swing);
        let [_, swk_rate, swa_rate] = leg(walker.joint_rate_rad_s, swing);
        let [_, stk_angle, sta_angle] = leg(walker.joint_angle_rad, stance);
        let [_, stk_rate, sta_rate] = leg(walker.joint_rate_rad_s, stance);
        let swing_knee = bound(g.swing_knee.torque(p.swing_knee_rad, swk_angle, swk_rate))?;
        let swing_ankle = bound(g.swing_ankle.torque(p.swing_ankle_rad, swa_angle, swa_rate))?;
        let stance_knee = bound(g.stance_knee.torque(p.stance_knee_rad, stk_angle, stk_rate))?;
        let stance_ankle = bound(
            g.stance_ankle
                .torque(p.stance_ankle_rad, sta_angle, sta_rate),
        )?;

        let stance_leg = [stance_hip, stance_knee, stance_ankle];
        let swing_leg = [swing_hip, swing_knee, swing_ankle];
        Ok(WalkCommand {
            torques_nm: joints_of(stance, stance_leg.map(|t| t.0), swing_leg.map(|t| t.0)),
            limited: joints_of(stance, stance_leg.map(|t| t.1), swing_leg.map(|t| t.1)),
            state,
            stance,
            transitioned: false,
            swing_hip_target_rad: target,
            swing_hip_target_bounded: target != feedback,
            torso_torque_nm: torso,
        })
    }
}

/// Every float of `walker` is finite, or the first that is not.
fn validate(walker: &WalkerState) -> Result<(), SimbiconError> {
    let check = |value: f64, input: Input| {
        if value.is_finite() {
            Ok(())
        } else {
            Err(SimbiconError::NonFinite(input))
        }
    };
    check(walker.time_s, Input::Time)?;
    check(walker.torso_pitch_rad, Input::TorsoPitch)?;
    check(walker.torso_rate_rad_s, Input::TorsoRate)?;
    for (joint, (&angle, &rate)) in walker
        .joint_angle_rad
        .iter()
        .zip(&walker.joint_rate_rad_s)
        .enumerate()
    {
        check(angle, Input::JointAngle { joint })?;
        check(rate, Input::JointRate { joint })?;
    }
    for side in [Side::Left, Side::Right] {
        check(pick(walker.thigh_pitch_rad, side), Input::ThighPitch(side))?;
        check(pick(walker.thigh_rate_rad_s, side), Input::ThighRate(side))?;
        check(
            pick(walker.com_ahead_of_ankle_m, side),
            Input::ComAheadOfAnkle(side),
        )?;
    }
    check(walker.com_velocity_m_s, Input::ComVelocity)
}

impl crate::controller::Controller<WalkerState> for Simbicon {
    type Command = WalkCommand;
    type Error = SimbiconError;

    fn tick(&mut self, walker: &WalkerState) -> Result<WalkCommand, SimbiconError> {
        Simbicon::tick(self, walker)
    }

    /// Joints whose torque was cut, and the swing hip's target when it was bounded.
    fn limits(command: &WalkCommand) -> crate::controller::Limits {
        crate::controller::Limits {
            torque_limited: crate::controller::count(
                command.limited.iter().filter(|l| **l).count(),
            ),
            bounded: u32::from(command.swing_hip_target_bounded),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const H200: f64 = 1.0 / 200.0;
    const H300: f64 = 1.0 / 300.0;

    fn walker(config: SimbiconConfig) -> Simbicon {
        Simbicon::new(config).unwrap()
    }

    fn at(time_s: f64, contact: [bool; 2]) -> WalkerState {
        WalkerState {
            time_s,
            foot_contact: contact,
            ..WalkerState::default()
        }
    }

    /// A state with every input distinct, for checking which input each torque reads.
    fn busy(time_s: f64) -> WalkerState {
        WalkerState {
            time_s,
            torso_pitch_rad: 0.07,
            torso_rate_rad_s: -0.3,
            joint_angle_rad: [0.11, -0.52, 0.13, -0.21, -0.33, 0.04],
            joint_rate_rad_s: [0.9, -1.1, 0.2, -0.4, 0.6, -0.05],
            thigh_pitch_rad: [0.18, -0.14],
            thigh_rate_rad_s: [0.6, -0.7],
            com_ahead_of_ankle_m: [0.12, -0.09],
            com_velocity_m_s: 0.45,
            foot_contact: [true, false],
        }
    }

    /// `s` with the legs swapped.
    fn mirrored(s: &WalkerState) -> WalkerState {
        let swap = |a: [f64; 6]| {
            let [lh, lk, la, rh, rk, ra] = a;
            [rh, rk, ra, lh, lk, la]
        };
        let [l, r] = s.foot_contact;
        WalkerState {
            joint_angle_rad: swap(s.joint_angle_rad),
            joint_rate_rad_s: swap(s.joint_rate_rad_s),
            thigh_pitch_rad: [s.thigh_pitch_rad[1], s.thigh_pitch_rad[0]],
            thigh_rate_rad_s: [s.thigh_rate_rad_s[1], s.thigh_rate_rad_s[0]],
            com_ahead_of_ankle_m: [s.com_ahead_of_ankle_m[1], s.com_ahead_of_ankle_m[0]],
            foot_contact: [r, l],
            ..*s
        }
    }

    #[test]
    fn timed_states_end_after_their_duration_whatever_the_contacts() {
        let mut w = walker(SimbiconConfig::default());
        // The timer starts at the first tick (t = 10 s), not at 0.
        let c = w.tick(&at(10.0, [true, true])).unwrap();
        assert_eq!((c.state, c.stance, c.transitioned), (0, Side::Left, false));
        // Both feet down throughout: a timed state ignores contacts.
        for k in 1..60 {
            let t = 10.0 + f64::from(k) * H200;
            if t - 10.0 >= 0.3 {
                break;
            }
            assert_eq!(w.tick(&at(t, [true, true])).unwrap().state, 0, "t {t}");
        }
        let c = w.tick(&at(10.3, [true, true])).unwrap();
        assert_eq!((c.state, c.stance, c.transitioned), (1, Side::Left, true));
        // Ticks at t0 + k·h: the 0.3 s state ends at tick 0.3/h exactly, rounding or not.
        for (hz, ticks) in [(200.0, 60), (300.0, 90), (250.0, 75)] {
            let h = 1.0 / hz;
            let t0 = 10.4;
            let mut w = walker(SimbiconConfig::default());
            let ended = (0..200).find(|&k| {
                w.tick(&at(t0 + f64::from(k) * h, [true, true]))
                    .unwrap()
                    .state
                    == 1
            });
            assert_eq!(ended, Some(ticks), "{hz} Hz");
        }
    }

    #[test]
    fn contact_states_end_only_at_the_swing_foot_contact_and_the_legs_alternate() {
        let mut w = walker(SimbiconConfig::default());
        w.tick(&at(0.0, [true, false])).unwrap();
        assert_eq!(w.tick(&at(0.3, [true, false])).unwrap().state, 1);
        // State 1 (left stance): no swing-foot (right) contact for 10 s: no transition, and the
        // stance foot's contact does not end it.
        for k in 1..=2000 {
            let c = w
                .tick(&at(0.3 + f64::from(k) * H200, [true, false]))
                .unwrap();
            assert_eq!((c.state, c.transitioned), (1, false));
        }
        let c = w.tick(&at(10.4, [false, true])).unwrap();
        assert_eq!((c.state, c.stance, c.transitioned), (2, Side::Right, true));
        // State 2: timed again, from the transition's time.
        assert_eq!(w.tick(&at(10.69, [false, true])).unwrap().state, 2);
        let c = w.tick(&at(10.7, [true, true])).unwrap();
        assert_eq!((c.state, c.stance), (3, Side::Right));
        // State 3 (right stance) ends on the left foot's contact, not the right's.
        assert_eq!(w.tick(&at(10.8, [false, true])).unwrap().state, 3);
        let c = w.tick(&at(10.9, [true, false])).unwrap();
        assert_eq!((c.state, c.stance, c.transitioned), (0, Side::Left, true));
        // And a first stance on the right starts the mirror cycle.
        let mut r = walker(SimbiconConfig {
            first_stance: Side::Right,
            ..SimbiconConfig::default()
        });
        assert_eq!(r.tick(&at(0.0, [true, true])).unwrap().stance, Side::Right);
        assert_eq!(r.tick(&at(0.3, [true, true])).unwrap().state, 1);
        assert_eq!(r.tick(&at(0.4, [false, true])).unwrap().state, 1);
        let c = r.tick(&at(0.5, [true, false])).unwrap();
        assert_eq!((c.state, c.stance), (2, Side::Left));
    }

    #[test]
    fn mirrored_states_mirror_the_torques() {
        for (gains, range) in [
            (Gains::SIMBICON, Some([-0.4, 1.6])),
            (Gains::analytic(H300), None),
        ] {
            let config = SimbiconConfig {
                gains,
                swing_hip_target_range_rad: range,
                ..SimbiconConfig::default()
            };
            // State 0 on the left vs state 2 (right stance) on the mirrored input.
            let s = busy(0.05);
            let mut a = walker(config);
            a.tick(&at(0.0, [true, true])).unwrap();
            let c0 = a.tick(&s).unwrap();
            let mut b = walker(config);
            b.tick(&at(0.0, [true, true])).unwrap();
            b.tick(&at(0.3, [true, true])).unwrap();
            b.tick(&at(0.31, [false, true])).unwrap(); // state 2
            let c2 = b
                .tick(&mirrored(&WalkerState { time_s: 0.35, ..s }))
                .unwrap();
            assert_eq!((c0.state, c2.state), (0, 2));
            let [lh, lk, la, rh, rk, ra] = c0.torques_nm;
            assert_eq!(c2.torques_nm, [rh, rk, ra, lh, lk, la]);
            assert_eq!(c2.swing_hip_target_rad, c0.swing_hip_target_rad);
        }
    }

    #[test]
    fn balance_feedback_is_the_target_plus_cd_d_plus_cv_v() {
        let config = SimbiconConfig {
            swing_hip_target_range_rad: None,
            ..SimbiconConfig::default()
        };
        let mut w = walker(config);
        let s = busy(0.0);
        let g = *w.gains();
        // State 0, left stance: d is the left ankle's, v the COM's.
        let c = w.tick(&s).unwrap();
        let expected = 0.40 + 0.0 * 0.12 + 0.2 * 0.45;
        assert!((c.swing_hip_target_rad - expected).abs() < 1e-15);
        // The swing (right) hip tracks the right thigh's world pitch, not the hip angle.
        let tau = g.swing_hip.stiffness_nm_per_rad * (expected - (-0.14))
            - g.swing_hip.damping_nms_per_rad * (-0.7);
        assert!((c.torques_nm[RIGHT_HIP] - tau).abs() < 1e-12);
        // State 1: c_d 2.2, c_v 0.
        let c = w.tick(&WalkerState { time_s: 0.3, ..s }).unwrap();
        assert_eq!(c.state, 1);
        let expected = -0.70 + 2.2 * 0.12 + 0.0 * 0.45;
        assert!((c.swing_hip_target_rad - expected).abs() < 1e-15);
        assert!(!c.swing_hip_target_bounded);
        // A COM further ahead puts the swing foot further forward (the feedback's sign).
        let ahead = WalkerState {
            time_s: 0.31,
            com_ahead_of_ankle_m: [0.3, -0.09],
            foot_contact: [true, false],
            ..s
        };
        let c2 = w.tick(&ahead).unwrap();
        assert!(c2.swing_hip_target_rad > c.swing_hip_target_rad);
        // With JSimbicon's range, state 1's target at d = 0.12 (−0.436) is bounded to −0.4.
        let mut b = walker(SimbiconConfig::default());
        b.tick(&s).unwrap();
        let c = b.tick(&WalkerState { time_s: 0.3, ..s }).unwrap();
        assert_eq!(c.swing_hip_target_rad, -0.4);
        assert!(c.swing_hip_target_bounded);
    }

    #[test]
    fn stance_hip_carries_the_torso_torque_less_the_swing_hip() {
        for gains in [Gains::SIMBICON, Gains::analytic(H200)] {
            let mut w = walker(SimbiconConfig {
                gains,
                ..SimbiconConfig::default()
            });
            let s = busy(0.0);
            let c = w.tick(&s).unwrap();
            let g = w.gains().torso;
            let torso = g.stiffness_nm_per_rad * (0.0 - 0.07) - g.damping_nms_per_rad * (-0.3);
            assert!((c.torso_torque_nm - torso).abs() < 1e-12);
            // Left stance: the left hip carries it.
            let stance_hip = c.torques_nm[LEFT_HIP];
            assert!((stance_hip - (-torso - c.torques_nm[RIGHT_HIP])).abs() < 1e-12);
            // The hips' reaction on the torso (−τ on the parent) is then τ_torso.
            let on_torso = -c.torques_nm[LEFT_HIP] - c.torques_nm[RIGHT_HIP];
            assert!((on_torso - torso).abs() < 1e-12);
            // The other joints are PD on their joint angles, with their own role's gains.
            let g = w.gains();
            let pd = |g: PdGains, target: f64, j: usize| {
                g.stiffness_nm_per_rad * (target - s.joint_angle_rad[j])
                    - g.damping_nms_per_rad * s.joint_rate_rad_s[j]
            };
            let expected = [
                (LEFT_KNEE, pd(g.stance_knee, -0.05, LEFT_KNEE)),
                (LEFT_ANKLE, pd(g.stance_ankle, 0.20, LEFT_ANKLE)),
                (RIGHT_KNEE, pd(g.swing_knee, -1.10, RIGHT_KNEE)),
                (RIGHT_ANKLE, pd(g.swing_ankle, 0.20, RIGHT_ANKLE)),
            ];
            for (j, tau) in expected {
                assert!((c.torques_nm[j] - tau).abs() < 1e-12, "joint {j}");
            }
        }
    }

    #[test]
    fn the_torque_limit_is_flagged_and_counted() {
        let mut w = walker(SimbiconConfig::default());
        // The torso pitched 5 rad back: τ_torso = −1500, so the stance hip asks +1500 + ...
        let s = WalkerState {
            torso_pitch_rad: 5.0,
            joint_angle_rad: [0.0, 0.0, 0.0, 0.0, -9.0, 0.0],
            ..at(0.0, [true, false])
        };
        let c = w.tick(&s).unwrap();
        assert_eq!(c.torques_nm[LEFT_HIP], 1000.0);
        assert_eq!(c.torques_nm[RIGHT_KNEE], 1000.0); // 300·(−1.1 + 9) = 2370
        assert_eq!(
            c.limited,
            [true, false, false, false, true, false],
            "{:?}",
            c.torques_nm
        );
        assert_eq!(c.limited_count(), 2);
        assert_eq!(w.limited_total(), 2);
        let c = w.tick(&WalkerState { time_s: 0.01, ..s }).unwrap();
        assert_eq!(c.limited_count(), 2);
        assert_eq!(w.limited_total(), 4);
        assert!(c.torques_nm.iter().all(|t| t.abs() <= 1000.0));
        // Within the limit nothing is flagged.
        let c = w.tick(&at(0.02, [true, false])).unwrap();
        assert_eq!(c.limited_count(), 0);
        assert_eq!(w.limited_total(), 4);
    }

    #[test]
    fn bad_inputs_are_refused_and_leave_the_state_machine_alone() {
        let mut w = walker(SimbiconConfig::default());
        w.tick(&at(1.0, [true, true])).unwrap();
        let before = w;
        let mut s = busy(1.4);
        s.joint_rate_rad_s[RIGHT_KNEE] = f64::NAN;
        assert_eq!(
            w.tick(&s),
            Err(SimbiconError::NonFinite(Input::JointRate {
                joint: RIGHT_KNEE
            }))
        );
        s = busy(1.4);
        s.com_ahead_of_ankle_m = [0.0, f64::INFINITY];
        assert_eq!(
            w.tick(&s),
            Err(SimbiconError::NonFinite(Input::ComAheadOfAnkle(
                Side::Right
            )))
        );
        assert!(matches!(
            w.tick(&busy(0.5)),
            Err(SimbiconError::TimeWentBack { .. })
        ));
        // c_d·d + c_v·v = ∞ − ∞ from finite inputs.
        let mut x = walker(SimbiconConfig {
            targets: [
                PhaseTargets {
                    cd_rad_per_m: 1e300,
                    cv_rad_s_per_m: 1e300,
                    ..BASIC_WALK[0]
                },
                BASIC_WALK[1],
            ],
            ..SimbiconConfig::default()
        });
        let s = WalkerState {
            com_ahead_of_ankle_m: [1e300, 0.0],
            com_velocity_m_s: -1e300,
            ..at(0.0, [true, true])
        };
        assert_eq!(x.tick(&s), Err(SimbiconError::OutOfRange));
        assert_eq!(x.state_start_s, None);
        assert_eq!(w, before);
        // Still 0.3 s from the first tick: the errors did not touch the timer.
        assert_eq!(w.tick(&at(1.29, [true, true])).unwrap().state, 0);
        assert_eq!(w.tick(&at(1.3, [true, true])).unwrap().state, 1);
    }

    #[test]
    fn bad_configs_are_refused() {
        let d = SimbiconConfig::default();
        let analytic_200 = |margin: f64, kp: f64, kd: f64| Gains::Analytic {
            period_s: H200,
            stability_margin: margin,
            integrator: Integrator::SemiImplicitEuler,
            design_stiffness_nm_per_rad: kp,
            design_damping_nms_per_rad: kd,
            inertias: RoleInertias::SIMBICON_BIPED,
        };
        let cases = [
            (
                SimbiconConfig {
                    torque_limit_nm: 0.0,
                    ..d
                },
                SimbiconError::Config(ConfigField::TorqueLimit),
            ),
            (
                SimbiconConfig {
                    timed_phase_s: f64::NAN,
                    ..d
                },
                SimbiconError::Config(ConfigField::TimedPhase),
            ),
            (
                SimbiconConfig {
                    swing_hip_target_range_rad: Some([1.0, -1.0]),
                    ..d
                },
                SimbiconError::Config(ConfigField::SwingHipTargetRange),
            ),
            (
                SimbiconConfig {
                    gains: Gains::analytic(0.0),
                    ..d
                },
                SimbiconError::Config(ConfigField::Period),
            ),
            (
                SimbiconConfig {
                    gains: Gains::Analytic {
                        period_s: H200,
                        stability_margin: 0.5,
                        integrator: Integrator::SemiImplicitEuler,
                        design_stiffness_nm_per_rad: 300.0,
                        design_damping_nms_per_rad: 30.0,
                        inertias: RoleInertias {
                            swing_knee_kgm2: -1.0,
                            ..RoleInertias::SIMBICON_BIPED
                        },
                    },
                    ..d
                },
                SimbiconError::Config(ConfigField::Inertia(Role::SwingKnee)),
            ),
            (
                SimbiconConfig {
                    gains: analytic_200(1.0, 300.0, 30.0),
                    ..d
                },
                SimbiconError::Config(ConfigField::Margin),
            ),
            (
                SimbiconConfig {
                    gains: analytic_200(0.5, 300.0, 0.0),
                    ..d
                },
                SimbiconError::Config(ConfigField::DesignDamping),
            ),
            (
                SimbiconConfig {
                    gains: analytic_200(0.5, f64::NAN, 30.0),
                    ..d
                },
                SimbiconError::Config(ConfigField::DesignStiffness),
            ),
            (
                SimbiconConfig {
                    targets: [
                        BASIC_WALK[0],
                        PhaseTargets {
                            stance_knee_rad: f64::INFINITY,
                            ..BASIC_WALK[1]
                        },
                    ],
                    ..d
                },
                SimbiconError::Config(ConfigField::Targets { state: 1 }),
            ),
        ];
        for (config, error) in cases {
            assert_eq!(Simbicon::new(config), Err(error));
        }
    }

    fn pd(k: f64, d: f64) -> PdGains {
        PdGains {
            stiffness_nm_per_rad: k,
            damping_nms_per_rad: d,
            clamped: false,
        }
    }

    /// Six different pairs, one per role.
    fn distinct_roles() -> RoleGains {
        RoleGains {
            torso: pd(310.0, 31.0),
            swing_hip: pd(220.0, 22.0),
            swing_knee: pd(150.0, 15.0),
            swing_ankle: pd(40.0, 4.0),
            stance_knee: pd(260.0, 26.0),
            stance_ankle: pd(70.0, 7.0),
        }
    }

    #[test]
    fn per_role_gains_are_used_as_given_and_never_marked_clamped() {
        let given = distinct_roles();
        let marked = RoleGains {
            swing_ankle: PdGains {
                clamped: true,
                ..given.swing_ankle
            },
            ..given
        };
        assert_eq!(Gains::PerRole(marked).resolve(), Ok(given));
        // kd = 0 is a valid (undamped) role, as for Gains::Fixed.
        let undamped = RoleGains {
            stance_knee: pd(260.0, 0.0),
            ..given
        };
        assert_eq!(Gains::PerRole(undamped).resolve(), Ok(undamped));
        assert_eq!(
            walker(SimbiconConfig {
                gains: Gains::PerRole(given),
                ..SimbiconConfig::default()
            })
            .gains(),
            &given
        );
    }

    #[test]
    fn per_role_gains_refuse_a_bad_role_by_name() {
        let g = distinct_roles();
        let cases = [
            (
                RoleGains {
                    swing_knee: pd(f64::NAN, 15.0),
                    ..g
                },
                ConfigField::RoleStiffness(Role::SwingKnee),
            ),
            (
                RoleGains {
                    torso: pd(0.0, 31.0),
                    ..g
                },
                ConfigField::RoleStiffness(Role::Torso),
            ),
            (
                RoleGains {
                    swing_hip: pd(f64::INFINITY, 22.0),
                    ..g
                },
                ConfigField::RoleStiffness(Role::SwingHip),
            ),
            (
                RoleGains {
                    stance_ankle: pd(70.0, -1.0),
                    ..g
                },
                ConfigField::RoleDamping(Role::StanceAnkle),
            ),
            (
                RoleGains {
                    swing_ankle: pd(40.0, f64::NAN),
                    ..g
                },
                ConfigField::RoleDamping(Role::SwingAnkle),
            ),
            (
                RoleGains {
                    stance_knee: pd(-260.0, 26.0),
                    ..g
                },
                ConfigField::RoleStiffness(Role::StanceKnee),
            ),
        ];
        for (gains, field) in cases {
            let error = SimbiconError::Config(field);
            assert_eq!(Gains::PerRole(gains).resolve(), Err(error));
            let config = SimbiconConfig {
                gains: Gains::PerRole(gains),
                ..SimbiconConfig::default()
            };
            assert_eq!(Simbicon::new(config), Err(error));
        }
    }

    /// A tick under per-role gains: each torque is its own role's kp·error − kd·rate, written
    /// out with the numbers of `busy` (left stance, state 0).
    #[test]
    fn a_tick_uses_each_roles_own_gains() {
        let mut w = walker(SimbiconConfig {
            gains: Gains::PerRole(distinct_roles()),
            ..SimbiconConfig::default()
        });
        let c = w.tick(&busy(0.0)).unwrap();
        assert_eq!((c.state, c.stance), (0, Side::Left));
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        // Torso: target 0, pitch 0.07, rate −0.3.
        let torso = 310.0 * (0.0 - 0.07) - 31.0 * -0.3;
        assert!(close(c.torso_torque_nm, torso), "{}", c.torso_torque_nm);
        // Swing hip (right thigh, world frame): target 0.40 + 0.2·0.45, pitch −0.14, rate −0.7.
        let swing_hip = 220.0 * (0.40 + 0.2 * 0.45 - -0.14) - 22.0 * -0.7;
        assert!(close(c.torques_nm[RIGHT_HIP], swing_hip));
        assert!(close(c.torques_nm[LEFT_HIP], -torso - swing_hip));
        // Swing knee: target −1.10, angle −0.33, rate 0.6.
        let swing_knee = 150.0 * (-1.10 - -0.33) - 15.0 * 0.6;
        assert!(close(c.torques_nm[RIGHT_KNEE], swing_knee));
        // Swing ankle: target 0.20, angle 0.04, rate −0.05.
        assert!(close(
            c.torques_nm[RIGHT_ANKLE],
            40.0 * (0.20 - 0.04) - 4.0 * -0.05
        ));
        // Stance knee: target −0.05, angle −0.52, rate −1.1.
        assert!(close(
            c.torques_nm[LEFT_KNEE],
            260.0 * (-0.05 - -0.52) - 26.0 * -1.1
        ));
        // Stance ankle: target 0.20, angle 0.13, rate 0.2.
        assert!(close(
            c.torques_nm[LEFT_ANKLE],
            70.0 * (0.20 - 0.13) - 7.0 * 0.2
        ));
        assert_eq!(c.limited_count(), 0);
    }

    /// Whether fixed PD gains (k, γ) on inertia m sampled every h and integrated by
    /// semi-implicit Euler form a stable loop (Jury: with α = h²k/m, β = hγ/m the
    /// characteristic polynomial λ² − (2 − α − β)λ + (1 − β) needs P(−1) = 4 − α − 2β > 0,
    /// |1 − β| < 1 and P(1) = α > 0).
    fn fixed_stable(k: f64, gamma: f64, m: f64, h: f64) -> bool {
        let alpha = h * h * k / m;
        let beta = h * gamma / m;
        4.0 - alpha - 2.0 * beta > 0.0 && beta > 0.0 && beta < 2.0 && alpha > 0.0
    }

    fn roles(g: &RoleGains, m: &RoleInertias) -> [(Role, PdGains, f64); 6] {
        [
            (Role::Torso, g.torso, m.torso_kgm2),
            (Role::SwingHip, g.swing_hip, m.swing_hip_kgm2),
            (Role::SwingKnee, g.swing_knee, m.swing_knee_kgm2),
            (Role::SwingAnkle, g.swing_ankle, m.swing_ankle_kgm2),
            (Role::StanceKnee, g.stance_knee, m.stance_knee_kgm2),
            (Role::StanceAnkle, g.stance_ankle, m.stance_ankle_kgm2),
        ]
    }

    /// SIMBICON's (k, γ) = (300, 30) on inertia m at period h in natural frequency s = ωh and
    /// damping ratio ζ, and the semi-implicit Euler edge s*(ζ) = 2/(ζ + √(1 + ζ²)).
    fn ray(k: f64, gamma: f64, m: f64, h: f64) -> (f64, f64, f64) {
        let omega = (k / m).sqrt();
        let zeta = gamma / (2.0 * (k * m).sqrt());
        (omega * h, zeta, 2.0 / (zeta + (1.0 + zeta * zeta).sqrt()))
    }

    #[test]
    fn analytic_gains_are_simbicons_where_stable_and_moved_inside_with_the_margin_where_not() {
        let m = RoleInertias::SIMBICON_BIPED;
        for hz in [2000.0, 1000.0, 500.0, 300.0, 250.0, 200.0] {
            let h = 1.0 / hz;
            let g = Gains::analytic(h).resolve().unwrap();
            for (role, pd, inertia) in roles(&g, &m) {
                let (k, gamma) = (pd.stiffness_nm_per_rad, pd.damping_nms_per_rad);
                assert!(fixed_stable(k, gamma, inertia, h), "{hz} Hz {role:?}");
                if fixed_stable(300.0, 30.0, inertia, h) {
                    // Stable design: SIMBICON's pair, bit for bit.
                    assert!(!pd.clamped, "{hz} Hz {role:?}");
                    assert_eq!((k, gamma), (300.0, 30.0), "{hz} Hz {role:?}");
                } else {
                    // Moved: the design's damping ratio, at half the edge's frequency, so the
                    // same pair sits exactly on the edge at twice the period.
                    assert!(pd.clamped, "{hz} Hz {role:?}");
                    let (_, zeta_design, edge) = ray(300.0, 30.0, inertia, h);
                    let (s, zeta, _) = ray(k, gamma, inertia, h);
                    assert!((zeta - zeta_design).abs() <= 1e-12 * zeta_design);
                    assert!((s - 0.5 * edge).abs() <= 1e-12 * edge, "{hz} Hz {role:?}");
                    let (a2, b2) = (4.0 * h * h * k / inertia, 2.0 * h * gamma / inertia);
                    assert!((4.0 - a2 - 2.0 * b2).abs() < 1e-12, "{hz} Hz {role:?}");
                }
            }
            // At 2 kHz every role is SIMBICON's; at 1 kHz and below only the two ankles
            // (0.012 kg·m², edge at 1255 Hz) move.
            for (role, pd, _) in roles(&g, &m) {
                let ankle = matches!(role, Role::SwingAnkle | Role::StanceAnkle);
                assert_eq!(pd.clamped, ankle && hz < 1255.0, "{hz} Hz {role:?}");
            }
        }
        // The figures of the module docs.
        for (hz, k, gamma) in [
            (1000.0, 47.62, 11.95),
            (300.0, 4.286, 3.586),
            (200.0, 1.905, 2.390),
        ] {
            let a = Gains::analytic(1.0 / hz).resolve().unwrap().stance_ankle;
            assert!((a.stiffness_nm_per_rad - k).abs() < 0.005, "{hz} Hz {a:?}");
            assert!(
                (a.damping_nms_per_rad - gamma).abs() < 0.005,
                "{hz} Hz {a:?}"
            );
        }
    }

    /// Just inside the edge the design is kept as given; just outside it is moved to μ of it.
    #[test]
    fn the_edge_keeps_or_moves_the_design() {
        let (k, gamma, m) = (300.0, 30.0, 0.012);
        let (s, _, edge) = ray(k, gamma, m, 1.0);
        for (f, kept) in [(0.999, true), (1.001, false)] {
            let h = f * edge / s;
            let pd = stable_pair(k, gamma, m, h, Integrator::SemiImplicitEuler, 0.5).unwrap();
            assert_eq!(!pd.clamped, kept);
            if kept {
                assert_eq!(
                    (pd.stiffness_nm_per_rad, pd.damping_nms_per_rad),
                    (k, gamma)
                );
            } else {
                assert!(
                    pd.stiffness_nm_per_rad < 0.26 * k && pd.damping_nms_per_rad < 0.51 * gamma
                );
            }
        }
    }

    /// Regression (the walk on the Rapier biped, `sim-host/tests/biped_walk.rs`): the stance
    /// knee and ankle were given the planted inertias (35.99 and 97.74 kg·m²), so their
    /// analytic damping (208 and 342 N·m·s/rad) drove a stance foot that was not yet loaded,
    /// 0.012 kg·m² about the ankle, at β = hγ/m = 14 at 2 kHz: chatter at the torque limit and
    /// a fall within 0.7 s at every rate. Every stance gain must be a stable sampled loop on the
    /// unloaded leg too.
    #[test]
    fn analytic_stance_gains_are_stable_on_an_unloaded_foot() {
        let foot_about_ankle = 0.01 + 1.0 * (0.04f64 * 0.04 + 0.02 * 0.02);
        let shin_and_foot_about_knee =
            0.0696 + 4.0 * 0.225f64 * 0.225 + 0.01 + 1.0 * (0.04f64 * 0.04 + 0.47 * 0.47);
        for hz in [2000.0, 1000.0, 500.0, 300.0, 250.0, 200.0] {
            let h = 1.0 / hz;
            let g = Gains::analytic(h).resolve().unwrap();
            for (pd, m) in [
                (g.stance_ankle, foot_about_ankle),
                (g.stance_knee, shin_and_foot_about_knee),
            ] {
                assert!(fixed_stable(
                    pd.stiffness_nm_per_rad,
                    pd.damping_nms_per_rad,
                    m,
                    h
                ));
            }
        }
    }

    #[test]
    fn simbicon_biped_inertias_follow_from_the_link_table() {
        // Parallel-axis sums for the straight pose (module docs of RoleInertias::SIMBICON_BIPED).
        let thigh = |c: f64| 0.0885 + 5.0 * c * c;
        let shin = |c: f64| 0.0696 + 4.0 * c * c;
        let foot = |dy: f64| 0.01 + 1.0 * (0.04f64 * 0.04 + dy * dy);
        let torso = |c: f64| 1.475 + 70.0 * c * c;
        let swing_leg_about = |hip_height: f64| {
            // The swing leg hangs from the hip `hip_height` above the pivot.
            thigh(hip_height - 0.225) + shin(hip_height - 0.675) + foot(hip_height - 0.92)
        };
        let expected = RoleInertias {
            torso_kgm2: torso(0.24),
            swing_hip_kgm2: swing_leg_about(0.0),
            swing_knee_kgm2: shin(0.225) + foot(0.47),
            swing_ankle_kgm2: foot(0.02),
            // Unloaded, the stance leg's knee and ankle turn what the swing leg's do.
            stance_knee_kgm2: shin(0.225) + foot(0.47),
            stance_ankle_kgm2: foot(0.02),
        };
        // Planted, they would turn far more: the pose's bound is the unloaded one.
        let planted_knee = thigh(0.225) + torso(0.69) + swing_leg_about(0.45);
        let planted_ankle = shin(0.225) + thigh(0.675) + torso(1.14) + swing_leg_about(0.9);
        assert!((planted_knee - 35.989).abs() < 1e-2 && (planted_ankle - 97.74).abs() < 1e-2);
        let got = RoleInertias::SIMBICON_BIPED;
        for role in [
            Role::Torso,
            Role::SwingHip,
            Role::SwingKnee,
            Role::SwingAnkle,
            Role::StanceKnee,
            Role::StanceAnkle,
        ] {
            let (a, b) = (got.of(role), expected.of(role));
            assert!((a - b).abs() <= 1e-3 * b, "{role:?}: {a} vs {b}");
        }
    }

    #[test]
    fn signs_pull_towards_the_targets() {
        // Swing thigh behind its target: the swing hip swings it forward (positive torque).
        // Torso leaning forward (negative pitch): the torso torque is positive (back upright).
        let mut w = walker(SimbiconConfig::default());
        let s = WalkerState {
            torso_pitch_rad: -0.1,
            thigh_pitch_rad: [0.0, -0.3],
            ..at(0.0, [true, false])
        };
        let c = w.tick(&s).unwrap();
        assert!(c.torques_nm[RIGHT_HIP] > 0.0);
        assert!(c.torso_torque_nm > 0.0);
        // Straight knees are bent by negative torques towards −1.1 (swing) and −0.05 (stance).
        assert!(c.torques_nm[RIGHT_KNEE] < 0.0 && c.torques_nm[LEFT_KNEE] < 0.0);
    }

    fn any_state() -> impl Strategy<Value = WalkerState> {
        let f = || any::<f64>();
        (
            (f(), f(), f()),
            (
                proptest::array::uniform6(f()),
                proptest::array::uniform6(f()),
            ),
            (
                proptest::array::uniform2(f()),
                proptest::array::uniform2(f()),
                proptest::array::uniform2(f()),
            ),
            (f(), proptest::array::uniform2(any::<bool>())),
        )
            .prop_map(
                |((t, tp, tr), (ja, jr), (thp, thr, d), (v, contact))| WalkerState {
                    time_s: t,
                    torso_pitch_rad: tp,
                    torso_rate_rad_s: tr,
                    joint_angle_rad: ja,
                    joint_rate_rad_s: jr,
                    thigh_pitch_rad: thp,
                    thigh_rate_rad_s: thr,
                    com_ahead_of_ankle_m: d,
                    com_velocity_m_s: v,
                    foot_contact: contact,
                },
            )
    }

    /// Plausible walking inputs with occasional huge or non-finite values.
    fn near_state() -> impl Strategy<Value = WalkerState> {
        let f = || {
            prop_oneof![
                8 => -3.0f64..3.0,
                1 => (-300.0f64..300.0).prop_map(|e| 10f64.powf(e)),
                1 => (-300.0f64..300.0).prop_map(|e| -(10f64.powf(e))),
                1 => prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY)],
            ]
        };
        (
            (f(), f()),
            (
                proptest::array::uniform6(f()),
                proptest::array::uniform6(f()),
            ),
            (
                proptest::array::uniform2(f()),
                proptest::array::uniform2(f()),
                proptest::array::uniform2(f()),
            ),
            (f(), proptest::array::uniform2(any::<bool>())),
        )
            .prop_map(
                |((tp, tr), (ja, jr), (thp, thr, d), (v, contact))| WalkerState {
                    time_s: 0.0,
                    torso_pitch_rad: tp,
                    torso_rate_rad_s: tr,
                    joint_angle_rad: ja,
                    joint_rate_rad_s: jr,
                    thigh_pitch_rad: thp,
                    thigh_rate_rad_s: thr,
                    com_ahead_of_ankle_m: d,
                    com_velocity_m_s: v,
                    foot_contact: contact,
                },
            )
    }

    fn check(w: &mut Simbicon, s: &WalkerState) -> Result<(), TestCaseError> {
        let before = *w;
        let limit = w.config().torque_limit_nm;
        match w.tick(s) {
            Ok(c) => {
                for t in c.torques_nm {
                    prop_assert!(t.is_finite() && t.abs() <= limit, "{t}");
                }
                prop_assert!(!c.swing_hip_target_rad.is_nan());
                prop_assert!(!c.torso_torque_nm.is_nan());
                prop_assert!(c.state <= 3);
                prop_assert_eq!(w.state(), c.state);
            }
            Err(_) => prop_assert_eq!(*w, before),
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Any input, any sequence of two: finite torques within the limit, or an error that
        /// leaves the controller as it was.
        #[test]
        fn never_nan_never_panics(
            a in any_state(),
            b in any_state(),
            analytic in any::<bool>(),
            hz in 100.0f64..3000.0,
        ) {
            let gains = if analytic { Gains::analytic(1.0 / hz) } else { Gains::SIMBICON };
            let mut w = walker(SimbiconConfig { gains, ..SimbiconConfig::default() });
            check(&mut w, &a)?;
            check(&mut w, &b)?;
        }

        /// Near-walking inputs through a whole cycle of states.
        #[test]
        fn near_walking_inputs_through_every_state(
            states in proptest::collection::vec(near_state(), 1..12),
            analytic in any::<bool>(),
            bounded in any::<bool>(),
        ) {
            let gains = if analytic { Gains::analytic(H200) } else { Gains::SIMBICON };
            let range = bounded.then_some([-0.4, 1.6]);
            let mut w = walker(SimbiconConfig {
                gains,
                swing_hip_target_range_rad: range,
                ..SimbiconConfig::default()
            });
            for (k, s) in states.iter().enumerate() {
                let s = WalkerState { time_s: 0.2 * k as f64, ..*s };
                check(&mut w, &s)?;
            }
        }

        /// No configuration panics: it builds or is refused, and what builds has finite,
        /// non-negative gains.
        #[test]
        fn any_config_builds_or_is_refused(
            k in any::<f64>(), d in any::<f64>(), h in any::<f64>(), margin in any::<f64>(),
            m in any::<f64>(), limit in any::<f64>(), phase in any::<f64>(),
            lo in any::<f64>(), hi in any::<f64>(), analytic in any::<bool>(),
        ) {
            let gains = if analytic {
                Gains::Analytic {
                    period_s: h,
                    stability_margin: margin,
                    integrator: Integrator::SemiImplicitEuler,
                    design_stiffness_nm_per_rad: k,
                    design_damping_nms_per_rad: d,
                    inertias: RoleInertias { swing_ankle_kgm2: m, ..RoleInertias::SIMBICON_BIPED },
                }
            } else {
                Gains::Fixed { stiffness_nm_per_rad: k, damping_nms_per_rad: d }
            };
            let config = SimbiconConfig {
                gains,
                timed_phase_s: phase,
                torque_limit_nm: limit,
                swing_hip_target_range_rad: Some([lo, hi]),
                ..SimbiconConfig::default()
            };
            if let Ok(w) = Simbicon::new(config) {
                let g = w.gains();
                for pd in [g.torso, g.swing_hip, g.swing_knee, g.swing_ankle, g.stance_knee,
                           g.stance_ankle] {
                    prop_assert!(pd.stiffness_nm_per_rad.is_finite() && pd.stiffness_nm_per_rad > 0.0);
                    prop_assert!(pd.damping_nms_per_rad.is_finite() && pd.damping_nms_per_rad >= 0.0);
                }
            }
        }

        /// Per-role gains of any value: refused with the role named, or accepted as given and
        /// ticked without panic, the torques finite and within the limit.
        #[test]
        fn any_per_role_gains_are_used_as_given_or_refused(
            k in any::<f64>(), d in any::<f64>(), which in 0usize..6, s in near_state(),
        ) {
            let mut given = distinct_roles();
            let roles = [
                (Role::Torso, &mut given.torso),
                (Role::SwingHip, &mut given.swing_hip),
                (Role::SwingKnee, &mut given.swing_knee),
                (Role::SwingAnkle, &mut given.swing_ankle),
                (Role::StanceKnee, &mut given.stance_knee),
                (Role::StanceAnkle, &mut given.stance_ankle),
            ];
            let mut role = Role::Torso;
            for (i, (r, g)) in roles.into_iter().enumerate() {
                if i == which {
                    *g = pd(k, d);
                    role = r;
                }
            }
            let config = SimbiconConfig { gains: Gains::PerRole(given), ..SimbiconConfig::default() };
            match Simbicon::new(config) {
                Ok(mut w) => {
                    prop_assert!(k.is_finite() && k > 0.0 && d.is_finite() && d >= 0.0);
                    prop_assert_eq!(w.gains(), &given);
                    check(&mut w, &s)?;
                }
                Err(e) => {
                    let field = if !(k.is_finite() && k > 0.0) {
                        ConfigField::RoleStiffness(role)
                    } else {
                        ConfigField::RoleDamping(role)
                    };
                    prop_assert_eq!(e, SimbiconError::Config(field));
                }
            }
        }

        /// The rule over the whole domain: whatever the design pair, inertia, period and margin,
        /// the gains are finite, positive and a stable loop (or refused, never NaN); a stable
        /// design comes back unchanged at every period where it is stable (rate independence);
        /// a moved one keeps its damping ratio at μ of the edge, and is stable at h/μ.
        #[test]
        fn stable_designs_are_kept_at_every_rate_and_unstable_ones_moved_inside(
            k in (-3.0f64..6.0).prop_map(|e| 10f64.powf(e)),
            gamma in (-3.0f64..4.0).prop_map(|e| 10f64.powf(e)),
            m in (-4.0f64..3.0).prop_map(|e| 10f64.powf(e)),
            hz_a in 50.0f64..10_000.0, hz_b in 50.0f64..10_000.0, margin in 0.05f64..0.95,
        ) {
            let gains = |hz: f64| Gains::Analytic {
                period_s: 1.0 / hz,
                stability_margin: margin,
                integrator: Integrator::SemiImplicitEuler,
                design_stiffness_nm_per_rad: k,
                design_damping_nms_per_rad: gamma,
                inertias: RoleInertias {
                    torso_kgm2: m, swing_hip_kgm2: m, swing_knee_kgm2: m,
                    swing_ankle_kgm2: m, stance_knee_kgm2: m, stance_ankle_kgm2: m,
                },
            }.resolve();
            let (a, b) = (gains(hz_a), gains(hz_b));
            for (hz, g) in [(hz_a, a), (hz_b, b)] {
                let Ok(g) = g else { continue };
                let h = 1.0 / hz;
                let pd = g.stance_ankle;
                let (kk, gg) = (pd.stiffness_nm_per_rad, pd.damping_nms_per_rad);
                prop_assert!(kk.is_finite() && kk > 0.0 && gg.is_finite() && gg > 0.0);
                prop_assert!(fixed_stable(kk, gg, m, h));
                prop_assert_eq!(pd.clamped, !fixed_stable(k, gamma, m, h));
                if pd.clamped {
                    let (_, zeta_design, edge) = ray(k, gamma, m, h);
                    let (s, zeta, _) = ray(kk, gg, m, h);
                    prop_assert!((zeta - zeta_design).abs() <= 1e-9 * zeta_design);
                    prop_assert!((s - margin * edge).abs() <= 1e-9 * edge);
                    prop_assert!(fixed_stable(kk, gg, m, h / margin * 0.999));
                } else {
                    prop_assert_eq!((kk, gg), (k, gamma));
                }
            }
            if let (Ok(a), Ok(b)) = (a, b)
                && !a.stance_ankle.clamped
                && !b.stance_ankle.clamped
            {
                prop_assert_eq!(a, b);
            }
        }
    }
}

#[cfg(test)]
mod safe_state_tests {
    use super::*;

    #[test]
    fn the_safe_state_damps_stably_within_the_limit() {
        let m = RoleInertias::SIMBICON_BIPED;
        for period_s in [0.0005, 0.005, 0.05] {
            let kd = Simbicon::safe_damping(&m, period_s);
            for (j, inertia) in [m.swing_hip_kgm2, m.swing_knee_kgm2, m.swing_ankle_kgm2]
                .into_iter()
                .cycle()
                .take(JOINTS)
                .enumerate()
            {
                assert!(kd[j] > 0.0 && kd[j] <= SAFE_MAX_DAMPING_NMS_PER_RAD);
                assert!(
                    period_s * kd[j] / inertia <= 0.5 + 1e-12,
                    "joint {j} at {period_s} s"
                );
            }
        }
        let w = Simbicon::new(SimbiconConfig::default()).unwrap();
        let kd = [30.0; JOINTS];
        let t = w.safe_torques(&kd, &[1.0, -2.0, 1e9, f64::NAN, f64::INFINITY, 0.0]);
        let limit = w.config().torque_limit_nm;
        assert_eq!(t, [-30.0, 60.0, -limit, 0.0, 0.0, 0.0]);
    }
}
